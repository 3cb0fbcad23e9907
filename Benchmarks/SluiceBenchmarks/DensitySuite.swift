import CJack
import Foundation
import Synchronization

/// `scripts/bench density`: how many speech streams one 2-core box plays at once.
///
/// On a private server (`BenchServer`, 48 kHz, 256-frame periods), for N = 8, 16, 32, … :
///
/// - **Sluice:** one `sluice run` of a generated graph with N voices, each `espeak` → aligner →
///   resampler → crossfader → fader → channel-map (stereo) → `jack.sink` naming the same two
///   ports, so all N mix into one client's `out_1`/`out_2`. Every voice speaks the same text
///   (`--text-file`), enough for `seconds` of speech.
/// - **GStreamer:** N `gst-launch-1.0` pipelines at once, each playing the same text
///   pre-rendered by `espeak-ng -w` (so GStreamer does no synthesis at all) through
///   `wavparse ! audioconvert ! audioresample ! jackaudiosink`: N clients.
///
/// A step passes when every process ends well (JACK holds a limited number of clients, so
/// past it some pipelines cannot start) and it plays through with 0 xruns (counted by a watching client's xrun
/// callback, which JACK calls in every client) and, for Sluice, 0 underruns in any voice
/// (`--stats json`), in one of `attempts` tries (3 by default, the same for both sides). Each
/// side climbs until its first failing step; the figure is the
/// largest passing N of each. CPU per stream (the processes' CPU time ÷ N ÷ audio seconds)
/// is noted for each step.
enum DensitySuite {
    /// The steps climbed; `SLUICE_BENCH_DENSITY_STEPS` ("64,96,128") picks others for a trial.
    static var steps: [Int] {
        ProcessInfo.processInfo.environment["SLUICE_BENCH_DENSITY_STEPS"]
            .map { $0.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) } }
            ?? [8, 16, 32, 48, 64, 96, 128, 192, 256]
    }
    /// Tries at each step and side (`SLUICE_BENCH_DENSITY_ATTEMPTS`, default 3): a step passes
    /// when one of them plays clean. On a shared VM the dummy driver's timer sometimes wakes a
    /// couple of milliseconds late (jackd logs `JackTimedDriver::Process XRun = 1953 usec`),
    /// an xrun no client caused and the idle server never shows; both sides get the same tries.
    static var attempts: Int {
        ProcessInfo.processInfo.environment["SLUICE_BENCH_DENSITY_ATTEMPTS"].flatMap(Int.init).map { max(1, $0) } ?? 3
    }
    /// Seconds of speech per voice (`SLUICE_BENCH_DENSITY_SECONDS` shortens a trial).
    static var seconds: Double {
        ProcessInfo.processInfo.environment["SLUICE_BENCH_DENSITY_SECONDS"].flatMap(Double.init) ?? 60
    }

    static let sentences = [
        "The quick brown fox jumps over the lazy dog.",
        "Sluice keeps many voices on one bus at once.",
        "Each voice has its own buffer and its own fades.",
        "A busy box should never click, stutter or stall.",
    ]

    struct Step {
        var streams: Int
        var xruns: Int
        var underruns: Int
        var cpuPerStream: Double
        /// Processes that ended with an error (a pipeline JACK refused a client: the server
        /// holds a limited number of clients).
        var failedProcesses = 0
        var passed: Bool { xruns == 0 && underruns == 0 && failedProcesses == 0 }
    }

    static func run(runs _: Int) {
        let sluice = SpeechSuite.locateSluice()
        let folder = makeBenchFolder("density")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let server = BenchServer.start(logPath: "\(folder)/jackd.log")
        defer { server.stop() }
        let text = writeText(to: "\(folder)/text.txt")
        let wav = "\(folder)/speech.wav"
        ChildProcess.start(["espeak-ng", "-w", wav, "-f", text]).expectExit()
        note("density: \(format(seconds)) s of speech per voice on '\(server.name)' (\(server.realtime ? "real-time" : "no real-time") scheduling)")

        let watcher = XrunWatcher(server: server.name)
        defer { watcher.close() }
        let hostXruns = hostControl(server: server, watcher: watcher)
        note("control: jack-passthrough beside \(busyLoops) busy loops for \(format(seconds)) s: \(hostXruns) xruns (the host's own, under load)")
        let sluiceSteps = climb { streams in
            let step = sluiceStep(streams: streams, sluice: sluice, text: text, folder: folder, server: server, watcher: watcher)
            note("sluice, \(streams) voices in one client: \(step.xruns) xruns, \(step.underruns) underruns\(step.failedProcesses > 0 ? ", the run failed" : ""), CPU \(format(step.cpuPerStream * 1_000)) ms per stream-second")
            return step
        }
        let gstSteps = climb { streams in
            let step = gstStep(streams: streams, wav: wav, server: server, watcher: watcher)
            note("gst-launch-1.0, \(streams) pipelines: \(step.xruns) xruns, \(step.failedProcesses) failed to run, CPU \(format(step.cpuPerStream * 1_000)) ms per stream-second")
            return step
        }
        let sluiceBest = sluiceSteps.filter(\.passed).map(\.streams).max() ?? 0
        let gstBest = gstSteps.filter(\.passed).map(\.streams).max() ?? 0
        func cpu(_ steps: [Step], at streams: Int) -> Double {
            (steps.first { $0.streams == streams }?.cpuPerStream ?? 0) * 1_000
        }
        Figure(
            bench: "density", metric: "streams with 0 xruns and 0 underruns", sluice: Double(sluiceBest), reference: Double(gstBest),
            unit: "streams (higher is better)", referenceName: "gst-launch-1.0 … jackaudiosink pipelines (pre-rendered speech)",
            runs: 1, goal: ">= 64 and more than the reference",
            goalMet: sluiceBest >= 64 && sluiceBest > gstBest,
            extras: [
                ("seconds", seconds),
                ("attempts_per_step", Double(attempts)),
                ("sluice_cpu_ms_per_stream_second", cpu(sluiceSteps, at: sluiceBest)),
                ("reference_cpu_ms_per_stream_second", cpu(gstSteps, at: min(gstBest, sluiceBest))),
                ("sluice_first_failing", Double(sluiceSteps.last { !$0.passed }?.streams ?? 0)),
                ("reference_first_failing", Double(gstSteps.last { !$0.passed }?.streams ?? 0)),
                ("host_control_xruns", Double(hostXruns)),
            ]
        ).emit()
    }

    /// One busy loop per processor: what a step's synthesis and decoding do to the cores at
    /// their busiest.
    static var busyLoops: Int { ProcessInfo.processInfo.activeProcessorCount }

    /// The xruns the host causes by itself: `jack-passthrough` (the C reference client, a
    /// copy a period) for a step's length beside a busy loop on every core. On a VM whose busy
    /// vCPUs are now and then taken away for milliseconds, the server's timer wakes late and a
    /// cycle is missed whatever the clients do; a step failing with about this many xruns says
    /// more about the host than about either side.
    static func hostControl(server: BenchServer, watcher: XrunWatcher) -> Int {
        let passThrough = programBesideHarness("jack-passthrough", builtBy: "density")
        let loops = (0..<busyLoops).map { _ in ChildProcess.start(["sh", "-c", "while :; do :; done"]) }
        watcher.reset()
        let client = ChildProcess.start(
            [passThrough, "--server", server.name, "--client", "host-control", "--seconds", String(seconds)],
            streams: .init(outputPath: "/dev/null"))
        let exit = client.wait()
        let xruns = watcher.xruns
        for loop in loops {
            loop.signal(SIGKILL)
            _ = loop.wait()
        }
        if !exit.exited(with: 0) { fail("jack-passthrough, the host control, failed") }
        return xruns
    }

    /// One side's climb: each of `steps` tried up to `attempts` times (the first clean try, or
    /// the last), until a step fails every try.
    static func climb(_ attempt: (Int) -> Step) -> [Step] {
        var climbed: [Step] = []
        for streams in steps {
            var step = attempt(streams)
            var tries = 1
            while !step.passed && tries < attempts {
                step = attempt(streams)
                tries += 1
            }
            climbed.append(step)
            if !step.passed { break }
        }
        return climbed
    }

    // MARK: The two sides

    static func sluiceStep(
        streams: Int, sluice: String, text: String, folder: String, server: BenchServer, watcher: XrunWatcher, voice: String = espeakVoice
    ) -> Step {
        let graph = "\(folder)/voices-\(streams).yaml"
        writeGraph(voices: streams, to: graph, voice: voice)
        let stats = "\(folder)/voices-\(streams).json"
        watcher.reset()
        let child = ChildProcess.start(
            [sluice, "run", graph, "--text-file", text, "--server", server.name, "--stats", "json"],
            streams: .init(outputPath: stats))
        guard let exit = child.wait(until: stepDeadline()), exit.exited(with: 0) else {
            return Step(streams: streams, xruns: watcher.xruns, underruns: 0, cpuPerStream: 0, failedProcesses: 1)
        }
        let report = StatsFile(stats)
        let xruns = max(watcher.xruns, Int(report.number("xruns") ?? 0))
        let audio = report.number("audioSeconds") ?? seconds
        return Step(
            streams: streams, xruns: xruns, underruns: Int(report.number("underruns") ?? -1),
            cpuPerStream: exit.cpuSeconds / Double(streams) / max(audio, 1))
    }

    static func gstStep(streams: Int, wav: String, server: BenchServer, watcher: XrunWatcher) -> Step {
        watcher.reset()
        let children = (0..<streams).map { index in
            ChildProcess.start([
                "gst-launch-1.0", "-q", "filesrc", "location=\(wav)", "!", "wavparse", "!", "audioconvert", "!",
                "audioresample", "!", "jackaudiosink", "server=\(server.name)", "client-name=gst-\(index)", "connect=none",
            ])
        }
        var cpu = 0.0
        var failed = 0
        let deadline = stepDeadline()
        for child in children {
            guard let exit = child.wait(until: deadline) else {
                failed += 1
                continue
            }
            cpu += exit.cpuSeconds
            if !exit.exited(with: 0) { failed += 1 }
        }
        if failed > 0 { note("gst-launch: \(failed) of \(streams) pipelines failed or did not end in time") }
        return Step(
            streams: streams, xruns: watcher.xruns, underruns: 0, cpuPerStream: cpu / Double(streams) / seconds,
            failedProcesses: failed)
    }

    /// When a step's processes must have ended: its audio twice over plus half a minute, so a
    /// stalled pipeline or voice fails the step instead of holding the benchmark (64 of 96
    /// gst-launch pipelines once sat for 19 minutes).
    static func stepDeadline() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) * 1e-9 + 2 * seconds + 30
    }

    // MARK: Inputs

    /// Sentences, one per line (one utterance each), enough for `seconds` at espeak-ng's
    /// default rate (about 2.6 s a sentence).
    static func writeText(to path: String, seconds: Double = seconds) -> String {
        let count = Int((seconds / 2.6).rounded(.up))
        let lines = (0..<count).map { sentences[$0 % sentences.count] }
        guard FileManager.default.createFile(atPath: path, contents: Data((lines.joined(separator: "\n") + "\n").utf8)) else {
            fail("cannot write \(path)")
        }
        return path
    }

    /// The standard graph's voice.
    static let espeakVoice = "{ type: espeak, voice: en, rate: 175, buffer: 1.0 }"

    /// N voices, each the standard speech chain with `voice` as its provider node, all into
    /// the same two ports of one client.
    static func writeGraph(voices: Int, to path: String, voice: String = espeakVoice) {
        var nodes = ""
        var links = ""
        for index in 0..<voices {
            nodes += """
                  v\(index):      \(voice)
                  a\(index):      { type: aligner }
                  r\(index):      { type: resampler }
                  x\(index):      { type: crossfader, duration: 0.1 }
                  f\(index):      { type: fader, length: 256 }
                  s\(index):      { type: channel-map, channels: 2 }
                  out\(index):    { type: jack.sink, ports: [out_1, out_2], connect: none }

                """
            links += "  - v\(index) -> a\(index) -> r\(index) -> x\(index) -> f\(index) -> s\(index) -> out\(index)\n"
        }
        let text = "name: density\nnodes:\n\(nodes)links:\n\(links)playback: { strategy: auto, max-buffered: 3.0, client: density }\n"
        guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8)) else { fail("cannot write \(path)") }
    }

    private static func format(_ value: Double) -> String { String(format: "%.1f", value) }
}

/// A client that only counts the server's xruns: JACK calls every client's xrun callback.
final class XrunWatcher {
    private let client: OpaquePointer
    private let count: Counter

    final class Counter: @unchecked Sendable {
        // SAFETY (@unchecked Sendable): one atomic.
        let value = Atomic<Int>(0)
    }

    init(server: String) {
        var status = jack_status_t(rawValue: 0)
        guard let client = sluice_jack_client_open("bench-xruns", JackNoStartServer, &status, server) else {
            fail("the xrun watcher cannot open a client on '\(server)' (status 0x\(String(status.rawValue, radix: 16)))")
        }
        self.client = client
        count = Counter()
        jack_set_xrun_callback(
            client,
            { argument in
                // SAFETY: `argument` is the unretained Counter, alive until jack_client_close.
                Unmanaged<Counter>.fromOpaque(argument!).takeUnretainedValue().value.add(1, ordering: .relaxed)
                return 0
            }, Unmanaged.passUnretained(count).toOpaque())
        guard jack_activate(client) == 0 else { fail("the xrun watcher cannot activate") }
    }

    var xruns: Int { count.value.load(ordering: .relaxed) }

    func reset() { count.value.store(0, ordering: .relaxed) }

    func close() { jack_client_close(client) }
}
