import Glibc
import SluiceConfig
import SluiceGraph
import SluiceJACK
import SluiceLADSPA
@testable import SluiceLV2
import SluiceNodes
import Synchronization

// RealtimeSanitizerProbe SERVER GRAPH-INPUT [--boundary sink|source] | SERVER --live-chain|--direct-chains|--hosted-chains SECONDS
//   | --lv2-worker STATE-FILE | --self-test
//
// Runs a graph on JACK server SERVER with RealtimeSanitizer's real-time context entered
// around every process callback — the whole cycle: capture, the nodes placed in it, the
// sinks' playheads. Any allocation, lock or blocking call inside makes RTSan print a report
// and exit non-zero.
// - GRAPH-INPUT: the speech chain played from a raw S16 file; `--boundary source` puts the
//   aligner, resampler, crossfader, fader and channel map inside the callback too.
// - `--live-chain SECONDS`: jack.source -> fader -> jack.sink for that long, fed by a tone
//   graph of its own client.
// - `--direct-chains SECONDS`: the cycle's direct section (nodes on the period's buffers, no
//   ring): a mono chain fed by the tone, and a stereo one, in one client.
// - `--hosted-chains SECONDS`: jack.source -> lv2 (eg-amp) -> ladspa (amp_mono) -> jack.sink,
//   the hosted plugins in the cycle.
// - `--lv2-worker STATE-FILE`: x42's convolver restored from STATE-FILE (its impulse response
//   loaded by its worker), then 200 blocks of its render — the worker's response handed over
//   in the first — in real-time context, without a server (the convolver reports a latency,
//   so a live graph runs it off the cycle).
// `--self-test` makes one allocation in real-time context, to show the sanitizer is watching
// (it must fail). Linked with clang's RTSan runtime (see Package.swift); run by
// RealtimeSanitizerTests, which also checks the hooks were entered once per callback.

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
if arguments.first == "--lv2-worker", arguments.count == 2 {
    do {
        let type = try LV2NodeType.type(of: LV2World.shared.plugin(uri: "http://gareus.org/oss/lv2/zeroconvolv#Mono"))
        guard let node = try type.make(NodeParameters(["state": .string(arguments.last!)])) as? LV2Node else { exit(1) }
        try node.prepare(PrepareContext(
            inputFormats: [.frames(rate: 48_000, channels: 1)], outputFormats: [.frames(rate: 48_000, channels: 1)],
            maximumUnits: 4096, blockFrames: 256))
        let input = UnsafeMutablePointer<Float>.allocate(capacity: 256)
        input.initialize(repeating: 0, count: 256)
        input[0] = 1
        let output = UnsafeMutablePointer<Float>.allocate(capacity: 256)
        var peak: Float = 0
        for block in 0..<200 {
            enterRealtime()
            _ = node.render(input, output, frames: 256)
            exitRealtime()
            if block == 0 { input[0] = 0 }
            for index in 0..<256 { peak = max(peak, abs(output[index])) }
        }
        node.deactivate()
        print("rendered 200 blocks under RealtimeSanitizer, latency \(node.latencyFrames), peak \(peak)")
        exit(peak > 0 ? 0 : 3)
    } catch {
        printError("error: \(error)")
        exit(1)
    }
}
/// Hook entries, counted so the test can tell the hooks ran once per callback.
let hookEntries = Atomic<Int>(0)
func enterCounted() {
    hookEntries.add(1, ordering: .relaxed)
    enterRealtime()
}

guard arguments.count == 2 || arguments.count == 3 || arguments.count == 4 else {
    printError("usage: RealtimeSanitizerProbe SERVER INPUT.s16 [--boundary sink|source] | SERVER --live-chain|--direct-chains|--hosted-chains SECONDS | --lv2-worker STATE | --self-test")
    exit(2)
}
let server = arguments[arguments.startIndex]
let input = arguments[arguments.startIndex + 1]
/// The direct section (`--direct-chains`): a mono chain whose nodes read and write the ports'
/// buffers, and a stereo one interleaved through the section's own buffers, in one client.
let directChains = """
    name: direct
    nodes:
      mic:     { type: jack.source, channels: 1, connect: none }
      gain:    { type: fader, length: 0, gain: 0.5 }
      out:     { type: jack.sink, channels: 1, connect: none }
      pair:    { type: jack.source, channels: 2, connect: none }
      swap:    { type: channel-map, channels: 2, routing: [1, 0] }
      pairOut: { type: jack.sink, channels: 2, connect: none }
    links: [mic -> gain -> out, pair -> swap -> pairOut]
    playback: { strategy: stream, client: rtsan-direct }
    """
JackRealtimeHooks.installed = JackRealtimeHooks(enter: { enterCounted() }, exit: { exitRealtime() })
do {
    var registry = BuiltinNodes.registry()
    try registry.register(JackSink.type(defaultServer: server))
    try registry.register(JackSource.type(defaultServer: server))
    let report: RunReport
    let graph: CompiledGraph
    var devices: [JackDevice] = []
    try registry.register(LV2NodeType.type())
    try registry.register(LADSPANodeType.type())
    if input == "--live-chain" || input == "--direct-chains" || input == "--hosted-chains" {
        let seconds = Double(arguments[arguments.startIndex + 2]) ?? 2
        let feedPort: String
        if input == "--live-chain" {
            var chain = try OneLineGraph.parse("jack.source channels=1 connect=none ! fader length=64 gain=0.5 ! jack.sink connect=none")
            chain.playback = PlaybackSettings(strategy: .stream, client: "rtsan-chain")
            graph = try GraphCompiler(registry: registry, options: .init(isLive: true)).compile(chain)
            feedPort = "rtsan-chain:in_1"
        } else if input == "--hosted-chains" {
            var chain = try OneLineGraph.parse(
                "jack.source channels=1 connect=none ! lv2 uri=http://lv2plug.in/plugins/eg-amp gain=-6"
                    + " ! ladspa library=amp.so label=amp_mono gain=0.5 ! jack.sink connect=none")
            chain.playback = PlaybackSettings(strategy: .stream, client: "rtsan-hosted")
            graph = try GraphCompiler(registry: registry, options: .init(isLive: true)).compile(chain)
            feedPort = "rtsan-hosted:in_1"
        } else {
            graph = try GraphCompiler(registry: registry, options: .init(isLive: true)).compile(GraphFile.parse(directChains, file: "direct.yaml"))
            feedPort = "rtsan-direct:mic.in_1"
        }
        var feed = try OneLineGraph.parse("tone frequency=440 duration=\(seconds) ! jack.sink connect=\(feedPort)")
        feed.playback = PlaybackSettings(strategy: .stream, client: "rtsan-feed")
        let feedGraph = try GraphCompiler(registry: registry, options: .init(isLive: true)).compile(feed)
        let chainRun = try LiveRun(graph: graph)
        try chainRun.start()
        // The feeder's own callbacks run under the hooks too (one process, one hook table).
        _ = try LiveRun(graph: feedGraph).run()
        chainRun.cancel()
        report = try chainRun.wait()
        devices = feedGraph.devices.compactMap { $0 as? JackDevice }
    } else {
        let boundary = arguments.count == 4 ? arguments[arguments.startIndex + 3] : "sink"
        var description = try OneLineGraph.parse(
            "bytes.source path=\(input) rate=24000 ! aligner ! resampler quality=sinc-medium ! crossfader ! fader"
                + " ! channel-map channels=2 ! jack.sink client=rtsan-probe connect=none")
        description.playback.boundary = CycleBoundary(rawValue: boundary) ?? .sink
        graph = try GraphCompiler(registry: registry, options: .init(isLive: true)).compile(description)
        let run = try LiveRun(graph: graph)
        try run.start()
        // Live changes while it plays: the fader's gain and the map's balance, which the sink's
        // playhead applies in the callback when the boundary is the sink (`PlayheadGains`).
        for step in 0..<40 where !run.playheads.allSatisfy(\.isFinished) {
            _ = try? run.parameters.set(node: "fader", parameter: "gain", value: .number(step % 2 == 0 ? 0.5 : 1), atFrame: nil, timeout: 0)
            _ = try? run.parameters.set(node: "channel-map", parameter: "pan", value: .number(step % 3 == 0 ? -0.5 : 0.25), timeout: 0)
            usleep(25_000)
        }
        report = try run.wait()
    }
    devices += graph.devices.compactMap { $0 as? JackDevice }
    let callbacks = devices.map(\.callbackCount).reduce(0, +)
    let inCycle = graph.placement.filter { $0 == .cycle }.count
    print("played \(report.audioSeconds) s in \(callbacks) callbacks under RealtimeSanitizer, \(inCycle) nodes in the cycle, hooks entered \(hookEntries.load(ordering: .relaxed)) times")
    exit(callbacks > 100 ? 0 : 3)
} catch {
    printError("error: \(error)")
    exit(1)
}
