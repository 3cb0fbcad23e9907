import Glibc
import SluiceConfig
import SluiceGraph
import SluiceJACK
import SluiceNodes

// RealtimeSanitizerProbe SERVER GRAPH-INPUT | --self-test
//
// Plays the speech chain into jack.sink on JACK server SERVER with RealtimeSanitizer's
// real-time context entered around every process callback: any allocation, lock or blocking
// call inside the callback makes RTSan print a report and exit non-zero. `--self-test` makes
// one allocation in real-time context, to show the sanitizer is watching (it must fail).
// Linked with clang's RTSan runtime (see Package.swift); run by JackSinkTests.

@_silgen_name("__rtsan_ensure_initialized") func rtsanEnsureInitialized()
@_silgen_name("__rtsan_realtime_enter") func rtsanRealtimeEnter()
@_silgen_name("__rtsan_realtime_exit") func rtsanRealtimeExit()

/// RTSan's options: no symbolization. The symbolizer is a child process that can outlive a
/// failing probe while holding its output pipes, and the reports name the intercepted call
/// without it.
@_cdecl("__rtsan_default_options")
func rtsanDefaultOptions() -> UnsafePointer<CChar> {
    // SAFETY: a static string lives for the whole process.
    UnsafeRawPointer(("symbolize=0" as StaticString).utf8Start).assumingMemoryBound(to: CChar.self)
}

func printError(_ text: String) {
    let line = text + "\n"
    _ = line.withCString { write(STDERR_FILENO, $0, strlen($0)) }
}

/// C-convention wrappers the sink's engine calls.
func enterRealtime() { rtsanRealtimeEnter() }
func exitRealtime() { rtsanRealtimeExit() }

rtsanEnsureInitialized()
let arguments = CommandLine.arguments.dropFirst()
if arguments.first == "--self-test" {
    enterRealtime()
    let planted = malloc(64)
    exitRealtime()
    free(planted)
    exit(0)
}
guard arguments.count == 2 else {
    printError("usage: RealtimeSanitizerProbe SERVER INPUT.s16 | --self-test")
    exit(2)
}
let server = arguments[arguments.startIndex]
let input = arguments[arguments.startIndex + 1]
JackRealtimeHooks.installed = JackRealtimeHooks(enter: { enterRealtime() }, exit: { exitRealtime() })
do {
    var registry = BuiltinNodes.registry()
    try registry.register(JackSink.type(defaultServer: server))
    let description = try OneLineGraph.parse(
        "bytes.source path=\(input) rate=24000 ! aligner ! resampler quality=sinc-medium ! crossfader ! fader"
            + " ! channel-map channels=2 ! jack.sink client=rtsan-probe connect=none")
    let graph = try GraphCompiler(registry: registry, options: .init(isLive: true)).compile(description)
    let report = try LiveRun(graph: graph).run()
    let callbacks = report.counters["jack.sink.callbacks"] ?? 0
    print("played \(report.audioSeconds) s in \(callbacks) callbacks under RealtimeSanitizer")
    exit(callbacks > 100 ? 0 : 3)
} catch {
    printError("error: \(error)")
    exit(1)
}
