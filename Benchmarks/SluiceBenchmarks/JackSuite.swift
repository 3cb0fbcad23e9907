import CJack
import Foundation
import Synchronization

/// `scripts/bench jack`: jack.sink on a real JACK server, against C and GStreamer clients on
/// the same server in the same run.
///
/// One private server serves the whole suite: `jackd -R -n sluice-bench-<pid> -d dummy -r 48000
/// -p 256 -C 0 -P 0` (real-time scheduling when the machine allows it, as JACK users run it;
/// `--no-realtime` otherwise). It has no system ports, so the one "physical" playback pair is
/// this process's ear (see `launchToFirstAudio`).
///
/// - callback durations: 60 s of a plain copy (`tone ! jack.sink`) and of the full speech chain
///   (bytes → aligner → resampler → crossfader → fader → jack.sink), measured by jack.sink
///   itself (`--stats json`), while `jack-copy-client` (Benchmarks/JackCopyClient, C) copies
///   from a jack_ringbuffer into its port and times its callback the same way. All run at
///   once, so the machine's load hits them alike; `--runs` times, medians. Goal: p99 ≤ 1.5×
///   the C client.
/// - instructions: the live chain's callback and `jack-passthrough`'s under callgrind, per
///   period (`JackInstructions.swift`): counts the machine's noise does not move, beside the
///   p99 it does. No goal of its own.
/// - pipeline latency: `pipelineLatency` from `--stats json` — the source's first bytes (written
///   to its stdin once the client runs) to the callback that renders the first sample, with
///   watermark 0. Goal: ≤ one period + 1 ms.
/// - launch to first audio: spawn to the first non-zero sample reaching the ear, for
///   `sluice launch 'tone frequency=440 duration=2 ! fader ! jack.sink'` and for
///   `jack_simple_client`, interleaved, each run at its own phase of the server's period.
///   Goal: ≤ 1.2× jack_simple_client + 5 ms.
/// - CPU: user + system seconds of playing an 8 s, 24 kHz speech file in real time, `sluice run`
///   against `gst-launch-1.0 … ! audioresample ! jackaudiosink`, both at once. Goal: ≤ 0.8×.
enum JackSuite {
    static let sampleRate = 48_000
    static let periodFrames = 256
    static var periodMilliseconds: Double { Double(periodFrames) * 1_000 / Double(sampleRate) }
    /// Seconds of the callback-duration run; SLUICE_BENCH_JACK_SECONDS shortens it for a trial.
    static let callbackSeconds: Double = {
        let variable = ProcessInfo.processInfo.environment["SLUICE_BENCH_JACK_SECONDS"]
        return variable.flatMap(Double.init) ?? 60
    }()
    static let speechFileSeconds = 8.0

    static func run(runs: Int) {
        let tools = Tools.locate()
        let folder = makeBenchFolder("jack")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let server = BenchServer.start(logPath: "\(folder)/jackd.log")
        defer { server.stop() }
        note("server '\(server.name)': \(server.realtime ? "real-time scheduling" : "no real-time scheduling (jackd -R was refused)"), \(sampleRate) Hz, \(periodFrames)-frame periods")

        let parts = Self.parts
        if parts.contains("callback") { callbackDurations(tools: tools, server: server, folder: folder, runs: runs) }
        if parts.contains("live-chain") { liveChain(tools: tools, server: server, folder: folder, runs: runs) }
        if parts.contains("instructions") { callbackInstructions(tools: tools, server: server, folder: folder) }
        if parts.contains("latency") { pipelineLatency(tools: tools, server: server, folder: folder, runs: runs) }
        if parts.contains("launch") { launchToFirstAudio(tools: tools, server: server, runs: runs) }
        if parts.contains("cpu") { playbackCPU(tools: tools, server: server, folder: folder, runs: runs) }
    }

    /// The parts run: all, or those SLUICE_BENCH_JACK_PARTS names ("launch,cpu") for a trial.
    static let parts: Set<String> = {
        let all: Set<String> = ["callback", "live-chain", "instructions", "latency", "launch", "cpu"]
        guard let variable = ProcessInfo.processInfo.environment["SLUICE_BENCH_JACK_PARTS"], !variable.isEmpty else { return all }
        let chosen = Set(variable.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) })
        if let unknown = chosen.subtracting(all).first { fail("SLUICE_BENCH_JACK_PARTS: unknown part '\(unknown)' (parts: \(all.sorted().joined(separator: ", ")))") }
        return chosen
    }()

    // MARK: Callback durations

    /// JACK runs unconnected clients in the order they activated, and the one that runs first
    /// in a cycle pays for it: two copies of the same C client, 0.3 s apart, gave the first a
    /// p99 1.19–1.30× the second's (docs/benchmarks.md, "Who runs first"). So the sides start
    /// `startGap` apart, Sluice first in odd runs and the C client first in even ones, and a
    /// part that compares them runs an even number of times (`evenRuns`), each order as often.
    static let startGap: useconds_t = 300_000

    /// Whether Sluice's side starts first in run `run` (counted from 1): in odd runs.
    static func sluiceStartsFirst(run: Int) -> Bool { run % 2 == 1 }

    /// Starts both sides `startGap` apart, the first as `sluiceStartsFirst` says.
    static func startInTurn<Sluice, Reference>(
        run: Int, sluice: () -> Sluice, reference: () -> Reference
    ) -> (sluice: Sluice, reference: Reference) {
        if sluiceStartsFirst(run: run) {
            let started = sluice()
            usleep(startGap)
            return (started, reference())
        }
        let started = reference()
        usleep(startGap)
        return (sluice(), started)
    }

    /// `runs`, or one more to make it even.
    static func evenRuns(_ runs: Int) -> Int { runs + runs % 2 }

    /// The median of `ratios` (one a run, in run order) over the runs where Sluice started
    /// first and where the other side did, as figure extras.
    static func ratiosByOrder(_ ratios: [Double]) -> [(key: String, value: Double)] {
        let sluiceFirst = ratios.enumerated().filter { sluiceStartsFirst(run: $0.offset + 1) }.map(\.element)
        let referenceFirst = ratios.enumerated().filter { !sluiceStartsFirst(run: $0.offset + 1) }.map(\.element)
        return [
            ("median_run_ratio", median(ratios)), ("median_ratio_sluice_first", median(sluiceFirst)),
            ("median_ratio_reference_first", median(referenceFirst)),
        ]
    }

    static func callbackDurations(tools: Tools, server: BenchServer, folder: String, runs: Int) {
        let runs = evenRuns(runs)
        let seconds = callbackSeconds
        let speech = writeSpeech(seconds: seconds + 1, to: "\(folder)/speech-long.s16")
        let speechGraph = writeGraph(
            "\(folder)/speech-chain.yaml", input: speech, client: "bench-speech", strategy: "buffered")
        // The same chain with its processors inside the JACK callback (playback.boundary).
        let cycleGraph = writeGraph(
            "\(folder)/speech-cycle.yaml", input: speech, client: "bench-speech-cycle", strategy: "buffered", boundary: "source")
        let durationText = String(format: "%.3f", seconds)
        note("callback durations: \(runs) × \(Int(seconds)) s of a plain copy, the speech chain (boundary: sink and source) and the C client, the two sides \(Double(startGap) / 1e6) s apart")
        let metrics = [
            ("callback-plain-copy", "plain"), ("callback-speech-chain", "chain"), ("callback-speech-chain-in-cycle", "cycle"),
        ]
        var measured: [String: [CallbackStats]] = [:]
        var references: [CallbackStats] = []
        for run in 1...runs {
            func startSluice() -> [ChildProcess] {
                [
                    tools.sluice(
                        ["launch", "tone frequency=440 amplitude=0.25 duration=\(durationText) ! jack.sink client=bench-copy connect=none",
                         "--server", server.name, "--stats", "json"],
                        output: "\(folder)/plain-\(run).json"),
                    tools.sluice(["run", speechGraph, "--server", server.name, "--stats", "json"], output: "\(folder)/chain-\(run).json"),
                    tools.sluice(["run", cycleGraph, "--server", server.name, "--stats", "json"], output: "\(folder)/cycle-\(run).json"),
                ]
            }
            func startReference() -> ChildProcess {
                ChildProcess.start(
                    [tools.copyClient, "--server", server.name, "--client", "bench-c-copy", "--seconds", durationText],
                    streams: .init(outputPath: "\(folder)/c-\(run).json"))
            }
            let (clients, reference) = startInTurn(run: run, sluice: startSluice, reference: startReference)
            clients[0].expectExit()
            reference.expectExit()
            // The speech files hold a little more than `seconds`; the rest is not needed.
            for chain in clients.dropFirst() {
                chain.signal(SIGINT)
                _ = chain.wait()
            }
            references.append(CallbackStats(jsonFile: "\(folder)/c-\(run).json"))
            for (_, file) in metrics { measured[file, default: []].append(CallbackStats(jsonFile: "\(folder)/\(file)-\(run).json")) }
        }

        let c = CallbackStats.medians(references)
        for (metric, file) in metrics {
            let runsOfSluice = measured[file] ?? []
            let sluice = CallbackStats.medians(runsOfSluice)
            let ratios = zip(runsOfSluice, references).map { $0.p99 / $1.p99 }
            note("\(metric) p99 against C, run by run: \(formattedList(ratios))")
            Figure(
                bench: "jack", metric: "\(metric) p99", sluice: sluice.p99, reference: c.p99, unit: "µs (lower is better)",
                referenceName: "jack-copy-client (C, jack_ringbuffer)", runs: runs, goal: "<= 1.5",
                goalMet: sluice.p99 <= 1.5 * c.p99,
                extras: [
                    ("sluice_p50", sluice.p50), ("reference_p50", c.p50),
                    ("sluice_p99_9", sluice.p999), ("reference_p99_9", c.p999),
                    ("sluice_max", sluice.max), ("reference_max", c.max),
                    ("sluice_callbacks", sluice.count), ("reference_callbacks", c.count),
                    ("sluice_xruns", sluice.xruns), ("reference_xruns", c.xruns),
                ] + ratiosByOrder(ratios)
            ).emit()
        }
    }

    // MARK: Live chain

    /// `jack.source -> fader (length: 0) -> jack.sink` against `jack-passthrough`, a C client
    /// copying its inputs to its outputs: the frames each adds (timed by jack-impulse-probe's
    /// two clients), then the callback's duration and the process's CPU over the same seconds,
    /// both running at once.
    static func liveChain(tools: Tools, server: BenchServer, folder: String, runs: Int) {
        let graph = writeLiveChain("\(folder)/live-chain.yaml", client: "bench-chain")
        var sluiceAdded: [Double] = []
        var referenceAdded: [Double] = []
        for run in 1...runs {
            let chain = tools.sluice(["run", graph, "--server", server.name], output: nil)
            let pass = ChildProcess.start(
                [tools.passThrough, "--server", server.name, "--client", "bench-pass", "--seconds", "4"],
                streams: .init(outputPath: "\(folder)/pass-latency-\(run).json"))
            usleep(500_000)
            sluiceAdded.append(probeDelay(tools: tools, server: server, to: "bench-chain:in_1", from: "bench-chain:out_1", prefix: "bench-chain-probe"))
            referenceAdded.append(probeDelay(tools: tools, server: server, to: "bench-pass:in_1", from: "bench-pass:out_1", prefix: "bench-pass-probe"))
            chain.signal(SIGINT)
            _ = chain.wait()
            pass.expectExit()
        }
        note("live chain: frames added, sluice \(formattedList(sluiceAdded)), C pass-through \(formattedList(referenceAdded))")
        Figure(
            bench: "jack", metric: "live-chain-latency", sluice: median(sluiceAdded), reference: median(referenceAdded),
            unit: "frames added (lower is better)", referenceName: "jack-passthrough (C, copies in the callback)", runs: runs,
            goal: "sluice == reference (0 added)", goalMet: median(sluiceAdded) == median(referenceAdded)
        ).emit()

        // Callback cost and CPU: both clients at once, neither connected (the bench server has
        // no system ports), each copying a period of its inputs to its outputs.
        let seconds = min(callbackSeconds, 20)
        let secondsText = String(format: "%.3f", seconds)
        var sluiceP99: [Double] = [], referenceP99: [Double] = [], sluiceCPU: [Double] = [], referenceCPU: [Double] = []
        let runs = evenRuns(runs)
        for run in 1...runs {
            let output = "\(folder)/chain-\(run).json"
            func startChain() -> ChildProcess { tools.sluice(["run", graph, "--server", server.name, "--stats", "json"], output: output) }
            func startPass() -> ChildProcess {
                ChildProcess.start(
                    [tools.passThrough, "--server", server.name, "--client", "bench-pass", "--seconds", secondsText],
                    streams: .init(outputPath: "\(folder)/pass-\(run).json"))
            }
            let (chain, pass) = startInTurn(run: run, sluice: startChain, reference: startPass)
            usleep(UInt32(seconds * 1_000_000))
            chain.signal(SIGINT)
            sluiceCPU.append(chain.wait().cpuSeconds)
            referenceCPU.append(pass.expectExit().cpuSeconds)
            sluiceP99.append(CallbackStats(jsonFile: output).p99)
            referenceP99.append(CallbackStats(jsonFile: "\(folder)/pass-\(run).json").p99)
        }
        note("live chain callback p99 (µs): sluice \(formattedList(sluiceP99)), C \(formattedList(referenceP99)); CPU seconds for \(Int(seconds)) s: sluice \(formattedList(sluiceCPU)), C \(formattedList(referenceCPU))")
        Figure(
            bench: "jack", metric: "live-chain-callback p99", sluice: median(sluiceP99), reference: median(referenceP99),
            unit: "µs (lower is better)", referenceName: "jack-passthrough (C)", runs: runs, goal: "<= 1.5",
            goalMet: median(sluiceP99) <= 1.5 * median(referenceP99),
            extras: ratiosByOrder(zip(sluiceP99, referenceP99).map { $0 / $1 })
        ).emit()
        Figure(
            bench: "jack", metric: "live-chain-cpu", sluice: median(sluiceCPU), reference: median(referenceCPU),
            unit: "CPU seconds (lower is better)", referenceName: "jack-passthrough (C)", runs: runs, goal: "<= 1.5"
        ).emit()
    }

    /// The median delay jack-impulse-probe measures between two ports, in frames.
    static func probeDelay(tools: Tools, server: BenchServer, to sendTo: String, from receiveFrom: String, prefix: String) -> Double {
        let path = "\(makeBenchFolder("probe"))/probe.json"
        let probe = ChildProcess.start(
            [tools.impulseProbe, "--server", server.name, "--prefix", prefix, "--send-to", sendTo, "--receive-from", receiveFrom,
             "--seconds", "1.5"],
            streams: .init(outputPath: path))
        probe.expectExit()
        guard let delay = StatsFile(path).number("medianDelay") else { fail("\(path): the probe heard no impulse") }
        return delay
    }

    // MARK: Pipeline latency

    static func pipelineLatency(tools: Tools, server: BenchServer, folder: String, runs: Int) {
        let graphs = [
            ("sink", writeGraph("\(folder)/latency.yaml", input: "-", client: "bench-latency", strategy: "stream")),
            ("source", writeGraph("\(folder)/latency-cycle.yaml", input: "-", client: "bench-latency-cycle", strategy: "stream", boundary: "source")),
        ]
        guard let utterance = FileManager.default.contents(atPath: speechFixturePath) else {
            fail("cannot read \(speechFixturePath) (run from the repository root)")
        }
        var latencies: [String: [Double]] = [:]
        for run in 1...runs {
            for (boundary, graph) in graphs {
                // Close-on-exec, so the child holds only its stdin end and sees end-of-file.
                var ends: [Int32] = [0, 0]
                guard pipe(&ends) == 0 else { fail("pipe: \(String(cString: strerror(errno)))") }
                for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
                let output = "\(folder)/latency-\(boundary)-\(run).json"
                let child = tools.sluice(["run", graph, "--server", server.name, "--stats", "json"], output: output, input: ends[0])
                close(ends[0])
                // The client is up long before this; the first bytes arrive into a running graph.
                usleep(400_000)
                utterance.withUnsafeBytes { bytes in
                    var offset = 0
                    while offset < bytes.count {
                        let written = write(ends[1], bytes.baseAddress! + offset, bytes.count - offset)
                        if written <= 0 { fail("writing to sluice's stdin: \(String(cString: strerror(errno)))") }
                        offset += written
                    }
                }
                close(ends[1])
                child.expectExit()
                guard let latency = StatsFile(output).number("pipelineLatency") else { fail("\(output) has no pipelineLatency") }
                latencies[boundary, default: []].append(latency * 1_000)
            }
        }
        for (boundary, _) in graphs {
            let values = latencies[boundary]!
            note("pipeline latency runs, boundary: \(boundary) (ms): \(values.map { String(format: "%.3f", $0) }.joined(separator: ", "))")
            Figure(
                bench: "jack", metric: boundary == "sink" ? "pipeline-latency" : "pipeline-latency-boundary-source",
                sluice: median(values), reference: periodMilliseconds,
                unit: "ms (lower is better)", referenceName: "one JACK period (256 frames at 48 kHz)", runs: runs,
                goal: String(format: "sluice <= %.3f ms (a period + 1 ms)", periodMilliseconds + 1),
                extras: [("sluice_max", values.max()!), ("sluice_min", values.min()!)]
            ).emit()
        }
    }

    // MARK: Launch to first audio

    static func launchToFirstAudio(tools: Tools, server: BenchServer, runs: Int) {
        let ear = Ear(server: server.name)
        defer { ear.close() }
        var sluiceTimes: [Double] = []
        var referenceTimes: [Double] = []
        for run in 0..<runs {
            // Every step of a start that waits for the server (open, activate, connect) ends on
            // a cycle, so the time depends on where in the period the launch falls. Spawned
            // right after the last one ended, launches fall at one phase, and the figure moves
            // by whole periods from one invocation to the next. Each run spawns both programs
            // at its own phase, spread evenly over the period, as users' launches are.
            let phase = (Double(run) + 0.5) / Double(runs)
            sluiceTimes.append(
                ear.timeToFirstAudio(
                    command: [tools.sluicePath, "launch", "tone frequency=440 duration=2 ! fader ! jack.sink", "--server", server.name],
                    stop: SIGINT, environment: [:], phase: phase) * 1_000)
            referenceTimes.append(
                ear.timeToFirstAudio(
                    command: ["jack_simple_client"], stop: SIGTERM, environment: ["JACK_DEFAULT_SERVER": server.name],
                    phase: phase) * 1_000)
        }
        note("launch to first audio (ms): sluice \(formattedList(sluiceTimes)), jack_simple_client \(formattedList(referenceTimes))")
        Figure(
            bench: "jack", metric: "launch-to-first-audio", sluice: median(sluiceTimes), reference: median(referenceTimes),
            unit: "ms (lower is better)", referenceName: "jack_simple_client", runs: runs, goal: "<= 1.2 x reference + 5 ms",
            goalMet: median(sluiceTimes) <= 1.2 * median(referenceTimes) + 5
        ).emit()
    }

    // MARK: CPU

    static func playbackCPU(tools: Tools, server: BenchServer, folder: String, runs: Int) {
        let speech = writeSpeech(seconds: speechFileSeconds, to: "\(folder)/speech-8s.s16")
        let graph = writeGraph("\(folder)/cpu.yaml", input: speech, client: "bench-cpu", strategy: "buffered")
        let gstreamer = [
            "gst-launch-1.0", "-q", "filesrc", "location=\(speech)", "!",
            "rawaudioparse", "use-sink-caps=false", "format=pcm", "pcm-format=s16le", "sample-rate=24000", "num-channels=1", "!",
            "audioconvert", "!", "audioresample", "!",
            "jackaudiosink", "server=\(server.name)", "client-name=bench-gst", "connect=none",
        ]
        var sluiceCPU: [Double] = []
        var referenceCPU: [Double] = []
        // The client running first in a cycle spends more (`startGap`): each side first as often.
        for run in 1...evenRuns(runs) {
            let (sluice, reference) = startInTurn(
                run: run, sluice: { tools.sluice(["run", graph, "--server", server.name], output: nil) },
                reference: { ChildProcess.start(gstreamer) })
            sluiceCPU.append(sluice.expectExit().cpuSeconds)
            referenceCPU.append(reference.expectExit().cpuSeconds)
        }
        note("CPU seconds for \(Int(speechFileSeconds)) s of speech: sluice \(formattedList(sluiceCPU)), gst-launch-1.0 \(formattedList(referenceCPU))")
        Figure(
            bench: "jack", metric: "playback-cpu", sluice: median(sluiceCPU), reference: median(referenceCPU),
            unit: "CPU seconds (lower is better)", referenceName: "gst-launch-1.0 … audioresample ! jackaudiosink",
            runs: sluiceCPU.count, goal: "<= 0.8", goalMet: median(sluiceCPU) <= 0.8 * median(referenceCPU),
            extras: ratiosByOrder(zip(sluiceCPU, referenceCPU).map { $0 / $1 })
        ).emit()
    }

    // MARK: Inputs

    /// The fixture utterance repeated to `seconds` of 24 kHz S16LE audio, written to `path`.
    static func writeSpeech(seconds: Double, to path: String) -> String {
        guard FileManager.default.createFile(atPath: path, contents: speechFixture(frames: Int(seconds * 24_000))) else {
            fail("cannot write \(path)")
        }
        return path
    }

    /// The speech chain as `scripts/speak` plays it, mono, from `input` (a path or `-`).
    /// The live chain, `jack.source -> fader (length: 0) -> jack.sink`, unconnected, as client
    /// `client`.
    static func writeLiveChain(_ path: String, client: String) -> String {
        let text = """
            name: live-chain
            nodes:
              in:   { type: jack.source, channels: 1, connect: none }
              gain: { type: fader, length: 0 }
              out:  { type: jack.sink, channels: 1, connect: none }
            links: [in -> gain -> out]
            playback: { strategy: stream, client: \(client) }

            """
        guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8)) else { fail("cannot write \(path)") }
        return path
    }

    static func writeGraph(_ path: String, input: String, client: String, strategy: String, boundary: String = "sink") -> String {
        let watermark = strategy == "stream" ? "0" : "0.5"
        let text = """
            nodes:
              voice:    { type: bytes.source, path: "\(input)", format: s16le, rate: 24000, channels: 1 }
              align:    { type: aligner }
              resample: { type: resampler }
              xfade:    { type: crossfader }
              fade:     { type: fader }
              out:      { type: jack.sink, client: \(client), connect: none }
            links:
              - voice -> align -> resample -> xfade -> fade -> out
            playback: { strategy: \(strategy), watermark: \(watermark), boundary: \(boundary) }

            """
        guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8)) else { fail("cannot write \(path)") }
        return path
    }

    static func formattedList(_ values: [Double]) -> String {
        "[" + values.map { String(format: "%.3f", $0) }.joined(separator: ", ") + "]"
    }
}

// MARK: - Tools

/// The programs the suite runs: `sluice` and `jack-copy-client` built beside this binary
/// (scripts/bench builds them in release mode), the others from PATH.
struct Tools {
    let sluicePath: String
    let copyClient: String
    let passThrough: String
    let impulseProbe: String

    static func locate() -> Tools {
        let folder = harnessFolder
        let tools = Tools(
            sluicePath: "\(folder)/sluice", copyClient: "\(folder)/jack-copy-client",
            passThrough: "\(folder)/jack-passthrough", impulseProbe: "\(folder)/jack-impulse-probe")
        for path in [tools.sluicePath, tools.copyClient, tools.passThrough, tools.impulseProbe]
        where !FileManager.default.isExecutableFile(atPath: path) {
            fail("\(path) is missing: build it with `swift build -c release` (scripts/bench jack does)")
        }
        return tools
    }

    /// Starts sluice with `arguments`, its stdout (the `--stats json` line) into `output`.
    func sluice(_ arguments: [String], output: String?, input: Int32? = nil) -> ChildProcess {
        ChildProcess.start([sluicePath] + arguments, streams: .init(input: input, outputPath: output))
    }
}

// MARK: - The server

/// The suite's private jackd.
final class BenchServer {
    let name: String
    let realtime: Bool
    private let process: ChildProcess

    private init(name: String, realtime: Bool, process: ChildProcess) {
        self.name = name
        self.realtime = realtime
        self.process = process
    }

    /// Starts jackd with real-time scheduling, or without when that is refused, and waits
    /// (up to 10 s) until a client can open on it.
    static func start(logPath: String) -> BenchServer {
        let name = "sluice-bench-\(getpid())"
        for realtime in [true, false] {
            let arguments = [
                "jackd", realtime ? "-R" : "--no-realtime", "-n", name,
                "-d", "dummy", "-r", "\(JackSuite.sampleRate)", "-p", "\(JackSuite.periodFrames)", "-C", "0", "-P", "0",
            ]
            let process = ChildProcess.start(arguments, streams: .init(outputPath: logPath, errorPath: logPath))
            let deadline = monotonicSeconds() + 10
            while monotonicSeconds() < deadline {
                if process.poll() != nil { break }  // refused; try without real-time scheduling
                if probe(name) {
                    process.endsLast()
                    return BenchServer(name: name, realtime: realtime, process: process)
                }
                usleep(20_000)
            }
            process.signal(SIGKILL)
            _ = process.wait()
        }
        let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        fail("jackd did not start; its log:\n\(log)")
    }

    private static func probe(_ name: String) -> Bool {
        var status = jack_status_t(rawValue: 0)
        guard let client = sluice_jack_client_open("bench-probe", JackNoStartServer, &status, name) else { return false }
        jack_client_close(client)
        return true
    }

    func stop() {
        process.signal(SIGTERM)
        _ = process.wait()
    }
}

// MARK: - The ear

/// A JACK client whose two input ports are flagged physical: on a server without system ports
/// they are the playback ports every client's auto-connect finds (jack_simple_client's and
/// jack.sink's alike). Its callback notes when the first non-zero sample arrives.
/// A client of the harness whose two input ports are flagged physical, so a client that
/// auto-connects to the playback ports (`jack.sink`'s `connect: auto`) plays into it.
func openEar(named name: String, server: String) -> (client: OpaquePointer, left: OpaquePointer, right: OpaquePointer) {
    var status = jack_status_t(rawValue: 0)
    guard let client = sluice_jack_client_open(name, JackNoStartServer, &status, server) else {
        fail("the ear cannot open a client on '\(server)' (status 0x\(String(status.rawValue, radix: 16)))")
    }
    let flags = UInt(JackPortIsInput.rawValue | JackPortIsPhysical.rawValue | JackPortIsTerminal.rawValue)
    guard let left = jack_port_register(client, "playback_1", JACK_DEFAULT_AUDIO_TYPE, flags, 0),
        let right = jack_port_register(client, "playback_2", JACK_DEFAULT_AUDIO_TYPE, flags, 0)
    else { fail("the ear cannot register its ports") }
    return (client, left, right)
}

final class Ear {
    private let client: OpaquePointer
    private let state: EarState

    /// What the callback reads and writes, shared with the control thread.
    final class EarState: @unchecked Sendable {
        // SAFETY (@unchecked Sendable): the ports are set before activation and only read
        // after; the rest is atomic.
        let left: OpaquePointer
        let right: OpaquePointer
        /// Monotonic nanoseconds of the first sound since listening began; 0 while silent.
        let heardAt = Atomic<UInt64>(0)
        let listening = Atomic<Bool>(false)

        init(left: OpaquePointer, right: OpaquePointer) {
            self.left = left
            self.right = right
        }
    }

    init(server: String) {
        let (client, left, right) = openEar(named: "bench-ear", server: server)
        self.client = client
        state = EarState(left: left, right: right)
        jack_set_process_callback(
            client,
            { frames, argument in
                // SAFETY: `argument` is the unretained EarState, which the Ear keeps alive
                // until jack_client_close has stopped this callback.
                Unmanaged<EarState>.fromOpaque(argument!)._withUnsafeGuaranteedRef { state in
                    guard state.listening.load(ordering: .acquiring), state.heardAt.load(ordering: .relaxed) == 0 else {
                        return
                    }
                    func hasSound(_ port: OpaquePointer) -> Bool {
                        // SAFETY: JACK hands `frames` samples for a registered audio port.
                        let buffer = jack_port_get_buffer(port, frames)!.assumingMemoryBound(to: Float.self)
                        for index in 0..<Int(frames) where buffer[index] != 0 { return true }
                        return false
                    }
                    if hasSound(state.left) || hasSound(state.right) {
                        state.heardAt.store(monotonicNanoseconds(), ordering: .releasing)
                    }
                }
                return 0
            }, Unmanaged.passUnretained(state).toOpaque())
        guard jack_activate(client) == 0 else { fail("the ear cannot activate") }
    }

    /// Seconds from spawning `command` to its first sound at the ear; then stops it with
    /// `stop` and waits for it to end. With `phase` (0..<1), it is spawned that fraction of a
    /// period after a cycle began.
    func timeToFirstAudio(command: [String], stop: Int32, environment: [String: String], phase: Double? = nil) -> Double {
        listen()
        defer { stopListening() }
        if let phase { wait(untilPhase: phase) }
        let launched = monotonicNanoseconds()
        let child = ChildProcess.start(command, environment: environment)
        let deadline = monotonicSeconds() + 10
        var heard: UInt64 = 0
        while heard == 0 {
            heard = heardAt ?? 0
            if heard == 0 {
                if child.poll() != nil { fail("\(child.command) ended before the ear heard it") }
                if monotonicSeconds() > deadline { fail("the ear heard nothing from \(child.command) within 10 s") }
                usleep(500)
            }
        }
        child.signal(stop)
        _ = child.wait()
        return Double(heard - launched) * 1e-9
    }

    /// Forgets any earlier sound and notes the first one from now on.
    func listen() {
        state.heardAt.store(0, ordering: .relaxed)
        state.listening.store(true, ordering: .releasing)
    }

    func stopListening() {
        state.listening.store(false, ordering: .releasing)
    }

    /// Monotonic nanoseconds of the first sound since `listen()`; nil while silent.
    var heardAt: UInt64? {
        let heard = state.heardAt.load(ordering: .acquiring)
        return heard == 0 ? nil : heard
    }

    /// Whether some client's output is connected to the ear (a client that auto-connects has
    /// activated).
    var isConnected: Bool {
        jack_port_connected(state.left) > 0 || jack_port_connected(state.right) > 0
    }

    /// Frames since the current JACK cycle began: where now falls in the period.
    var framesSinceCycleStart: Int {
        Int(jack_frames_since_cycle_start(client))
    }

    /// Sleeps until `phase` (0..<1) of the server's period has passed since a cycle began.
    func wait(untilPhase phase: Double) {
        let period = Double(jack_get_buffer_size(client))
        var frames = phase * period - Double(framesSinceCycleStart)
        if frames < 0 { frames += period }
        usleep(UInt32(frames * 1e6 / Double(jack_get_sample_rate(client))))
    }

    func close() {
        jack_client_close(client)
    }
}

// MARK: - Reading `--stats json`

/// A `--stats json` line (or the C client's), read back.
struct StatsFile {
    let object: [String: Any]

    init(_ path: String) {
        guard let data = FileManager.default.contents(atPath: path),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { fail("\(path) holds no JSON object") }
        self.object = object
    }

    func number(_ key: String) -> Double? { (object[key] as? NSNumber)?.doubleValue }
}

struct CallbackStats {
    var p50: Double, p99: Double, p999: Double, max: Double, count: Double, xruns: Double

    init(jsonFile path: String) {
        let stats = StatsFile(path)
        guard let durations = stats.object["callbackMicroseconds"] as? [String: Any] else {
            fail("\(path) has no callbackMicroseconds")
        }
        func value(_ key: String) -> Double {
            guard let number = (durations[key] as? NSNumber)?.doubleValue else { fail("\(path): no callbackMicroseconds.\(key)") }
            return number
        }
        p50 = value("p50")
        p99 = value("p99")
        p999 = value("p99.9")
        max = value("max")
        count = value("count")
        xruns = stats.number("xruns") ?? 0
    }

    init(p50: Double, p99: Double, p999: Double, max: Double, count: Double, xruns: Double) {
        (self.p50, self.p99, self.p999, self.max, self.count, self.xruns) = (p50, p99, p999, max, count, xruns)
    }

    /// Each figure's median over `runs`.
    static func medians(_ runs: [CallbackStats]) -> CallbackStats {
        CallbackStats(
            p50: median(runs.map(\.p50)), p99: median(runs.map(\.p99)), p999: median(runs.map(\.p999)),
            max: median(runs.map(\.max)), count: median(runs.map(\.count)), xruns: median(runs.map(\.xruns)))
    }
}
