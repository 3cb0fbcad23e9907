import CJack
import Foundation
import Synchronization

/// `scripts/bench control`: `sluice serve` on a private jackd (`BenchServer`, as the jack
/// suite's: dummy backend, 48 kHz, 256-frame periods, `-R` when allowed), driven the way a
/// control client drives it. Two figures:
///
/// - **Control latency** (`set-latency osc`, `set-latency json-socket`): `sluice serve` of the
///   live chain `jack.source (1 channel) -> fader (length 0, ramp 0) -> jack.sink`, both ends
///   `connect: none`. Two JACK clients of this process (real-time safe callbacks: atomics, no
///   allocation, no locks): `bench-control-feed` writes a constant 1.0 into serve's
///   `in_1`, `bench-control-record` reads serve's `out_1` (two clients, not one, so JACK
///   orders them feed → serve → record within one cycle instead of breaking a loop). The
///   harness sets the fader's `gain` to 0.5 and 1.0 alternately, `messages` times over OSC
///   (a hand-built `/sluice/node/gain/gain f` datagram from a UDP socket on loopback) and
///   `messages` times as `set` lines on one persistent connection to the JSON-lines socket,
///   two OSC then two JSON and so on, 50–100 ms apart (uniform jitter, fixed seed), stamping
///   `jack_get_time()` just before each send. The recorder's callback finds the first frame
///   whose level is the new gain and stamps it `jack_frames_to_time(jack_last_frame_time +
///   offset)`. Latency = heard − sent. Reference: one period + 1 ms; goal: the median within
///   it (the JSON line says whether the max is too).
/// - **Control latency before a buffer** (`set-latency osc, before a 3 s buffer`, and the
///   socket's): the same sends to `tone (square, amplitude 1) -> fader -> jack.sink` with
///   `max-buffered: 3`, the tone seconds ahead of what is heard, no feed; the probe takes a
///   level by its magnitude. Same reference and goal.
/// - **Reply after reply** (`reply-first-audio`): `sluice serve graphs/speak.yaml` (the espeak
///   graph, `connect: auto`) plays into `bench-control-ear`, whose two input ports are flagged
///   physical, so every auto-connecting sink finds them. `replies` times, interleaved: serve
///   gets `speak TEXT` on its socket (once the previous reply has played out: 0.5 s of
///   silence at the ear and `status` `bufferedSeconds` 0), then a fresh `sluice speak TEXT
///   --no-cache` process speaks the same text (and exits). Time to first audio: the send (or
///   the spawn) to the first non-zero frame at the ear, both in JACK time. The figure: the
///   later replies' median against the fresh processes'; the first reply of each serve rides
///   along. Goal: later replies faster.
enum ControlSuite {
    static var periodMilliseconds: Double { JackSuite.periodMilliseconds }
    static var goalMilliseconds: Double { periodMilliseconds + 1 }
    /// `set` messages per channel per run; SLUICE_BENCH_CONTROL_MESSAGES changes it for a trial.
    static let messages: Int = {
        ProcessInfo.processInfo.environment["SLUICE_BENCH_CONTROL_MESSAGES"].flatMap { Int($0) }.map { max($0, 2) } ?? 200
    }()
    /// Replies per run (the first and the later ones); SLUICE_BENCH_CONTROL_REPLIES.
    static let replies: Int = {
        ProcessInfo.processInfo.environment["SLUICE_BENCH_CONTROL_REPLIES"].flatMap { Int($0) }.map { max($0, 2) } ?? 10
    }()
    static let replyText = "Rivers are older than the roads that follow them."
    /// Seconds of silence at the ear that mean a reply has played out.
    static let silenceSeconds = 0.5

    static func run(runs: Int) {
        signal(SIGPIPE, SIG_IGN)
        let sluice = SpeechSuite.locateSluice()
        let folder = makeBenchFolder("control")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let server = BenchServer.start(logPath: "\(folder)/jackd.log")
        defer { server.stop() }
        note("server '\(server.name)': \(server.realtime ? "real-time scheduling" : "no real-time scheduling (jackd -R was refused)"), \(JackSuite.sampleRate) Hz, \(JackSuite.periodFrames)-frame periods")

        // SLUICE_BENCH_CONTROL_PARTS=latency (or replies) runs one part alone.
        let parts = ProcessInfo.processInfo.environment["SLUICE_BENCH_CONTROL_PARTS"] ?? "latency,buffered,replies"
        if parts.contains("latency") { setLatency(sluice: sluice, server: server, folder: folder, runs: runs) }
        if parts.contains("buffered") { bufferedSetLatency(sluice: sluice, server: server, folder: folder, runs: runs) }
        if parts.contains("replies") { replyAfterReply(sluice: sluice, server: server, folder: folder, runs: runs) }
    }

    // MARK: Control latency

    static func setLatency(sluice: String, server: BenchServer, folder: String, runs: Int) {
        let graph = "\(folder)/control-live.yaml"
        let text = """
            name: control-live
            nodes:
              in:   { type: jack.source, channels: 1, connect: none }
              gain: { type: fader, length: 0, ramp: 0 }
              out:  { type: jack.sink, channels: 1, connect: none }
            links: [in -> gain -> out]
            playback: { strategy: stream, client: bench-control }

            """
        guard FileManager.default.createFile(atPath: graph, contents: Data(text.utf8)) else { fail("cannot write \(graph)") }
        note("control latency: \(messages) OSC and \(messages) JSON-socket `set`s of gain 0.5 / 1.0 per run, 50-100 ms apart")

        let probe = LevelProbe(server: server.name)
        defer { probe.close() }
        var latencies: [Channel: [Double]] = [:]
        var replies: [Channel: [Double]] = [:]
        /// The same, with a client connected that watches and never reads (`StuckClient`).
        var stuckLatencies: [Channel: [Double]] = [:]
        var offsets: [Double] = []
        var oddSamples = 0
        var xruns = 0.0
        var generator = SplitMix64(seed: 0x5100_1CE0)
        // Each run twice, interleaved: without and with a client that never reads.
        for (run, stuck) in (1...runs).flatMap({ run in [(run, false), (run, true)] }) {
            let served = Served.start(sluice: sluice, graph: graph, server: server, folder: folder, name: "live-\(run)\(stuck ? "-stuck" : "")")
            let stuckClient = stuck ? StuckClient(path: served.socketPath) : nil
            defer { stuckClient?.close() }
            probe.connect(feedTo: "bench-control:in_1", recordFrom: "bench-control:out_1")
            SpeechSuite.waitUntil(seconds: 5, "the chain's level to reach 1.0 (the fader's first gain)") {
                if let exit = served.process.poll() { fail("sluice serve ended (wait status \(exit.status)); its log:\n\(served.log)") }
                return probe.level == 1.0
            }
            let connection = ControlConnection(path: served.socketPath)
            let osc = OSCSender(port: served.oscPort)
            defer { osc.close() }
            probe.startChecking()
            let sends = sendGains(probe: probe, osc: osc, connection: connection, generator: &generator, heardWithin: 2)
            let runLatencies = sends.latencies
            for (channel, times) in sends.replies { replies[channel, default: []] += times }
            offsets += sends.offsets
            oddSamples += probe.stopChecking()
            let status = connection.request(#"{"command":"status"}"#)
            xruns = max(xruns, (status["xruns"] as? NSNumber)?.doubleValue ?? 0)
            served.quit(connection)
            for channel in Channel.allCases {
                let values = runLatencies[channel] ?? []
                note(String(
                    format: "run %d, %@%@: median %.3f ms, max %.3f ms, min %.3f ms", run, channel.name,
                    stuck ? " (a client not reading)" : "", median(values), values.max()!, values.min()!))
                if stuck { stuckLatencies[channel, default: []] += values } else { latencies[channel, default: []] += values }
            }
            if let stuckClient { note("run \(run): the client that never reads had sent \(stuckClient.sent) requests") }
        }
        for channel in Channel.allCases {
            let without = median(latencies[channel]!)
            let with = stuckLatencies[channel]!
            Figure(
                bench: "control", metric: "set-latency \(channel.name), a client not reading", sluice: median(with), reference: without,
                unit: "ms, send to heard (lower is better)",
                referenceName: "the same run's sets with no such client", runs: runs,
                goal: "sluice <= 1.2 x the reference (no slower than without it, within noise)",
                goalMet: median(with) <= 1.2 * without,
                extras: [("sluice_max", with.max()!), ("reference_max", latencies[channel]!.max()!), ("messages", Double(with.count))]
            ).emit()
        }
        if oddSamples > 0 { note("\(oddSamples) samples were neither 0.5 nor 1.0 (a ramp, or a glitch)") }
        note("frame of the period at which the new gain was first heard: median \(median(offsets)), max \(Int(offsets.max()!))")
        for channel in Channel.allCases {
            let values = latencies[channel]!
            let replyTimes = replies[channel]!
            let sorted = values.sorted()
            func percentile(_ p: Double) -> Double { sorted[min(sorted.count - 1, Int((p * Double(sorted.count)).rounded(.up)) - 1)] }
            Figure(
                bench: "control", metric: "set-latency \(channel.name)", sluice: median(values), reference: goalMilliseconds,
                unit: "ms, send to heard (lower is better)",
                referenceName: "one JACK period + 1 ms (256 frames at 48 kHz)", runs: runs,
                goal: String(format: "sluice <= %.3f ms (a period + 1 ms)", goalMilliseconds),
                goalMet: median(values) <= goalMilliseconds,
                extras: [
                    ("sluice_max", values.max()!), ("sluice_p99", percentile(0.99)), ("sluice_p90", percentile(0.90)),
                    ("sluice_min", values.min()!), ("messages", Double(values.count)),
                    ("over_goal", Double(values.filter { $0 > goalMilliseconds }.count)),
                    ("reply_median", median(replyTimes)), ("reply_max", replyTimes.max()!),
                    ("period", periodMilliseconds), ("odd_samples", Double(oddSamples)), ("xruns", xruns),
                ],
                flags: [("max_goal_met", values.max()! <= goalMilliseconds)]
            ).emit()
        }
    }

    /// The same sends to a fader before a sink's 3 s buffer: `tone (square, amplitude 1) ->
    /// fader (length 0, ramp 0) -> jack.sink` with `max-buffered: 3`, no feed. The tone runs
    /// seconds ahead of what is heard; the fader's gain is applied at the sink's playhead
    /// (docs/control.md, "When is a change heard?"), so the goal is the same period + 1 ms.
    static func bufferedSetLatency(sluice: String, server: BenchServer, folder: String, runs: Int) {
        let graph = writeBufferedTone(folder: folder, name: "control-buffered", client: "bench-control")
        note("control latency before a 3 s buffer: \(messages) OSC and \(messages) JSON-socket `set`s of gain 0.5 / 1.0 per run, 50-100 ms apart")
        let probe = LevelProbe(server: server.name)
        defer { probe.close() }
        var latencies: [Channel: [Double]] = [:]
        var buffered: [Double] = []
        var oddSamples = 0
        var xruns = 0.0
        var generator = SplitMix64(seed: 0x5100_1CE1)
        for run in 1...runs {
            let served = Served.start(sluice: sluice, graph: graph, server: server, folder: folder, name: "buffered-\(run)")
            probe.connect(feedTo: nil, recordFrom: "bench-control:out_1")
            let connection = ControlConnection(path: served.socketPath)
            SpeechSuite.waitUntil(seconds: 10, "the sink to hold 2 s of the tone") {
                if let exit = served.process.poll() { fail("sluice serve ended (wait status \(exit.status)); its log:\n\(served.log)") }
                return ((connection.request(#"{"command":"status"}"#)["bufferedSeconds"] as? NSNumber)?.doubleValue ?? 0) > 2
            }
            let osc = OSCSender(port: served.oscPort)
            defer { osc.close() }
            probe.startChecking()
            let runLatencies = sendGains(probe: probe, osc: osc, connection: connection, generator: &generator, heardWithin: 5).latencies
            oddSamples += probe.stopChecking()
            let status = connection.request(#"{"command":"status"}"#)
            xruns = max(xruns, (status["xruns"] as? NSNumber)?.doubleValue ?? 0)
            buffered.append((status["bufferedSeconds"] as? NSNumber)?.doubleValue ?? 0)
            served.quit(connection)
            for channel in Channel.allCases {
                let values = runLatencies[channel] ?? []
                note(String(format: "run %d, %@, before the buffer: median %.3f ms, max %.3f ms", run, channel.name, median(values), values.max()!))
                latencies[channel, default: []] += values
            }
        }
        if oddSamples > 0 { note("\(oddSamples) samples were neither ±0.5 nor ±1.0 (a ramp, or a glitch)") }
        for channel in Channel.allCases {
            let values = latencies[channel]!
            Figure(
                bench: "control", metric: "set-latency \(channel.name), before a 3 s buffer", sluice: median(values),
                reference: goalMilliseconds, unit: "ms, send to heard (lower is better)",
                referenceName: "one JACK period + 1 ms (256 frames at 48 kHz)", runs: runs,
                goal: String(format: "sluice <= %.3f ms (a period + 1 ms)", goalMilliseconds),
                goalMet: median(values) <= goalMilliseconds,
                extras: [
                    ("sluice_max", values.max()!), ("messages", Double(values.count)),
                    ("over_goal", Double(values.filter { $0 > goalMilliseconds }.count)),
                    ("buffered_seconds_median", median(buffered)), ("odd_samples", Double(oddSamples)), ("xruns", xruns),
                ],
                flags: [("max_goal_met", values.max()! <= goalMilliseconds)]
            ).emit()
        }
    }

    /// Writes `FOLDER/NAME.yaml`: `tone (square, amplitude 1) -> fader (gain, length 0, ramp
    /// 0) -> jack.sink` with a 3 s buffer, on a JACK client named `client`; returns its path.
    static func writeBufferedTone(folder: String, name: String, client: String) -> String {
        let graph = "\(folder)/\(name).yaml"
        let text = """
            name: \(name)
            nodes:
              tone: { type: tone, waveform: square, frequency: 100, amplitude: 1, duration: 3600 }
              gain: { type: fader, length: 0, ramp: 0 }
              out:  { type: jack.sink, channels: 1, connect: none }
            links: [tone -> gain -> out]
            playback: { client: \(client), max-buffered: 3 }

            """
        guard FileManager.default.createFile(atPath: graph, contents: Data(text.utf8)) else { fail("cannot write \(graph)") }
        return graph
    }

    /// The fader's `gain` set to 0.5 and 1.0 in turn, `messages` times over OSC and as many
    /// over the socket (two of each in turn), 50–100 ms apart: each send's latency to heard
    /// and to its reply (ms), and the frame of the period where it was heard.
    static func sendGains(
        probe: LevelProbe, osc: OSCSender, connection: ControlConnection, generator: inout SplitMix64, heardWithin seconds: Double
    ) -> (latencies: [Channel: [Double]], replies: [Channel: [Double]], offsets: [Double]) {
        var latencies: [Channel: [Double]] = [:]
        var replies: [Channel: [Double]] = [:]
        var offsets: [Double] = []
        for index in 0..<(2 * messages) {
            let gain: Float = index % 2 == 0 ? 0.5 : 1.0
            let channel: Channel = (index / 2) % 2 == 0 ? .osc : .json
            probe.arm(target: gain)
            let sent = jack_get_time()
            switch channel {
            case .osc:
                osc.send(OSCSender.message(address: "/sluice/node/gain/gain", float: gain))
                let reply = osc.receive(timeout: 2)
                guard reply.address == "/sluice/reply", reply.strings.first == "set" else {
                    fail("OSC set of gain \(gain) answered \(reply.address) \(reply.strings)")
                }
            case .json:
                connection.send(#"{"command":"set","node":"gain","parameter":"gain","value":\#(gain)}"#)
                let reply = connection.readReply(timeout: 2)
                guard reply["ok"] as? Bool == true else { fail("set of gain \(gain) refused: \(reply)") }
            }
            let replied = jack_get_time()
            let deadline = monotonicSeconds() + seconds
            while probe.isArmed {
                if monotonicSeconds() > deadline { fail("gain \(gain) set over \(channel) was not heard within \(seconds) s") }
                usleep(200)
            }
            latencies[channel, default: []].append(Double(Int64(bitPattern: probe.heardAt &- sent)) / 1_000)
            replies[channel, default: []].append(Double(Int64(bitPattern: replied &- sent)) / 1_000)
            offsets.append(Double(probe.heardOffset))
            // The next send 50–100 ms after this one.
            let spacing = UInt64(50_000 + 50_000 * generator.nextUnit())
            let now = jack_get_time()
            if sent + spacing > now { usleep(UInt32(sent + spacing - now)) }
        }
        return (latencies, replies, offsets)
    }

    enum Channel: CaseIterable {
        case osc, json
        var name: String { self == .osc ? "osc" : "json-socket" }
    }

    // MARK: Reply after reply

    /// A served speech graph and the fresh process it is compared with.
    struct ReplyVariant {
        /// The figure's metric.
        var metric: String
        /// What the served graph is, for the notes.
        var label: String
        /// The graph file serve runs.
        var graph: String
        /// Added to `sluice speak TEXT --server S --no-cache`, so it plays as the graph does.
        var freshArguments: [String]
    }

    /// `graphs/speak.yaml` as it is (`strategy: auto`), then the same graph with `strategy:
    /// stream` (written to the suite's folder) against `sluice speak --strategy stream`.
    static func replyAfterReply(sluice: String, server: BenchServer, folder: String, runs: Int) {
        let graph = "graphs/speak.yaml"
        guard let text = try? String(contentsOfFile: graph, encoding: .utf8) else {
            fail("cannot read \(graph) (run from the repository root)")
        }
        let streamGraph = "\(folder)/speak-stream.yaml"
        let streamText = text.replacingOccurrences(of: "strategy: auto,", with: "strategy: stream,")
        guard streamText != text, FileManager.default.createFile(atPath: streamGraph, contents: Data(streamText.utf8)) else {
            fail("cannot write \(streamGraph) (no `strategy: auto,` in \(graph)?)")
        }
        let variants = [
            ReplyVariant(metric: "reply-first-audio", label: "graphs/speak.yaml", graph: graph, freshArguments: []),
            ReplyVariant(
                metric: "reply-first-audio stream", label: "graphs/speak.yaml with strategy: stream", graph: streamGraph,
                freshArguments: ["--strategy", "stream"]),
        ]
        note("reply after reply: \(replies) replies of \(jsonString(replyText)) per serve, each followed by a fresh `sluice speak` of the same text")
        let ear = SpeechEar(server: server.name)
        defer { ear.close() }
        var series = [ReplySeries](repeating: ReplySeries(), count: variants.count)
        for run in 1...runs {
            for (index, variant) in variants.enumerated() {
                series[index].record(
                    replySeries(sluice: sluice, server: server, folder: folder, ear: ear, variant: variant, run: run))
            }
        }
        for (index, variant) in variants.enumerated() { series[index].emit(variant: variant, runs: runs) }
    }

    /// What one variant measured over the runs, in ms (sound lengths in s).
    struct ReplySeries {
        var first: [Double] = []
        var later: [Double] = []
        var fresh: [Double] = []
        var servedSound: [Double] = []
        var freshSound: [Double] = []
        /// Replies that never began to play (serve buffering them, silent).
        var stalled = 0
        var stalledStatus = ""
        /// Summed over the serves (from `status`) and over the fresh processes (`--stats json`).
        var underruns = 0.0
        var freshUnderruns = 0.0
        /// The most of any serve.
        var xruns = 0.0

        mutating func record(_ run: ReplySeries) {
            first += run.first
            later += run.later
            fresh += run.fresh
            servedSound += run.servedSound
            freshSound += run.freshSound
            stalled += run.stalled
            if stalledStatus.isEmpty { stalledStatus = run.stalledStatus }
            underruns += run.underruns
            freshUnderruns += run.freshUnderruns
            xruns = max(xruns, run.xruns)
        }

        func emit(variant: ReplyVariant, runs: Int) {
            guard !first.isEmpty, !fresh.isEmpty else { fail("\(variant.label): no reply was heard") }
            func medianOrNaN(_ values: [Double]) -> Double { values.isEmpty ? .nan : median(values) }
            if !servedSound.isEmpty && !freshSound.isEmpty {
                // Checked work: the replies sounded about as long as the fresh processes' speech.
                let servedLength = median(servedSound)
                let freshLength = median(freshSound)
                note(String(format: "%@: sound lasted (s): serve %.2f (%.2f-%.2f), fresh %.2f (%.2f-%.2f)", variant.label, servedLength, servedSound.min()!, servedSound.max()!, freshLength, freshSound.min()!, freshSound.max()!))
                guard abs(servedLength - freshLength) < 0.25 * freshLength else {
                    fail(String(format: "%@: serve's replies sounded %.2f s, the fresh processes' %.2f s: not the same speech", variant.label, servedLength, freshLength))
                }
            }
            if stalled > 0 {
                note("\(variant.label): \(stalled) later replies never began to play (serve kept them buffered); serve's status then: \(stalledStatus)")
            }
            let sluice = medianOrNaN(later)
            let reference = median(fresh)
            var extras: [(key: String, value: Double)] = [
                ("first_reply", median(first)), ("first_reply_min", first.min()!), ("first_reply_max", first.max()!),
            ]
            if !later.isEmpty { extras += [("sluice_min", later.min()!), ("sluice_max", later.max()!)] }
            extras += [
                ("reference_min", fresh.min()!), ("reference_max", fresh.max()!),
                ("later_replies", Double(later.count)), ("stalled_replies", Double(stalled)),
                ("sound_seconds", medianOrNaN(servedSound)), ("reference_sound_seconds", medianOrNaN(freshSound)),
                ("underruns", underruns), ("reference_underruns", freshUnderruns), ("xruns", xruns),
            ]
            Figure(
                bench: "control", metric: variant.metric, sluice: sluice, reference: reference,
                unit: "ms, send to first audio (lower is better)",
                referenceName: "a fresh `sluice speak TEXT --no-cache\(variant.freshArguments.map { " " + $0 }.joined())` each time, spawn to first audio",
                runs: runs, goal: "< 1.0 (later replies faster than a fresh process)",
                goalMet: stalled == 0 && !later.isEmpty && sluice < reference, extras: extras
            ).emit()
        }
    }

    /// One `sluice serve` of `variant.graph` answering `replies` replies, each followed by a
    /// fresh `sluice speak` of the same text. A reply that does not begin to play within 5 s
    /// while serve says it is buffering it is a stall: the run ends there.
    static func replySeries(
        sluice: String, server: BenchServer, folder: String, ear: SpeechEar, variant: ReplyVariant, run: Int
    ) -> ReplySeries {
        var result = ReplySeries()
        let name = "\(variant.metric.replacingOccurrences(of: " ", with: "-"))-\(run)"
        let served = Served.start(sluice: sluice, graph: variant.graph, server: server, folder: folder, name: name)
        SpeechSuite.waitUntil(seconds: 10, "sluice serve's jack.sink to connect to the ear") {
            if let exit = served.process.poll() { fail("sluice serve ended (wait status \(exit.status)); its log:\n\(served.log)") }
            return ear.isConnected
        }
        let connection = ControlConnection(path: served.socketPath)
        func status() -> [String: Any] { connection.request(#"{"command":"status"}"#) }
        waitForSilence(ear, "sluice serve to be silent before its first reply", process: served.process)
        var servedTimes: [Double] = []
        var freshTimes: [Double] = []
        for reply in 0..<replies {
            // Through the served graph.
            ear.arm()
            let sent = jack_get_time()
            connection.send(#"{"command":"speak","text":\#(jsonString(replyText))}"#)
            let answer = connection.readReply(timeout: 5)
            guard answer["ok"] as? Bool == true else { fail("speak refused: \(answer)") }
            let stallCheck = monotonicSeconds() + 5
            var stalled = false
            let heard = waitForSound(ear, "reply \(reply + 1) of serve run \(run) (\(variant.label))", process: served.process) {
                guard monotonicSeconds() > stallCheck, !stalled else { return false }
                let now = status()
                if now["state"] as? String == "buffering", ((now["bufferedSeconds"] as? NSNumber)?.doubleValue ?? 0) > 0 {
                    stalled = true
                    result.stalledStatus = ControlSuite.describe(now)
                }
                return stalled
            } diagnosis: {
                "serve's status: \(ControlSuite.describe(status())); its log:\n\(served.log)"
            }
            guard let heard else {
                result.stalled += 1
                break
            }
            servedTimes.append(Double(Int64(bitPattern: heard &- sent)) / 1_000)
            waitForSilence(ear, "reply \(reply + 1) to play out", process: served.process, diagnosis: {
                "serve's status: \(ControlSuite.describe(status()))"
            }) {
                status()["state"] as? String != "playing"
            }
            result.servedSound.append(Double(Int64(bitPattern: ear.lastSoundAt &- heard)) / 1e6)

            // A fresh process, same text, same server, same ear.
            ear.arm()
            let launched = jack_get_time()
            let output = "\(folder)/\(name)-fresh-\(reply)"
            let child = ChildProcess.start(
                [sluice, "speak", replyText, "--server", server.name, "--no-cache", "--stats", "json"] + variant.freshArguments,
                streams: .init(outputPath: "\(output).out", errorPath: "\(output).err"))
            guard let freshHeard = waitForSound(ear, "a fresh sluice speak", process: child) else { fail("unreachable") }
            freshTimes.append(Double(Int64(bitPattern: freshHeard &- launched)) / 1_000)
            let exit = child.wait()
            guard exit.exited(with: 0) else {
                let log = (try? String(contentsOfFile: "\(output).err", encoding: .utf8)) ?? ""
                fail("\(child.command) failed (wait status \(exit.status)):\n\(log)")
            }
            let stats = StatsFile("\(output).out")
            let speech = stats.object["speech"] as? [String: Any]
            result.freshUnderruns += (speech?["underruns"] as? NSNumber)?.doubleValue ?? stats.number("underruns") ?? 0
            waitForSilence(ear, "the fresh sluice speak to play out", process: served.process)
            result.freshSound.append(Double(Int64(bitPattern: ear.lastSoundAt &- freshHeard)) / 1e6)
        }
        let last = status()
        result.underruns = (last["underruns"] as? NSNumber)?.doubleValue ?? 0
        result.xruns = (last["xruns"] as? NSNumber)?.doubleValue ?? 0
        served.quit(connection)
        note("\(variant.label), run \(run), time to first audio (ms): serve \(JackSuite.formattedList(servedTimes))\(result.stalled > 0 ? " then a stall" : ""), fresh sluice speak \(JackSuite.formattedList(freshTimes))")
        if let first = servedTimes.first { result.first = [first] }
        result.later = Array(servedTimes.dropFirst())
        result.fresh = freshTimes
        return result
    }

    /// A reply's fields as one line of JSON, for notes.
    static func describe(_ object: [String: Any]) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return "\(object)" }
        return String(decoding: data, as: UTF8.self)
    }

    /// Waits (up to 15 s) for the ear's first sound since `arm()`; returns its JACK time, or
    /// nil when `givingUp` says to stop waiting (polled every 50 ms).
    static func waitForSound(
        _ ear: SpeechEar, _ what: String, process: ChildProcess, givingUp: () -> Bool = { false },
        diagnosis: () -> String = { "" }
    ) -> UInt64? {
        let deadline = monotonicSeconds() + 15
        var nextCheck = monotonicSeconds() + 0.05
        while ear.isArmed {
            if monotonicSeconds() > deadline { fail("the ear heard nothing of \(what) within 15 s. \(diagnosis())") }
            if let exit = process.poll() { fail("\(process.command) ended (wait status \(exit.status)) before the ear heard \(what)") }
            if monotonicSeconds() > nextCheck {
                if givingUp() { return nil }
                nextCheck = monotonicSeconds() + 0.05
            }
            usleep(200)
        }
        return ear.heardAt
    }

    /// Waits (up to 30 s) until the ear has heard nothing for `silenceSeconds` and `done`
    /// agrees (polled at most every 50 ms).
    static func waitForSilence(
        _ ear: SpeechEar, _ what: String, process: ChildProcess, diagnosis: () -> String = { "" }, done: () -> Bool = { true }
    ) {
        let deadline = monotonicSeconds() + 30
        while true {
            let quiet = Double(Int64(bitPattern: jack_get_time() &- ear.lastSoundAt)) / 1e6
            if quiet >= silenceSeconds && done() { return }
            if monotonicSeconds() > deadline { fail("waited 30 s for \(what). \(diagnosis())") }
            if let exit = process.poll() { fail("\(process.command) ended (wait status \(exit.status)) while waiting for \(what)") }
            usleep(50_000)
        }
    }
}

// MARK: - sluice serve

/// One `sluice serve` process: its control socket and OSC port, ended by `quit`.
final class Served {
    let process: ChildProcess
    let socketPath: String
    let oscPort: Int
    /// The page's port, when started with `--http`.
    let pagePort: Int?
    let logPath: String
    let outputPath: String

    private init(process: ChildProcess, socketPath: String, oscPort: Int, pagePort: Int?, logPath: String, outputPath: String) {
        self.process = process
        self.socketPath = socketPath
        self.oscPort = oscPort
        self.pagePort = pagePort
        self.logPath = logPath
        self.outputPath = outputPath
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Starts `sluice serve GRAPH --control FOLDER/NAME.sock --osc-port 0` and waits (up to
    /// 15 s) for its "serving …" line, which names the OSC port it took.
    static func start(sluice: String, graph: String, server: BenchServer, folder: String, name: String, extra: [String] = []) -> Served {
        let socketPath = "\(folder)/\(name).sock"
        let logPath = "\(folder)/\(name)-serve.log"
        let outputPath = "\(folder)/\(name)-serve.out"
        let process = ChildProcess.start(
            [sluice, "serve", graph, "--control", socketPath, "--osc-port", "0", "--server", server.name] + extra,
            streams: .init(outputPath: outputPath, errorPath: logPath))
        let deadline = monotonicSeconds() + 15
        while true {
            let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("serving '") }),
                let range = line.range(of: "OSC udp://127.0.0.1:"), let port = Int(line[range.upperBound...].prefix { $0.isNumber })
            {
                let page = line.range(of: "page http://127.0.0.1:").flatMap { Int(line[$0.upperBound...].prefix { $0.isNumber }) }
                return Served(process: process, socketPath: socketPath, oscPort: port, pagePort: page, logPath: logPath, outputPath: outputPath)
            }
            if let exit = process.poll() { fail("sluice serve \(graph) ended (wait status \(exit.status)) before serving; its log:\n\(text)") }
            if monotonicSeconds() > deadline { fail("sluice serve \(graph) did not say it was serving within 15 s; its log:\n\(text)") }
            usleep(10_000)
        }
    }

    /// `quit` on `connection`, then waits (up to 10 s) for the process to exit 0; a serve that
    /// does not is noted, ended with SIGTERM (SIGKILL 5 s later) and fails the suite. Returns
    /// how it exited (with its CPU time).
    @discardableResult
    func quit(_ connection: ControlConnection) -> ChildProcess.Exit {
        connection.send(#"{"command":"quit"}"#)
        _ = connection.readReply(timeout: 5)
        connection.close()
        let deadline = monotonicSeconds() + 10
        while monotonicSeconds() < deadline {
            if let exit = process.poll() {
                guard exit.exited(with: 0) else { fail("sluice serve exited with wait status \(exit.status) after quit; its log:\n\(log)") }
                return exit
            }
            usleep(10_000)
        }
        process.signal(SIGTERM)
        usleep(5_000_000)
        process.signal(SIGKILL)
        _ = process.wait()
        fail("sluice serve did not exit within 10 s of quit; its log:\n\(log)")
    }
}

// MARK: - The JSON-lines socket

/// One persistent connection to a control socket: a line out, a line back.
final class ControlConnection {
    private let descriptor: Int32
    private var pending: [UInt8] = []
    private var closed = false

    init(path: String) {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        guard path.utf8.count < MemoryLayout.size(ofValue: address.sun_path) else { fail("socket path too long: \(path)") }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path.utf8) }
        descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { fail("socket: \(String(cString: strerror(errno)))") }
        // SAFETY: `address` is a complete sockaddr_un, passed with its own size.
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else { fail("cannot connect to \(path): \(String(cString: strerror(errno)))") }
    }

    deinit { close() }

    func send(_ line: String) {
        SpeechSuite.writeAll(Array((line + "\n").utf8), to: descriptor, what: "the control socket")
    }

    /// The next reply line, parsed; stops the suite after `timeout` seconds without one.
    func readReply(timeout: Double) -> [String: Any] {
        let deadline = monotonicSeconds() + timeout
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while true {
            if let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = Data(pending[..<newline])
                pending.removeSubrange(...newline)
                guard let object = try? JSONSerialization.jsonObject(with: line) as? [String: Any] else {
                    fail("the control socket answered a line that is no JSON object: \(String(decoding: line, as: UTF8.self))")
                }
                return object
            }
            let remaining = Int32((deadline - monotonicSeconds()) * 1_000)
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard remaining > 0, poll(&poller, 1, remaining) > 0 else { fail("the control socket did not answer within \(timeout) s") }
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { fail("the control socket hung up") }
            pending += buffer[0..<count]
        }
    }

    func request(_ line: String) -> [String: Any] {
        send(line)
        return readReply(timeout: 5)
    }

    func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(descriptor)
    }
}

/// A client of the control socket that asks for events (levels included, ten a second) and
/// sends requests without ever reading a reply, until the server stops taking them: what a
/// hung program does to a served graph.
final class StuckClient {
    private let descriptor: Int32
    private(set) var sent = 0

    init(path: String) {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path.utf8) }
        descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        // SAFETY: `address` is a complete sockaddr_un, passed with its own size.
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else { fail("cannot connect to \(path): \(String(cString: strerror(errno)))") }
        for line in [#"{"command":"watch","levels":true}"#] + Array(repeating: #"{"command":"parameters"}"#, count: 20_000) {
            let bytes = Array((line + "\n").utf8)
            guard Glibc.send(descriptor, bytes, bytes.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) == bytes.count else { break }
            sent += 1
        }
    }

    func close() { Glibc.close(descriptor) }
}

// MARK: - OSC over UDP

/// A UDP socket on loopback that sends hand-built OSC messages to serve and reads its replies.
final class OSCSender {
    private let descriptor: Int32
    private var destination = sockaddr_in()

    init(port: Int) {
        descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { fail("socket: \(String(cString: strerror(errno)))") }
        destination.sin_family = sa_family_t(AF_INET)
        destination.sin_port = in_port_t(UInt16(port)).bigEndian
        destination.sin_addr.s_addr = in_addr_t(0x7F00_0001).bigEndian
    }

    /// An OSC message with one float argument: the address and the type tag string `,f`, each
    /// NUL-terminated and padded to four bytes, then the float, big-endian.
    static func message(address: String, float: Float) -> [UInt8] {
        func padded(_ text: String) -> [UInt8] {
            var bytes = Array(text.utf8) + [0]
            while bytes.count % 4 != 0 { bytes.append(0) }
            return bytes
        }
        let bits = float.bitPattern.bigEndian
        return padded(address) + padded(",f") + withUnsafeBytes(of: bits) { Array($0) }
    }

    func send(_ bytes: [UInt8]) {
        // SAFETY: `destination` is a complete sockaddr_in, passed with its own size.
        let sent = withUnsafePointer(to: &destination) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(descriptor, bytes, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard sent == bytes.count else { fail("sendto: \(String(cString: strerror(errno)))") }
    }

    /// The next datagram, read as an OSC message of string arguments.
    func receive(timeout: Double) -> (address: String, strings: [String]) {
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, Int32(timeout * 1_000)) > 0 else { fail("serve sent no OSC reply within \(timeout) s") }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { fail("recv: \(String(cString: strerror(errno)))") }
        var offset = 0
        func string() -> String? {
            guard offset < count, let end = buffer[offset..<count].firstIndex(of: 0) else { return nil }
            let text = String(decoding: buffer[offset..<end], as: UTF8.self)
            offset = (end + 4) & ~3
            return text
        }
        guard let address = string(), let types = string(), types.hasPrefix(",") else {
            fail("serve's OSC reply is not an OSC message")
        }
        var strings: [String] = []
        for tag in types.dropFirst() where tag == "s" {
            guard let value = string() else { fail("serve's OSC reply \(address) is cut short") }
            strings.append(value)
        }
        return (address, strings)
    }

    func close() {
        Glibc.close(descriptor)
    }
}

// MARK: - The level probe

/// Two JACK clients of this process around serve's chain: `bench-control-feed` writes 1.0 into
/// every frame of its port, `bench-control-record` watches serve's output for the level it
/// was armed with and stamps the first frame that has it in JACK time.
final class LevelProbe {
    private let feeder: OpaquePointer
    private let recorder: OpaquePointer
    private let state: State

    /// What the callbacks read and write: set before activation, or atomic.
    final class State: @unchecked Sendable {
        // SAFETY (@unchecked Sendable): the ports and the client are set before activation and
        // only read after; the rest is atomic.
        let feedPort: OpaquePointer
        let recordPort: OpaquePointer
        let recorder: OpaquePointer
        /// The level looked for, as Float bits.
        let target = Atomic<UInt32>(0)
        let armed = Atomic<Bool>(false)
        /// jack_time_t of the first frame at `target` since arming.
        let heardAt = Atomic<UInt64>(0)
        /// Where in its period that frame was.
        let heardOffset = Atomic<Int>(0)
        /// The last sample of the last period, as Float bits.
        let lastSample = Atomic<UInt32>(0)
        let checking = Atomic<Bool>(false)
        /// Samples that were neither 0.5 nor 1.0 while checking.
        let oddSamples = Atomic<Int>(0)

        init(feedPort: OpaquePointer, recordPort: OpaquePointer, recorder: OpaquePointer) {
            self.feedPort = feedPort
            self.recordPort = recordPort
            self.recorder = recorder
        }
    }

    init(server: String) {
        func open(_ name: String) -> OpaquePointer {
            var status = jack_status_t(rawValue: 0)
            guard let client = sluice_jack_client_open(name, JackNoStartServer, &status, server) else {
                fail("cannot open a JACK client '\(name)' on '\(server)' (status 0x\(String(status.rawValue, radix: 16)))")
            }
            return client
        }
        feeder = open("bench-control-feed")
        recorder = open("bench-control-record")
        guard let feedPort = jack_port_register(feeder, "out", JACK_DEFAULT_AUDIO_TYPE, UInt(JackPortIsOutput.rawValue), 0),
            let recordPort = jack_port_register(recorder, "in", JACK_DEFAULT_AUDIO_TYPE, UInt(JackPortIsInput.rawValue), 0)
        else { fail("the level probe cannot register its ports") }
        state = State(feedPort: feedPort, recordPort: recordPort, recorder: recorder)
        let context = Unmanaged.passUnretained(state).toOpaque()
        jack_set_process_callback(
            feeder,
            { frames, argument in
                // SAFETY: `argument` is the unretained State, which the probe keeps alive until
                // jack_client_close has stopped this callback.
                Unmanaged<State>.fromOpaque(argument!)._withUnsafeGuaranteedRef { state in
                    // SAFETY: JACK hands `frames` samples for a registered audio port.
                    let buffer = jack_port_get_buffer(state.feedPort, frames)!.assumingMemoryBound(to: Float.self)
                    buffer.update(repeating: 1.0, count: Int(frames))
                }
                return 0
            }, context)
        jack_set_process_callback(
            recorder,
            { frames, argument in
                // SAFETY: as the feeder's.
                Unmanaged<State>.fromOpaque(argument!)._withUnsafeGuaranteedRef { state in
                    let count = Int(frames)
                    let buffer = jack_port_get_buffer(state.recordPort, frames)!.assumingMemoryBound(to: Float.self)
                    if state.checking.load(ordering: .relaxed) {
                        var odd = 0
                        for index in 0..<count where abs(abs(buffer[index]) - 0.5) > 1e-4 && abs(abs(buffer[index]) - 1) > 1e-4 { odd += 1 }
                        if odd > 0 { state.oddSamples.add(odd, ordering: .relaxed) }
                    }
                    if state.armed.load(ordering: .acquiring) {
                        let target = Float(bitPattern: state.target.load(ordering: .relaxed))
                        // By magnitude: a square wave's level is its magnitude.
                        for index in 0..<count where abs(abs(buffer[index]) - target) < 1e-4 {
                            let frame = jack_last_frame_time(state.recorder) &+ jack_nframes_t(index)
                            state.heardAt.store(jack_frames_to_time(state.recorder, frame), ordering: .relaxed)
                            state.heardOffset.store(index, ordering: .relaxed)
                            state.armed.store(false, ordering: .releasing)
                            break
                        }
                    }
                    if count > 0 { state.lastSample.store(buffer[count - 1].bitPattern, ordering: .relaxed) }
                }
                return 0
            }, context)
        guard jack_activate(feeder) == 0, jack_activate(recorder) == 0 else { fail("the level probe cannot activate") }
    }

    /// Connects the feeder to `feedTo` and `recordFrom` to the recorder, once both ports exist
    /// (up to 10 s).
    /// `feedTo` nil: a graph with a source of its own, fed nothing.
    func connect(feedTo: String?, recordFrom: String) {
        SpeechSuite.waitUntil(seconds: 10, "serve's ports \(feedTo ?? "") and \(recordFrom)") {
            feedTo.map { jack_port_by_name(feeder, $0) != nil } ?? true && jack_port_by_name(feeder, recordFrom) != nil
        }
        let feedName = String(cString: jack_port_name(state.feedPort))
        let recordName = String(cString: jack_port_name(state.recordPort))
        guard feedTo.map({ jack_connect(feeder, feedName, $0) == 0 }) ?? true, jack_connect(recorder, recordFrom, recordName) == 0 else {
            fail("cannot connect \(feedName) -> \(feedTo ?? "") and \(recordFrom) -> \(recordName)")
        }
    }

    /// The last sample the recorder saw.
    var level: Float { Float(bitPattern: state.lastSample.load(ordering: .relaxed)) }

    func arm(target: Float) {
        state.heardAt.store(0, ordering: .relaxed)
        state.target.store(target.bitPattern, ordering: .relaxed)
        state.armed.store(true, ordering: .releasing)
    }

    /// True until the recorder has heard the level armed for.
    var isArmed: Bool { state.armed.load(ordering: .acquiring) }
    var heardAt: UInt64 { state.heardAt.load(ordering: .relaxed) }
    var heardOffset: Int { state.heardOffset.load(ordering: .relaxed) }

    func startChecking() {
        state.oddSamples.store(0, ordering: .relaxed)
        state.checking.store(true, ordering: .relaxed)
    }

    /// Stops counting odd samples; returns how many there were.
    func stopChecking() -> Int {
        state.checking.store(false, ordering: .relaxed)
        return state.oddSamples.load(ordering: .relaxed)
    }

    func close() {
        jack_client_close(recorder)
        jack_client_close(feeder)
    }
}

// MARK: - The speech ear

/// A JACK client, `bench-control-ear`, whose two input ports are flagged physical, so
/// `connect: auto` sinks (serve's speech graph, `sluice speak`) connect to them. Its callback
/// stamps, in JACK time, the first non-zero frame since `arm()` and the last non-zero frame.
final class SpeechEar {
    private let client: OpaquePointer
    private let state: State

    final class State: @unchecked Sendable {
        // SAFETY (@unchecked Sendable): the ports and the client are set before activation and
        // only read after; the rest is atomic.
        let left: OpaquePointer
        let right: OpaquePointer
        let client: OpaquePointer
        let armed = Atomic<Bool>(false)
        let heardAt = Atomic<UInt64>(0)
        let lastSoundAt = Atomic<UInt64>(0)

        init(left: OpaquePointer, right: OpaquePointer, client: OpaquePointer) {
            self.left = left
            self.right = right
            self.client = client
        }
    }

    init(server: String) {
        let (client, left, right) = openEar(named: "bench-control-ear", server: server)
        self.client = client
        state = State(left: left, right: right, client: client)
        jack_set_process_callback(
            client,
            { frames, argument in
                // SAFETY: `argument` is the unretained State, which the ear keeps alive until
                // jack_client_close has stopped this callback.
                Unmanaged<State>.fromOpaque(argument!)._withUnsafeGuaranteedRef { state in
                    let count = Int(frames)
                    // SAFETY: JACK hands `frames` samples for a registered audio port.
                    let left = jack_port_get_buffer(state.left, frames)!.assumingMemoryBound(to: Float.self)
                    let right = jack_port_get_buffer(state.right, frames)!.assumingMemoryBound(to: Float.self)
                    var first = -1
                    var last = -1
                    for index in 0..<count where left[index] != 0 || right[index] != 0 {
                        if first < 0 { first = index }
                        last = index
                    }
                    guard first >= 0 else { return }
                    let start = jack_last_frame_time(state.client)
                    if state.armed.load(ordering: .acquiring) {
                        state.heardAt.store(jack_frames_to_time(state.client, start &+ jack_nframes_t(first)), ordering: .relaxed)
                        state.armed.store(false, ordering: .releasing)
                    }
                    state.lastSoundAt.store(jack_frames_to_time(state.client, start &+ jack_nframes_t(last)), ordering: .relaxed)
                }
                return 0
            }, Unmanaged.passUnretained(state).toOpaque())
        guard jack_activate(client) == 0 else { fail("the ear cannot activate") }
    }

    func arm() {
        state.heardAt.store(0, ordering: .relaxed)
        state.armed.store(true, ordering: .releasing)
    }

    var isArmed: Bool { state.armed.load(ordering: .acquiring) }
    var heardAt: UInt64 { state.heardAt.load(ordering: .relaxed) }
    var lastSoundAt: UInt64 { state.lastSoundAt.load(ordering: .relaxed) }

    var isConnected: Bool {
        jack_port_connected(state.left) > 0 || jack_port_connected(state.right) > 0
    }

    func close() {
        jack_client_close(client)
    }
}

// MARK: - Jitter

/// SplitMix64: a fixed seed gives every run the same spacing.
struct SplitMix64 {
    private var state: UInt64
    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A value in [0, 1).
    mutating func nextUnit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}
