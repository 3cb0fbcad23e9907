import Foundation
import JackTestSupport
import SluiceTestSupport
import Testing

/// `sluice serve` and `sluice ctl` against a real JACK server: live parameter changes over the
/// control socket and over OSC (sent by liblo's own `oscsend`), heard in a JACK recording;
/// bad requests answered while the graph plays on.
@Suite(.serialized, .timeLimit(.minutes(2))) struct ServeCommandTests {
    /// A `sluice serve` child process and its control socket.
    final class Served {
        let process = Process()
        let socket: String
        let errors = Pipe()
        /// Its standard output (`--stats`), read once it has exited.
        let output = Pipe()
        /// What must outlive the process (the folder holding its graph and socket).
        var kept: [AnyObject] = []

        init(graph: URL, socket: String, server: String, extra: [String] = [], environment: [String: String] = [:]) throws {
            self.socket = socket
            process.executableURL = CommandRunner.productsFolder.appendingPathComponent("sluice")
            process.arguments = ["serve", graph.path, "--control", socket, "--server", server] + extra
            if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
            process.standardError = errors
            process.standardOutput = output
            try process.run()
        }

        /// The first line serve prints, once it serves (or nil if it exited first).
        func readyLine(timeout: Double = 20) -> String? {
            let deadline = Date().addingTimeInterval(timeout)
            var text = ""
            let handle = errors.fileHandleForReading
            while Date() < deadline, !text.contains("\n") {
                let chunk = handle.availableData
                if chunk.isEmpty { return nil }
                text += String(decoding: chunk, as: UTF8.self)
            }
            return text.split(separator: "\n").first.map(String.init)
        }

        func ctl(_ words: [String]) throws -> (status: Int32, reply: [String: Any]) {
            let outcome = try CLI.sluice(["ctl", "--socket", socket] + words)
            let reply = try JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8)) as? [String: Any] ?? [:]
            return (outcome.status, reply)
        }

        /// Waits for the process to exit; kills it after `timeout`. Returns its status.
        func wait(timeout: Double = 15) -> Int32 {
            let deadline = Date().addingTimeInterval(timeout)
            while process.isRunning && Date() < deadline { usleep(20_000) }
            if process.isRunning { process.terminate(); process.waitUntilExit(); return -1 }
            return process.terminationStatus
        }

        /// What it wrote to standard output, once it has exited.
        func standardOutput() -> Data { output.fileHandleForReading.readDataToEndOfFile() }

        deinit { if process.isRunning { process.terminate() } }
    }

    static let rate = 48_000
    static let frequency = 440.0
    static let amplitude = 0.5

    func toneGraph(in folder: TemporaryFolder, connect: String) throws -> URL {
        try folder.write(
            """
            name: serve-tone-\(getpid())
            nodes:
              tone: { type: tone, frequency: \(Self.frequency), amplitude: \(Self.amplitude), duration: 60 }
              level: { type: fader, length: 0, ramp: 0.01 }
              out: { type: jack.sink, connect: [\(connect)] }
            links: [tone -> level -> out]
            playback: { max-buffered: 0.5 }
            """, to: "tone.yaml")
    }

    /// Runs `attempt` up to five times: a recording that differs from what was expected
    /// proves nothing after an xrun (a late client on a loaded machine without real-time
    /// scheduling costs the recording a period; the whole suite in parallel makes them
    /// common) and is tried again; one that differs without an xrun fails at once.
    func withoutXruns(_ attempt: (Int) throws -> (problems: [String], xruns: Int)) throws {
        var last: [String] = []
        for number in 1...5 {
            let outcome = try attempt(number)
            if outcome.problems.isEmpty { return }
            if outcome.xruns == 0 {
                for problem in outcome.problems { Issue.record(Comment(rawValue: problem)) }
                return
            }
            last = outcome.problems
        }
        Issue.record("xruns spoiled all 5 attempts; is the machine overloaded? The last one's problems: \(last)")
    }

    /// A tone served into a recorder of its own, playing: what the recording tests start from.
    /// Stop the recorder when done.
    func servedTone(_ label: String, attempt: Int, extra: [String] = []) throws
        -> (recorder: JackRecorder, served: Served, ready: String)
    {
        let server = try JackTestServer.shared()
        let recorder = try JackRecorder(
            server: server.name, clientName: "serve-\(label)-ear-\(getpid())-\(attempt)", channels: 1,
            capacityFrames: 20 * Self.rate)
        try recorder.start()
        let folder = TemporaryFolder()
        let graph = try toneGraph(in: folder, connect: recorder.portNames[0])
        let served = try Served(graph: graph, socket: folder.file("control.sock").path, server: server.name, extra: extra)
        served.kept.append(folder)
        let ready = try #require(served.readyLine(), "serve never said it was serving")
        #expect(recorder.waitForFrames(Self.rate / 2, timeout: .seconds(10)))
        return (recorder, served, ready)
    }

    @Test("a gain change over the socket is heard from the frame the reply states, by a ramp; OSC from oscsend too")
    func liveGainChange() throws {
        try withoutXruns { attempt in try recordGainChange(attempt: attempt) }
    }

    private func recordGainChange(attempt: Int) throws -> (problems: [String], xruns: Int) {
        let (recorder, served, ready) = try servedTone("gain", attempt: attempt, extra: ["--osc-port", "0"])
        defer { recorder.stop() }
        let oscPort = try #require(ready.split(separator: ":").last.flatMap { Int($0) }, "no OSC port in: \(ready)")
        let set = try served.ctl(["set", "level", "gain", "0.25"])
        #expect(set.status == 0, "\(set.reply)")
        let frame = try #require(set.reply["frame"] as? Int, "no frame in \(set.reply)")

        // oscsend is liblo's own client: an OSC tool nobody here wrote. Half a second later,
        // so its change lands well after the first one's ramp.
        usleep(500_000)
        let osc = try CommandRunner.run(
            executable: URL(fileURLWithPath: "/usr/bin/oscsend"),
            ["127.0.0.1", "\(oscPort)", "/sluice/node/level/gain", "f", "0"], timeout: 10)
        #expect(osc.status == 0, "\(osc.standardError)")
        // The tone is produced ahead of playback (the sink's buffer); wait until the recording
        // holds the frame of the first change and a second more.
        let status = try served.ctl(["status"])
        let buffered = status.reply["bufferedSeconds"] as? Double ?? 3
        usleep(UInt32((buffered + 1.5) * 1e6))
        let quit = try served.ctl(["quit"])
        #expect(quit.status == 0)
        #expect(served.wait() == 0, "serve did not exit 0 after quit")
        recorder.stop()

        var problems: [String] = []
        let samples = recorder.samples(channel: 0)
        // The tone starts at sin(0) = 0: its frame 1 is the recording's first non-zero sample.
        let first = try #require(samples.firstIndex { $0 != 0 }) - 1
        let ramp = Int(0.01 * Double(Self.rate))
        guard samples.count - first > frame + ramp + Self.rate / 10 else {
            return (["the recording ends before the change"], recorder.xruns)
        }
        problems += levelProblems(samples, first: first, at: frame, from: 1, to: 0.25, rampFrames: ramp)
        // No step steeper than the tone's own: the change never clicks.
        let slope = Self.amplitude * 2 * Double.pi * Self.frequency / Double(Self.rate) * 1.01
        var steepest = 0.0
        for n in (first + 1)..<samples.count { steepest = max(steepest, Double(abs(samples[n] - samples[n - 1]))) }
        if steepest > slope { problems.append("a step of \(steepest) against the tone's \(slope)") }
        // The OSC change to 0 was applied too: the recording ends in silence.
        if !samples.suffix(Self.rate / 10).allSatisfy({ abs($0) < 1e-6 }) {
            problems.append("the OSC gain change to 0 was not heard")
        }
        return (problems, recorder.xruns)
    }

    /// How the recorded tone (its frame 0 at `first`) differs from a level `from` up to frame
    /// `at`, a straight ramp to `to` over `rampFrames`, then `to` for a tenth of a second.
    /// `checkingFrom` skips the frames before it (a fader's fade-in).
    func levelProblems(
        _ samples: [Float], first: Int, at frame: Int, from: Double, to: Double, rampFrames ramp: Int, checkingFrom start: Int = 0
    ) -> [String] {
        let omega = 2 * Double.pi * Self.frequency / Double(Self.rate)
        func tone(_ n: Int) -> Double { Self.amplitude * sin(omega * Double(n)) }
        var worst = (before: 0.0, ramp: 0.0, after: 0.0)
        for n in start..<min(frame + ramp + Self.rate / 10, samples.count - first) {
            let heard = Double(samples[first + n])
            if n < frame {
                worst.before = max(worst.before, abs(heard - from * tone(n)))
            } else if n < frame + ramp {
                let gain = from + (to - from) * Double(n - frame + 1) / Double(ramp)
                worst.ramp = max(worst.ramp, abs(heard - gain * tone(n)))
            } else {
                worst.after = max(worst.after, abs(heard - to * tone(n)))
            }
        }
        var problems: [String] = []
        if worst.before >= 1e-4 { problems.append("before the stated frame the level was not the old one: \(worst)") }
        if worst.ramp >= 1e-3 { problems.append("the ramp is not a straight line from the stated frame: \(worst)") }
        if worst.after >= 1e-4 { problems.append("after the ramp the level is not the new one: \(worst)") }
        return problems
    }

    @Test("a change timed for a frame of the node's output applies exactly there")
    func timedGainChange() throws {
        try withoutXruns { attempt in try recordTimedChange(attempt: attempt) }
    }

    private func recordTimedChange(attempt: Int) throws -> (problems: [String], xruns: Int) {
        let (recorder, served, _) = try servedTone("timed", attempt: attempt)
        defer { recorder.stop() }
        // Where the node's output is: a change to the level it has.
        let now = try #require(try served.ctl(["set", "level", "gain", "1"]).reply["frame"] as? Int)
        let at = now + Self.rate / 2 + 123
        let timed = try served.ctl(["set", "level", "gain", "0.5", "--at", "\(at)"])
        #expect(timed.status == 0 && timed.reply["at"] as? Int == at, "\(timed.reply)")
        if let frame = timed.reply["frame"] as? Int { #expect(frame == at, "applied at \(frame), timed for \(at)") }
        let buffered = try served.ctl(["status"]).reply["bufferedSeconds"] as? Double ?? 3
        usleep(UInt32((buffered + 1.5) * 1e6))
        #expect(try served.ctl(["quit"]).status == 0)
        #expect(served.wait() == 0)
        recorder.stop()
        let samples = recorder.samples(channel: 0)
        let first = try #require(samples.firstIndex { $0 != 0 }) - 1
        guard samples.count - first > at + Self.rate / 5 else { return (["the recording ends before the change"], recorder.xruns) }
        return (levelProblems(samples, first: first, at: at, from: 1, to: 0.5, rampFrames: Int(0.01 * Double(Self.rate))), recorder.xruns)
    }

    @Test("pause, then resume: silence entered and left with fades, nothing lost or repeated")
    func pauseAndResume() throws {
        try withoutXruns { attempt in try recordPause(attempt: attempt) }
    }

    private func recordPause(attempt: Int) throws -> (problems: [String], xruns: Int) {
        let (recorder, served, _) = try servedTone("pause", attempt: attempt)
        defer { recorder.stop() }

        #expect(try served.ctl(["pause"]).status == 0)
        usleep(100_000)
        let paused = try served.ctl(["status"]).reply
        #expect(paused["paused"] as? Bool == true, "\(paused)")
        usleep(400_000)
        #expect(try served.ctl(["resume"]).status == 0)
        usleep(500_000)
        #expect(try served.ctl(["status"]).reply["paused"] as? Bool == false)
        #expect(try served.ctl(["quit"]).status == 0)
        #expect(served.wait() == 0)
        recorder.stop()

        let samples = recorder.samples(channel: 0)
        let first = try #require(samples.firstIndex { $0 != 0 }) - 1
        // The gap: the longest run of exact zeros after the start (a pause of about 0.5 s;
        // a sine sampled at 440 Hz has no run of zeros longer than one sample).
        var gap = (start: 0, length: 0)
        var run = (start: 0, length: 0)
        for index in (first + 2)..<samples.count {
            if samples[index] == 0 {
                if run.length == 0 { run.start = index }
                run.length += 1
                if run.length > gap.length { gap = run }
            } else {
                run.length = 0
            }
        }
        guard gap.length > Self.rate / 4 else {
            return (["no pause in the recording: longest silence \(gap.length) frames"], recorder.xruns)
        }
        // The recording without the gap is the tone, frame for frame, but for the two fades
        // (5 ms each, where the level only ever falls below the tone's).
        let joined = Array(samples[first..<gap.start]) + Array(samples[(gap.start + gap.length)...])
        let fade = max(16, Self.rate / 200)
        let pauseAt = gap.start - first
        let omega = 2 * Double.pi * Self.frequency / Double(Self.rate)
        var worst = 0.0
        var louder = 0
        let end = joined.lastIndex { $0 != 0 } ?? 0
        for n in 0..<max(0, end - fade) {
            let expected = Self.amplitude * sin(omega * Double(n))
            let heard = Double(joined[n])
            if n >= pauseAt - fade && n < pauseAt + fade {
                if abs(heard) > abs(expected) + 1e-5 { louder += 1 }
            } else {
                worst = max(worst, abs(heard - expected))
            }
        }
        var problems: [String] = []
        if worst >= 1e-4 { problems.append("outside the fades the recording is not the tone with the gap removed: \(worst)") }
        if louder > 0 { problems.append("\(louder) frames of the fades louder than the tone") }
        return (problems, recorder.xruns)
    }

    /// graphs/speak.yaml with its sink connected to `recorder` under the client name `client`.
    func speechGraph(in folder: TemporaryFolder, client: String, recorder: JackRecorder) throws -> URL {
        var graph = try String(contentsOf: CLI.graphsFolder.appendingPathComponent("speak.yaml"), encoding: .utf8)
        graph = graph.replacingOccurrences(
            of: "{ type: jack.sink, client: sluice-speak, connect: auto }",
            with: "{ type: jack.sink, client: \(client), connect: [\(recorder.portNames.joined(separator: ", "))] }")
        return try folder.write(graph, to: "speak.yaml")
    }

    /// Stretches of sound in `samples` (runs with no 0.3 s of silence inside).
    func stretches(_ samples: [Float]) -> [(start: Int, length: Int)] {
        var spans: [(start: Int, length: Int)] = []
        var lastSound = -Self.rate
        for (index, sample) in samples.enumerated() where abs(sample) > 1e-4 {
            if index - lastSound > 3 * Self.rate / 10 { spans.append((index, 0)) }
            spans[spans.count - 1].length = index - spans[spans.count - 1].start + 1
            lastSound = index
        }
        return spans
    }

    /// `sluice serve` of the test provider (`test-pcm`, its plugin copied into `folder`)
    /// through the aligner and a resampler into a `jack.sink` that connects to nothing, with
    /// `lines` added to the graph file.
    static func servedTestPCM(
        in folder: TemporaryFolder, voice: String, client: String, server: String, lines: [String] = [], extra: [String] = []
    ) throws -> Served {
        try FileManager.default.copyItem(atPath: TestFixtures.plugin("test-plugin-swift"), toPath: folder.file("libsluice-test.so").path)
        let graph = try folder.write(
            """
            name: \(client)
            nodes:
              voice: \(voice)
              align: { type: aligner }
              resample: { type: resampler }
              out: { type: jack.sink, client: \(client), connect: none }
            links: [voice -> align -> resample -> out]
            """ + lines.map { "\n" + $0 }.joined(), to: "test-pcm.yaml")
        return try Served(
            graph: graph, socket: folder.file("control.sock").path, server: server, extra: extra,
            environment: ["SLUICE_PLUGIN_PATH": folder.url.path])
    }

    @Test("a first reply shorter than the watermark plays at once, whatever the strategy: nothing more is coming to fill the buffer", arguments: [
        "{ strategy: buffered, watermark: 2 }", "{ strategy: generate-first }", "{ strategy: auto }",
    ])
    func shortFirstReply(_ playback: String) throws {
        let server = try JackTestServer.shared()
        let folder = TemporaryFolder()
        // "Hi." is 300 frames of 16 kHz audio: under 20 ms, far below any watermark.
        let served = try Self.servedTestPCM(in: folder, voice: "{ type: test-pcm }", client: "short-reply-\(getpid())", server: server.name, lines: ["playback: \(playback)"])
        _ = try #require(served.readyLine(), "serve never said it was serving")
        #expect(try served.ctl(["speak", "Hi."]).status == 0)
        var position = 0.0
        let deadline = Date().addingTimeInterval(5)
        while position <= 0 && Date() < deadline {
            usleep(50_000)
            position = try served.ctl(["status"]).reply["position"] as? Double ?? 0
        }
        #expect(position > 0, "the reply was never played with playback \(playback)")
        #expect(try served.ctl(["quit"]).status == 0)
        #expect(served.wait() == 0)
    }

    @Test("barge-in by command answers with the heard text, fades out, and the next reply starts cleanly")
    func bargeIn() throws {
        try withoutXruns { attempt in try recordBargeIn(attempt: attempt) }
    }

    private func recordBargeIn(attempt: Int) throws -> (problems: [String], xruns: Int) {
        let server = try JackTestServer.shared()
        let recorder = try JackRecorder(
            server: server.name, clientName: "serve-barge-ear-\(getpid())-\(attempt)", channels: 2,
            capacityFrames: 30 * Self.rate)
        defer { recorder.stop() }
        try recorder.start()
        let folder = TemporaryFolder()
        let served = try Served(
            graph: try speechGraph(in: folder, client: "serve-barge-\(getpid())-\(attempt)", recorder: recorder),
            socket: folder.file("control.sock").path, server: server.name)
        _ = try #require(served.readyLine(), "serve never said it was serving")

        let text = "First sentence here. Second sentence is a good deal longer than the first one. Third, never heard. Fourth."
        #expect(try served.ctl(["speak", text]).reply["queued"] as? Int == 4)
        // Into the second sentence: the first has been heard to its end.
        var position = 0.0
        for _ in 0..<100 where position < 2.4 {
            usleep(50_000)
            position = try served.ctl(["status"]).reply["position"] as? Double ?? 0
        }
        let cancel = try served.ctl(["cancel"])
        #expect(cancel.status == 0, "\(cancel.reply)")
        var problems: [String] = []
        if cancel.reply["heard"] as? String != "First sentence here." {
            problems.append("heard: \(cancel.reply)")
        }
        if cancel.reply["partial"] as? String != "Second sentence is a good deal longer than the first one." {
            problems.append("partial: \(cancel.reply)")
        }
        if cancel.reply["unheard"] as? Int != 2 { problems.append("unheard: \(cancel.reply)") }
        // To the word: what was heard of the cut sentence, then the word that was playing.
        if cancel.reply["granularity"] as? String != "word" { problems.append("granularity: \(cancel.reply)") }
        let partial = "Second sentence is a good deal longer than the first one."
        let heardOfIt = cancel.reply["partial-heard"] as? String ?? "?"
        let word = cancel.reply["partial-word"] as? String ?? ""
        let wordFollows = partial.hasPrefix(heardOfIt) && partial.dropFirst(heardOfIt.count).drop(while: \.isWhitespace).hasPrefix(word)
        if word.isEmpty || !wordFollows { problems.append("partial-heard, partial-word: \(cancel.reply)") }
        usleep(600_000)
        #expect(try served.ctl(["speak", "A new reply."]).status == 0)
        usleep(2_500_000)
        let status = try served.ctl(["status"]).reply
        #expect(try served.ctl(["quit"]).status == 0)
        #expect(served.wait() == 0)
        recorder.stop()

        let samples = recorder.samples(channel: 0)
        let spans = stretches(samples)
        // The first sentence, the second cut off, the new reply (espeak's pause between
        // sentences is a stretch of silence too).
        guard spans.count == 3 else {
            return (problems + ["\(spans.count) stretches of sound, not two sentences and the new reply: \(spans)"], recorder.xruns)
        }
        let (cut, new) = (spans[1], spans[2])
        // The cut ends in a fade (its last frames near silence), well before the sentence would
        // have; the new reply begins from silence too.
        let cutEnd = cut.start + cut.length
        if abs(samples[cutEnd - 1]) > 0.01 { problems.append("the cut ends on \(samples[cutEnd - 1]): a click") }
        if cutEnd - spans[0].start > 4 * Self.rate { problems.append("the cut reply played on: \(spans)") }
        if abs(samples[new.start]) > 0.01 { problems.append("the new reply starts on \(samples[new.start])") }
        if !(Self.rate / 3...3 * Self.rate).contains(new.length) {
            problems.append("the new reply is \(new.length) frames long")
        }
        if status["underruns"] as? Int != 0 { problems.append("underruns: \(status)") }
        return (problems, recorder.xruns)
    }

    @Test("three replies from two clients play in order through the same ports, recorded by one connection")
    func repliesFromTwoClients() throws {
        let server = try JackTestServer.shared()
        let recorder = try JackRecorder(
            server: server.name, clientName: "serve-speech-ear-\(getpid())", channels: 2, capacityFrames: 30 * Self.rate)
        defer { recorder.stop() }
        try recorder.start()
        let folder = TemporaryFolder()
        let client = "serve-speech-\(getpid())"
        let served = try Served(
            graph: try speechGraph(in: folder, client: client, recorder: recorder), socket: folder.file("control.sock").path,
            server: server.name)
        _ = try #require(served.readyLine(), "serve never said it was serving")
        let ports = try server.ports(matching: "^\(client):")
        #expect(ports.count == 2, "\(ports)")

        // Two clients, each on a connection of its own that stays open; replies alternate.
        let texts = ["One.", "This is the second reply, and it is much longer than the others.", "Three, three."]
        let first = try UnixLineConnection(socket: served.socket)
        let second = try UnixLineConnection(socket: served.socket)
        for (index, text) in texts.enumerated() {
            let connection = index % 2 == 0 ? first : second
            let before = try served.ctl(["status"]).reply["position"] as? Double ?? 0
            let reply = try connection.exchange(ControlLine.speak(text))
            #expect(reply.contains(#""ok":true"#), "\(reply)")
            // Wait for the reply to play out: heard, and the playhead back to waiting for text.
            var waited = 0
            var done = false
            repeat {
                usleep(100_000)
                waited += 1
                let now = try served.ctl(["status"]).reply
                done = (now["position"] as? Double ?? 0) > before + 0.2 && (now["bufferedSeconds"] as? Double ?? 1) < 0.001
                    && now["state"] as? String == "buffering"
            } while waited < 150 && !done
            #expect(done, "reply \(index + 1) did not play out")
            usleep(700_000)  // a gap the recording shows between replies
            #expect(try server.ports(matching: "^\(client):") == ports, "the client's ports changed between replies")
            let connected = try server.connections(of: ports[0])
            #expect(connected == [recorder.portNames[0]], "\(ports[0]) is connected to \(connected)")
        }
        let status = try served.ctl(["status"]).reply
        #expect(try served.ctl(["quit"]).status == 0)
        #expect(served.wait() == 0)
        recorder.stop()

        // Three stretches of speech, in the order sent: the long one in the middle.
        let spans = stretches(recorder.samples(channel: 0))
        #expect(spans.count == 3, "\(spans.count) stretches of speech: \(spans)")
        if spans.count == 3 {
            #expect(spans[1].length > 2 * spans[0].length && spans[1].length > 2 * spans[2].length, "\(spans)")
            #expect(spans[2].length > spans[0].length, "\(spans)")
        }
        #expect(status["underruns"] as? Int == 0 || (status["xruns"] as? Int ?? 0) > 0, "\(status)")
    }

    @Test("watch streams what is heard; configure changes the provider's rate for what follows and refuses bad values")
    func watchAndConfigure() throws {
        let server = try JackTestServer.shared()
        let recorder = try JackRecorder(
            server: server.name, clientName: "serve-watch-ear-\(getpid())", channels: 2, capacityFrames: 30 * Self.rate)
        defer { recorder.stop() }
        try recorder.start()
        let folder = TemporaryFolder()
        let served = try Served(
            graph: try speechGraph(in: folder, client: "serve-watch-\(getpid())", recorder: recorder),
            socket: folder.file("control.sock").path, server: server.name)
        _ = try #require(served.readyLine(), "serve never said it was serving")
        let watcher = try UnixLineConnection(socket: served.socket)
        #expect(try watcher.exchange(#"{"command":"watch"}"#).contains(#""ok":true"#))

        let sentence = "The same sentence, twice over."
        #expect(try served.ctl(["speak", sentence]).status == 0)
        // Utterance events (an xrun on a loaded machine is an event too, and is passed over).
        var events: [[String: Any]] = []
        while events.count < 2, let line = watcher.readLine(timeout: 10) {
            let event = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] ?? [:]
            if (event["event"] as? String)?.hasPrefix("utterance-") == true { events.append(event) }
        }
        #expect(events.map { $0["event"] as? String } == ["utterance-started", "utterance-ended"], "\(events)")
        #expect(events.allSatisfy { $0["text"] as? String == sentence && $0["utterance"] as? Int == 0 })

        // A reload that changes the provider's rate is refused, pointing at configure.
        let graphFile = folder.file("speak.yaml")
        let original = try String(contentsOf: graphFile, encoding: .utf8)
        _ = try folder.write(original.replacingOccurrences(of: "rate: 175", with: "rate: 350"), to: "speak.yaml")
        let reload = try served.ctl(["reload"])
        let reloadMessage = (reload.reply["error"] as? [String: Any])?["message"] as? String ?? ""
        #expect(reloadMessage.contains("parameter 'rate' changed from 175 to 350 and is not live")
            && reloadMessage.contains("`sluice ctl configure voice rate=350`"), "\(reload.reply)")
        _ = try folder.write(original, to: "speak.yaml")

        let wrong = try served.ctl(["configure", "voice", "rat=350"])
        #expect((wrong.reply["error"] as? [String: Any])?["code"] as? String == "unknown-parameter")
        let range = try served.ctl(["configure", "voice", "rate=5000"])
        #expect((range.reply["error"] as? [String: Any])?["code"] as? String == "out-of-range")
        let faster = try served.ctl(["configure", "voice", "rate=350"])
        #expect(faster.status == 0, "\(faster.reply)")
        var cancelled = false
        while !cancelled, let line = watcher.readLine(timeout: 5) { cancelled = line.contains(#""event":"cancelled""#) }
        #expect(cancelled, "configure sent no cancelled event")
        usleep(400_000)
        #expect(try served.ctl(["speak", sentence]).status == 0)
        var ended = false
        while !ended, let line = watcher.readLine(timeout: 10) { ended = line.contains("utterance-ended") }
        #expect(ended)
        usleep(300_000)
        #expect(try served.ctl(["quit"]).status == 0)
        #expect(served.wait() == 0)
        recorder.stop()

        // The same sentence at twice the rate (words a minute) takes about half as long.
        let spans = stretches(recorder.samples(channel: 0))
        #expect(spans.count == 2, "\(spans)")
        if spans.count == 2 {
            let ratio = Double(spans[1].length) / Double(spans[0].length)
            #expect(ratio > 0.35 && ratio < 0.7, "rate 350 against 175: \(ratio) of the length")
        }
    }

    @Test("a reply streamed in pieces is cut into sentences across the pieces, the last spoken when the reply ends")
    func replyInPieces() throws {
        let server = try JackTestServer.shared()
        let folder = TemporaryFolder()
        var graph = try String(contentsOf: CLI.graphsFolder.appendingPathComponent("speak.yaml"), encoding: .utf8)
        graph = graph.replacingOccurrences(of: "connect: auto", with: "connect: none")
        let served = try Served(
            graph: try folder.write(graph, to: "speak.yaml"), socket: folder.file("control.sock").path, server: server.name)
        _ = try #require(served.readyLine())
        let watcher = try UnixLineConnection(socket: served.socket)
        _ = try watcher.exchange(#"{"command":"watch"}"#)

        let pieces = ["Hel", "lo the", "re. How a", "re you"]
        var released: [Int] = []
        for piece in pieces {
            let reply = try served.ctl(["speak", "--more", piece]).reply
            released.append(reply["count"] as? Int ?? -1)
        }
        // The first sentence goes as soon as its end has come; the second waits for the end.
        #expect(released == [0, 0, 1, 0], "\(released)")
        let last = try served.ctl(["--json", #"{"command":"speak","text":"?"}"#]).reply
        #expect(last["count"] as? Int == 1 && last["pending"] as? Int == 0, "\(last)")
        var heard: [String] = []
        while heard.count < 2, let line = watcher.readLine(timeout: 10) {
            let event = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] ?? [:]
            if event["event"] as? String == "utterance-ended" { heard.append(event["text"] as? String ?? "") }
        }
        #expect(heard == ["Hello there.", "How are you?"])
        #expect(try served.ctl(["quit"]).status == 0)
        #expect(served.wait() == 0)
    }

    @Test("connect and disconnect by command join the graph's ports to others while it plays")
    func connectAndDisconnect() throws {
        let server = try JackTestServer.shared()
        let recorder = try JackRecorder(server: server.name, clientName: "serve-route-ear-\(getpid())", channels: 1)
        defer { recorder.stop() }
        try recorder.start()
        let folder = TemporaryFolder()
        let graph = try toneGraph(in: folder, connect: "none")
        let served = try Served(graph: graph, socket: folder.file("control.sock").path, server: server.name)
        _ = try #require(served.readyLine())
        let client = "serve-tone-\(getpid())"
        let output = "\(client):out_1"
        #expect(try server.connections(of: output).isEmpty)

        let joined = try served.ctl(["connect", "out_1", recorder.portNames[0]])
        #expect(joined.status == 0, "\(joined.reply)")
        #expect(joined.reply["from"] as? String == output && joined.reply["to"] as? String == recorder.portNames[0])
        #expect(try server.connections(of: output) == [recorder.portNames[0]])
        #expect(recorder.waitForFrames(Self.rate / 4, timeout: .seconds(5)))
        #expect(recorder.samples(channel: 0).contains { $0 != 0 }, "nothing arrived through the connection")

        // Either order; the graph's port by its full name too.
        #expect(try served.ctl(["disconnect", recorder.portNames[0], output]).status == 0)
        #expect(try server.connections(of: output).isEmpty)

        let missing = try served.ctl(["connect", "out_9", recorder.portNames[0]])
        #expect((missing.reply["error"] as? [String: Any])?["code"] as? String == "no-such-port", "\(missing.reply)")
        let twoInputs = try served.ctl(["connect", recorder.portNames[0], "system:playback_1"])
        #expect(((twoInputs.reply["error"] as? [String: Any])?["message"] as? String)?.contains("both inputs") == true, "\(twoInputs.reply)")
        let foreign = try served.ctl(["connect", "system:capture_1", recorder.portNames[0]])
        #expect(((foreign.reply["error"] as? [String: Any])?["message"] as? String)?.contains("neither") == true, "\(foreign.reply)")
        #expect(try served.ctl(["quit"]).status == 0)
        #expect(served.wait() == 0)
    }

    @Test("SIGTERM, as a service manager stops it, fades out and exits 143; the socket goes with it")
    func terminatedBySIGTERM() throws {
        let server = try JackTestServer.shared()
        let folder = TemporaryFolder()
        let served = try Served(
            graph: try toneGraph(in: folder, connect: "none"), socket: folder.file("control.sock").path, server: server.name,
            extra: ["--stats", "json"])
        _ = try #require(served.readyLine())
        #expect(FileManager.default.fileExists(atPath: served.socket))
        served.process.terminate()  // SIGTERM
        #expect(served.wait(timeout: 5) == 143)
        #expect(!FileManager.default.fileExists(atPath: served.socket), "the control socket was left behind")
    }

    @Test("ctl save-state writes a playing LV2 node's state, its control as last set live, into a folder a graph's state: restores")
    func saveStateOfAPlayingPlugin() throws {
        let server = try JackTestServer.shared()
        let folder = TemporaryFolder()
        let graph = try folder.write(
            """
            name: serve-lv2-\(getpid())
            nodes:
              tone: { type: tone, duration: 60 }
              amp: { type: lv2, uri: "http://lv2plug.in/plugins/eg-amp" }
              out: { type: jack.sink, connect: none }
            links: [tone -> amp -> out]
            """, to: "amp.yaml")
        let served = try Served(graph: graph, socket: folder.file("control.sock").path, server: server.name)
        _ = try #require(served.readyLine())
        #expect(try served.ctl(["set", "amp", "gain", "-7.5"]).status == 0)
        let saved = try served.ctl(["save-state", "amp", folder.path("amp-state")])
        #expect(saved.status == 0, "\(saved.reply)")
        let file = try #require(saved.reply["file"] as? String)
        #expect(file == folder.path("amp-state") + "/state.ttl")
        let state = try String(contentsOfFile: file, encoding: .utf8)
        #expect(state.contains("<http://lv2plug.in/plugins/eg-amp>") && state.contains("\"gain\"") && state.contains("-7.5"), "\(state)")
        // A folder that is a link is refused; the graph plays on.
        try FileManager.default.createSymbolicLink(atPath: folder.path("link"), withDestinationPath: folder.path("amp-state"))
        let refused = try served.ctl(["save-state", "amp", folder.path("link")])
        #expect(refused.status == 1 && (refused.reply["error"] as? [String: Any])?["code"] as? String == "save-failed", "\(refused.reply)")
        #expect(try served.ctl(["status"]).status == 0)
        #expect(try served.ctl(["quit"]).status == 0)
        #expect(served.wait() == 0)

        // The saved folder as a graph's `state:`: the tone comes out at the gain set live.
        let restored = try folder.write(
            """
            nodes:
              tone: { type: tone, amplitude: 0.5, duration: 0.1 }
              amp: { type: lv2, uri: "http://lv2plug.in/plugins/eg-amp", state: amp-state }
              out: { type: wav.sink, path: out.wav }
            links: [tone -> amp -> out]
            """, to: "restored.yaml")
        let render = try CLI.sluice(["render", restored.path])
        #expect(render.status == 0, "\(render.standardError)")
        let wav = try [UInt8](Data(contentsOf: URL(fileURLWithPath: folder.path("out.wav"))))
        let data = try #require((0..<(wav.count - 8)).first { Array(wav[$0..<($0 + 4)]) == Array("data".utf8) })
        let samples = stride(from: data + 8, to: wav.count - 3, by: 4).map { offset in
            Float(bitPattern: UInt32(wav[offset]) | UInt32(wav[offset + 1]) << 8 | UInt32(wav[offset + 2]) << 16 | UInt32(wav[offset + 3]) << 24)
        }
        let peak = samples.map(abs).max() ?? 0
        #expect(abs(peak - 0.5 * powf(10, -7.5 / 20)) < 1e-3, "peak \(peak)")
    }

    @Test("malformed and wrong requests are answered with errors while the graph plays on")
    func badRequestsAreAnswered() throws {
        let server = try JackTestServer.shared()
        let folder = TemporaryFolder()
        let graph = try toneGraph(in: folder, connect: "none")
        let served = try Served(
            graph: graph, socket: folder.file("control.sock").path, server: server.name, extra: ["--osc-port", "0"])
        let ready = try #require(served.readyLine())
        let oscPort = try #require(ready.split(separator: ":").last.flatMap { Int($0) })

        let cases: [([String], String)] = [
            (["--json", "not json"], "bad-json"),
            (["--json", "[1,2]"], "bad-json"),
            (["--json", #"{"nothing":1}"#], "no-command"),
            (["--json", #"{"command":"stauts"}"#], "unknown-command"),
            (["set", "levle", "gain", "1"], "unknown-node"),
            (["set", "out", "connect", "1"], "no-live-parameters"),
            (["set", "tone", "duration", "1"], "not-live"),
            (["set", "level", "gian", "1"], "unknown-parameter"),
            (["set", "level", "length", "1"], "not-live"),
            (["set", "level", "gain", "5"], "out-of-range"),
            (["--json", #"{"command":"set","node":"level","parameter":"gain","value":true}"#], "missing-field"),
            (["--json", #"{"command":"set","node":"level","parameter":"gain","value":"loud"}"#], "missing-field"),
            (["speak", "hello"], "no-speaker"),
            (["save-state", "levle", "/tmp/sluice-no-state"], "unknown-node"),
            (["save-state", "level", "/tmp/sluice-no-state"], "no-state"),
            // A key twice: parsers keep the first or the last; refused rather than guessed.
            (["--json", #"{"command":"status","command":"quit"}"#], "bad-json"),
            (["--json", #"{"command":"status","comm\u0061nd":"quit"}"#], "bad-json"),
            (["--json", #"{"command":"set","node":"level","parameter":"gain","value":0.5,"at":1e300}"#], "bad-value"),
            (["--json", #"{"command":"set","node":"level","parameter":"gain","value":0.5,"at":-0.5}"#], "bad-value"),
            (["--json", #"{"command":"set","node":"level","parameter":"gain","value":0.5,"at":9223372036854775807}"#], "bad-value"),
            (["--json", #"{"command":"set","node":"level","parameter":"gain","value":1e300}"#], "out-of-range"),
            (["--json", #"{"command":"set","node":"level","parameter":"gain","value":-1e300}"#], "out-of-range"),
        ]
        for (words, code) in cases {
            let outcome = try served.ctl(words)
            #expect(outcome.status == 1, "\(words)")
            let error = outcome.reply["error"] as? [String: Any]
            #expect(error?["code"] as? String == code, "\(words): \(outcome.reply)")
        }
        let suggestion = try served.ctl(["set", "levle", "gain", "1"]).reply["error"] as? [String: Any]
        #expect((suggestion?["message"] as? String)?.contains("did you mean 'level'?") == true)

        // 10 000 random and malformed messages, half datagrams and half lines on one
        // connection: every one answered with an error, and the server's memory flat.
        func residentKiB() -> Int {
            let status = (try? String(contentsOfFile: "/proc/\(served.process.processIdentifier)/status", encoding: .utf8)) ?? ""
            let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
            return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
        }
        let before = residentKiB()
        var generator = SeededGenerator(seed: 7)
        let socket = try UDPClient(port: oscPort)
        var oscErrors = 0
        for index in 0..<5_000 {
            var bytes = (0..<Int.random(in: 1...64, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if index % 3 == 0 { bytes = Array("/sluice/node/level/gain\0\0,s\0\0x\0\0\0".utf8) }
            if index % 3 == 1 { bytes = Array("/sluice/nope\0\0\0\0,\0\0\0".utf8) }
            if let reply = socket.exchange(bytes), reply.starts(with: Array("/sluice/error".utf8)) { oscErrors += 1 }
        }
        #expect(oscErrors == 5_000, "\(5_000 - oscErrors) malformed OSC datagrams were not answered with an error")

        var lines = ""
        for _ in 0..<5_000 {
            let length = Int.random(in: 1...80, using: &generator)
            lines += String((0..<length).map { _ in Character(UnicodeScalar(UInt8.random(in: 0x20...0x7e, using: &generator))) }) + "\n"
        }
        let replies = try UnixLineClient.exchange(lines, socket: served.socket, expecting: 5_000)
        #expect(replies.count == 5_000)
        #expect(replies.allSatisfy { $0.contains(#""ok":false"#) })
        let after = residentKiB()
        #expect(after - before < 4_096, "resident memory grew from \(before) to \(after) KiB")

        let status = try served.ctl(["status"])
        #expect(status.reply["state"] as? String == "playing", "\(status.reply)")
        #expect(status.reply["underruns"] as? Int == 0)
        #expect(try served.ctl(["quit"]).status == 0)
        #expect(served.wait() == 0)
    }
}

extension ServeCommandTests {
    @Test("every OSC address takes its documented argument types, strings included; numbers out of range are refused")
    func oscArgumentsOfEveryType() throws {
        let server = try JackTestServer.shared()
        let recorder = try JackRecorder(
            server: server.name, clientName: "serve-osc-ear-\(getpid())", channels: 2, capacityFrames: 4 * Self.rate)
        defer { recorder.stop() }
        try recorder.start()
        let folder = TemporaryFolder()
        let client = "serve-osc-\(getpid())"
        let served = try Served(
            graph: try speechGraph(in: folder, client: client, recorder: recorder),
            socket: folder.file("control.sock").path, server: server.name, extra: ["--osc-port", "0"])
        let ready = try #require(served.readyLine(), "serve never said it was serving")
        let oscPort = try #require(ready.split(separator: ":").last.flatMap { Int($0) }, "no OSC port in: \(ready)")
        let udp = try UDPClient(port: oscPort)
        func send(_ address: String, _ arguments: [OSCMessage.Argument]) throws -> (address: String, arguments: [String]) {
            let reply = try #require(udp.exchange(OSCMessage.encode(address, arguments)), "no reply to \(address)")
            return try #require(OSCMessage.decodeStrings(reply), "not an OSC reply of strings: \(reply)")
        }
        func fields(_ reply: (address: String, arguments: [String])) -> [String: Any] {
            guard reply.address == "/sluice/reply", reply.arguments.count == 2 else { return [:] }
            return (try? JSONSerialization.jsonObject(with: Data(reply.arguments[1].utf8))) as? [String: Any] ?? [:]
        }

        // A frame that is no Int, or is far past any run: refused, and the server answers on.
        let extremes: [OSCMessage.Argument] = [.int64(.max), .int64(.min), .int64(-1), .int32(-1), .int64(1_000_000_000_000_000)]
        for frame in extremes {
            let reply = try send("/sluice/node/fade/gain", [.float(0.5), frame])
            #expect(reply.address == "/sluice/error" && reply.arguments.dropFirst().first == "bad-value", "\(frame): \(reply)")
        }
        for value: OSCMessage.Argument in [.double(1e300), .double(-1e300), .double(.nan), .double(.infinity), .float(-.infinity)] {
            let reply = try send("/sluice/node/fade/gain", [value])
            #expect(reply.address == "/sluice/error", "\(value): \(reply)")
        }
        let timed = try send("/sluice/node/fade/gain", [.double(0.5), .int64(0)])
        #expect(timed.address == "/sluice/reply", "\(timed)")
        #expect(try send("/sluice/status", []).address == "/sluice/reply")

        // Strings arrive whole: the port names in connect's error, the text spoken and heard.
        let refused = try send("/sluice/connect", [.string("\(client):out_1"), .string("no-such-client:in_42")])
        #expect(refused.address == "/sluice/error", "\(refused)")
        #expect(refused.arguments.last?.contains("no-such-client:in_42") == true, "\(refused)")
        let disconnect = try send("/sluice/disconnect", [.string("\(client):out_1"), .string(recorder.portNames[0])])
        #expect(disconnect.address == "/sluice/reply", "\(disconnect)")
        let connect = try send("/sluice/connect", [.string("\(client):out_1"), .string(recorder.portNames[0])])
        #expect(connect.address == "/sluice/reply", "\(connect)")

        let configure = try send("/sluice/configure/voice/voice", [.string("en-us")])
        #expect(configure.address == "/sluice/reply", "\(configure)")

        // oscsend, liblo's own client, sends the text; the cancel's answer names what was said.
        let text = "Hello world from OSC, a sentence long enough to be cut."
        let sent = try CommandRunner.run(
            executable: URL(fileURLWithPath: "/usr/bin/oscsend"), ["127.0.0.1", "\(oscPort)", "/sluice/speak", "s", text], timeout: 10)
        #expect(sent.status == 0, "\(sent.standardError)")
        var position = 0.0
        for _ in 0..<100 where position < 0.5 {
            usleep(50_000)
            position = try served.ctl(["status"]).reply["position"] as? Double ?? 0
        }
        let cancel = fields(try send("/sluice/cancel", []))
        #expect(cancel["partial"] as? String == text, "\(cancel)")
        let interrupt = fields(try send("/sluice/interrupt", [.string("Another."), .string("voice")]))
        // `queued` counts the utterances queued so far: the cancelled sentence, then this one.
        #expect(interrupt["queued"] as? Int == 2, "\(interrupt)")

        #expect(try send("/sluice/pause", []).address == "/sluice/reply")
        #expect(try send("/sluice/resume", []).address == "/sluice/reply")
        #expect(try send("/sluice/parameters", []).address == "/sluice/reply")
        #expect(try send("/sluice/quit", []).address == "/sluice/reply")
        #expect(served.wait() == 0)
    }
}

extension ServeCommandTests {
    @Test("an OSC subscriber gets a meter's readings and each parameter change with its frame; unsubscribed, nothing; the 17th is refused")
    func oscSubscription() throws {
        let server = try JackTestServer.shared()
        let folder = TemporaryFolder()
        let graph = try folder.write(
            """
            name: serve-meter-\(getpid())
            nodes:
              tone:  { type: tone, frequency: 997, amplitude: 0.5, duration: 60 }
              meter: { type: meter, interval: 0.1 }
              eq:    { type: lv2, uri: "http://gareus.org/oss/lv2/fil4#mono" }
              level: { type: fader, length: 0, ramp: 0.01 }
              out:   { type: jack.sink, connect: none }
            links: [tone -> meter -> eq -> level -> out]
            playback: { max-buffered: 0.5 }
            """, to: "meter.yaml")
        let served = try Served(graph: graph, socket: folder.file("control.sock").path, server: server.name, extra: ["--osc-port", "0"])
        let ready = try #require(served.readyLine(), "serve never said it was serving")
        let oscPort = try #require(ready.split(separator: ":").last.flatMap { Int($0) }, "no OSC port in: \(ready)")
        let udp = try UDPClient(port: oscPort)
        // Every `/sluice/event` received, by event name, whichever loop read it.
        var events: [String: [[String: Any]]] = [:]
        func note(_ datagram: [UInt8]) {
            guard let message = OSCMessage.decode(datagram), message.address == "/sluice/event", message.arguments.count == 2,
                case .string(let name) = message.arguments[0], case .string(let json) = message.arguments[1],
                let fields = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
            else { return }
            events[name, default: []].append(fields)
        }
        func reply(_ address: String, _ arguments: [OSCMessage.Argument] = []) throws -> (address: String, arguments: [String]) {
            // Events may come first: the answer is the first reply or error.
            try #require(udp.send(OSCMessage.encode(address, arguments)))
            let deadline = Date().addingTimeInterval(5)
            while Date() < deadline {
                guard let datagram = udp.receive(timeout: 1) else { continue }
                guard let decoded = OSCMessage.decodeStrings(datagram), decoded.address == "/sluice/reply" || decoded.address == "/sluice/error"
                else {
                    note(datagram)
                    continue
                }
                return decoded
            }
            throw CocoaError(.fileReadUnknown)
        }
        /// Reads until `name` has come (or 10 s pass); its events.
        func awaitEvent(_ name: String, where condition: ([String: Any]) -> Bool = { _ in true }) -> [String: Any]? {
            let deadline = Date().addingTimeInterval(10)
            while events[name, default: []].first(where: condition) == nil, Date() < deadline {
                if let datagram = udp.receive(timeout: 1) { note(datagram) }
            }
            return events[name, default: []].first(where: condition)
        }

        let bad = try reply("/sluice/subscribe", [.int32(0), .string("levels-please")])
        #expect(bad.address == "/sluice/error" && bad.arguments.dropFirst().first == "bad-value", "\(bad)")
        let subscribed = try reply("/sluice/subscribe")
        #expect(subscribed.address == "/sluice/reply" && subscribed.arguments.first == "subscribe", "\(subscribed)")

        // Readings every 0.1 s of the stream: a 997 Hz sine at amplitude 0.5 reads −6.02 dB
        // peak, −9.03 dB RMS; the loudness is there.
        var meters: [[OSCMessage.Argument]] = []
        let deadline = Date().addingTimeInterval(10)
        while meters.count < 5, Date() < deadline {
            guard let datagram = udp.receive(timeout: 1), let message = OSCMessage.decode(datagram) else { continue }
            if message.address == "/sluice/meter" { meters.append(message.arguments) } else { note(datagram) }
        }
        try #require(meters.count >= 5, "\(meters.count) meter messages")
        for arguments in meters {
            guard arguments.count == 8, case .string(let node) = arguments[0], case .int64(let frame) = arguments[1],
                case .float(let momentary) = arguments[2], case .float(let peak) = arguments[5], case .float(let rms) = arguments[6]
            else {
                Issue.record("not a meter message: \(arguments)")
                continue
            }
            #expect(node == "meter" && frame > 0 && frame % 4_800 == 0, "\(arguments)")
            #expect(abs(peak - -6.02) <= 0.05 && abs(rms - -9.03) <= 0.05, "peak \(peak), rms \(rms)")
            #expect(momentary > -30 && momentary < 0, "momentary \(momentary)")
        }

        // The equaliser's own meter (its `peak` control output, in dB) as `control-output` events.
        let controlOutput = awaitEvent("control-output")
        #expect(controlOutput?["node"] as? String == "eq" && controlOutput?["output"] as? String == "peak", "\(controlOutput ?? [:])")
        #expect(abs((controlOutput?["value"] as? Double ?? 0) - -6.02) < 0.5, "\(controlOutput ?? [:])")
        #expect((controlOutput?["frame"] as? Int ?? 0) > 0, "\(controlOutput ?? [:])")

        // A change sent over OSC is answered at once (no frame yet); its event follows with the frame.
        let set = try reply("/sluice/node/level/gain", [.float(0.5)])
        #expect(set.address == "/sluice/reply", "\(set)")
        let parameterEvent = awaitEvent("parameter") { $0["node"] as? String == "level" }
        #expect(parameterEvent?["parameter"] as? String == "gain", "\(parameterEvent ?? [:])")
        #expect((parameterEvent?["frame"] as? Int ?? 0) > 0, "\(parameterEvent ?? [:])")
        // An LV2 control, by its symbol, the same way.
        let setEQ = try reply("/sluice/node/eq/gain3", [.float(4)])
        #expect(setEQ.address == "/sluice/reply", "\(setEQ)")
        let eqEvent = awaitEvent("parameter") { $0["node"] as? String == "eq" }
        #expect(eqEvent?["parameter"] as? String == "gain3" && eqEvent?["value"] as? Double == 4, "\(eqEvent ?? [:])")
        #expect((eqEvent?["frame"] as? Int ?? 0) > 0, "\(eqEvent ?? [:])")

        // Sixteen senders at most.
        var others: [UDPClient] = []
        for _ in 0..<15 {
            let other = try UDPClient(port: oscPort)
            let answer = other.exchange(OSCMessage.encode("/sluice/subscribe", [.string("events")])).flatMap(OSCMessage.decodeStrings)
            #expect(answer?.address == "/sluice/reply", "\(String(describing: answer))")
            others.append(other)
        }
        let extra = try UDPClient(port: oscPort)
        let refused = extra.exchange(OSCMessage.encode("/sluice/subscribe", [])).flatMap(OSCMessage.decodeStrings)
        #expect(refused?.arguments.dropFirst().first == "too-many-subscribers", "\(String(describing: refused))")

        let unsubscribed = try reply("/sluice/unsubscribe")
        #expect(unsubscribed.address == "/sluice/reply" && unsubscribed.arguments.last?.contains("\"subscribed\":true") == true, "\(unsubscribed)")
        usleep(300_000)
        while udp.receive(timeout: 0.05) != nil {}
        var late = 0
        let quiet = Date().addingTimeInterval(1)
        while Date() < quiet { if udp.receive(timeout: 0.2) != nil { late += 1 } }
        #expect(late == 0, "\(late) messages after unsubscribing")
        #expect(try served.ctl(["quit"]).status == 0)
        #expect(served.wait() == 0)
    }

    /// `sluice serve` as another local user would attack it: its folder, its path, its name.
    @Test("serve refuses a socket folder another user owns or may write, replaces nothing but its own stale socket, and checks names")
    func localAccessIsTheUsersAlone() throws {
        let server = try JackTestServer.shared()
        let folder = TemporaryFolder()
        let graph = try toneGraph(in: folder, connect: "none")
        func serve(_ arguments: [String], environment: [String: String] = [:]) throws -> CommandRunner.Outcome {
            try CLI.sluice(["serve", graph.path, "--server", server.name] + arguments, environment: environment)
        }

        // --control naming a file that is not a socket: refused, the file kept.
        let precious = try folder.write("keep me", to: "precious.txt")
        let overFile = try serve(["--control", precious.path])
        #expect(overFile.status == 1)
        #expect(overFile.standardError.contains("is not a socket; refusing to replace it"), "\(overFile.standardError)")
        #expect((try? String(contentsOf: precious, encoding: .utf8)) == "keep me")

        // A folder another user owns and anyone may write (the /tmp/sluice-UID trap): refused,
        // naming the fix; nothing is bound there.
        let runtime = TemporaryFolder()
        let planted = runtime.url.appendingPathComponent("sluice").path
        #expect(mkdir(planted, 0o777) == 0 && chmod(planted, 0o777) == 0 && chown(planted, 65_534, 65_534) == 0)
        let trap = try serve([], environment: ["XDG_RUNTIME_DIR": runtime.path])
        #expect(trap.status == 1)
        #expect(trap.standardError.contains("belongs to uid 65534 with mode 777"), "\(trap.standardError)")
        #expect(trap.standardError.contains("Remove the folder"), "\(trap.standardError)")
        #expect((try? FileManager.default.contentsOfDirectory(atPath: planted))?.isEmpty == true)
        // A folder of ours that others may write: refused the same way.
        #expect(chown(planted, 0, 0) == 0)
        #expect(try serve(["--control", "\(planted)/g.sock"]).standardError.contains("with mode 777"))
        // A socket of another user's at the path: not replaced.
        #expect(chmod(planted, 0o755) == 0)
        let othersSocket = "\(planted)/other.sock"
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: othersSocket.utf8) }
        // SAFETY: a complete sockaddr_un.
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0 && chown(othersSocket, 65_534, 65_534) == 0)
        let overSocket = try serve(["--control", othersSocket])
        #expect(overSocket.status == 1)
        #expect(overSocket.standardError.contains("belongs to uid 65534, not to you"), "\(overSocket.standardError)")
        #expect(FileManager.default.fileExists(atPath: othersSocket))

        // A name that would climb out of the folder: refused before it becomes a path.
        try FileManager.default.createDirectory(atPath: "\(folder.path)/dir", withIntermediateDirectories: true)
        let important = try folder.write("important", to: "dir/important.sock")
        let climbing = try folder.write(
            try String(contentsOf: graph, encoding: .utf8).replacingOccurrences(
                of: "name: serve-tone-\(getpid())", with: "name: ../../\(folder.url.lastPathComponent)/dir/important"),
            to: "climbing.yaml")
        let named = try CLI.sluice(
            ["serve", climbing.path, "--server", server.name], environment: ["XDG_RUNTIME_DIR": folder.path])
        #expect(named.status == 1)
        #expect(named.standardError.contains("cannot name its control socket"), "\(named.standardError)")
        #expect((try? String(contentsOf: important, encoding: .utf8)) == "important")
    }

    @Test("ctl sends nothing to a socket served by another user's process")
    func clientChecksTheServersUser() throws {
        let folder = TemporaryFolder()
        #expect(chmod(folder.path, 0o777) == 0)
        let path = "\(folder.path)/other.sock"
        let received = "\(folder.path)/received"
        // A listener running as nobody, keeping whatever arrives.
        let script = """
            import socket, sys
            s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(1); open(sys.argv[1] + ".ready", "w").close()
            c, _ = s.accept(); c.settimeout(3)
            try: data = c.recv(4096)
            except Exception: data = b""
            open(sys.argv[2], "wb").write(data)
            """
        let listener = Process()
        listener.executableURL = URL(fileURLWithPath: "/usr/sbin/runuser")
        listener.arguments = ["-u", "nobody", "--", "python3", "-c", script, path, received]
        try listener.run()
        defer { if listener.isRunning { listener.terminate() } }
        for _ in 0..<100 where !FileManager.default.fileExists(atPath: path + ".ready") { usleep(50_000) }
        let outcome = try CLI.sluice(["ctl", "--socket", path, "speak", "my private text"])
        #expect(outcome.status == 1)
        #expect(outcome.standardError.contains("served by another user's process"), "\(outcome.standardError)")
        listener.waitUntilExit()
        let got = (try? String(contentsOfFile: received, encoding: .utf8)) ?? "?"
        #expect(!got.contains("private"), "the other user's listener received: \(got)")
    }
}

extension ServeCommandTests {
    @Test("a client that watches and stops reading holds back only itself: others are answered, and quit ends serve at once")
    func aClientThatStopsReading() throws {
        let server = try JackTestServer.shared()
        let folder = TemporaryFolder()
        let served = try Served(
            graph: try toneGraph(in: folder, connect: "none"), socket: folder.file("control.sock").path, server: server.name)
        _ = try #require(served.readyLine(), "serve never said it was serving")

        // It watches levels (about ten events a second) and sends requests it never reads the
        // replies to, until the server stops taking them.
        let stuck = try UnixLineConnection(socket: served.socket)
        #expect(stuck.sendWithoutWaiting(#"{"command":"watch","levels":true}"#))
        var sent = 0
        while sent < 20_000, stuck.sendWithoutWaiting(#"{"command":"parameters"}"#) { sent += 1 }
        #expect(sent > 100, "the server took only \(sent) requests")

        // Everyone else is served as before, pause and resume included.
        for words in [["status"], ["pause"], ["resume"], ["set", "level", "gain", "0.5"], ["parameters"], ["status"]] {
            let outcome = try served.ctl(words)
            #expect(outcome.status == 0, "\(words): \(outcome.reply)")
        }
        let watcher = try UnixLineConnection(socket: served.socket)
        #expect(try watcher.exchange(#"{"command":"watch"}"#).contains(#""ok":true"#))
        #expect(try served.ctl(["pause"]).status == 0)
        let event = watcher.readLine(timeout: 5) ?? ""
        #expect(event.contains(#""event":"paused""#), "a second watcher got: \(event)")

        // The stuck client still holds its place: quit ends the process all the same.
        #expect(try served.ctl(["quit"]).status == 0)
        #expect(served.wait(timeout: 5) == 0, "serve did not exit while a client was not reading")
        withExtendedLifetime(stuck) {}
    }
}

extension ServeCommandTests {
    @Test("OSC beyond loopback needs a private secret file; a datagram without the secret gets no reply at all")
    func oscBeyondLoopbackNeedsASecret() throws {
        let server = try JackTestServer.shared()
        let folder = TemporaryFolder()
        let graph = try toneGraph(in: folder, connect: "none")
        let open = try CLI.sluice(["serve", graph.path, "--server", server.name, "--osc-port", "0", "--osc-host", "0.0.0.0"])
        #expect(open.status == 1)
        #expect(open.standardError.contains("--osc-secret-file"), "\(open.standardError)")

        let secret = "0123456789abcdef-not-guessable"
        let secretFile = try folder.write(secret + "\n", to: "osc.secret")
        #expect(chmod(secretFile.path, 0o644) == 0)
        let readable = try CLI.sluice([
            "serve", graph.path, "--server", server.name, "--osc-port", "0", "--osc-host", "0.0.0.0", "--osc-secret-file", secretFile.path,
        ])
        #expect(readable.status == 1)
        #expect(readable.standardError.contains("chmod 600"), "\(readable.standardError)")

        #expect(chmod(secretFile.path, 0o600) == 0)
        let served = try Served(
            graph: graph, socket: folder.file("control.sock").path, server: server.name,
            extra: ["--osc-port", "0", "--osc-host", "0.0.0.0", "--osc-secret-file", secretFile.path])
        let ready = try #require(served.readyLine())
        let oscPort = try #require(ready.split(separator: ":").last.flatMap { Int($0) }, "no OSC port in: \(ready)")
        let udp = try UDPClient(port: oscPort)
        // No secret, a wrong one, a truncated one, a bundle, garbage: nothing comes back.
        let unanswered: [[UInt8]] = [
            OSCMessage.encode("/sluice/status", []),
            OSCMessage.encode("/sluice/status", [.string("0123456789abcdef-not-guessabl3")]),
            OSCMessage.encode("/sluice/status", [.string(String(secret.dropLast()))]),
            OSCMessage.encode("/sluice/quit", [.int32(1)]),
            Array("#bundle\0".utf8) + [0, 0, 0, 0, 0, 0, 0, 1],
            [0xff, 0x00, 0x13, 0x37],
        ]
        for datagram in unanswered {
            #expect(udp.exchange(datagram) == nil, "a reply to \(datagram.count) unauthenticated bytes")
        }
        // With it: answered, and the command done.
        let status = try #require(udp.exchange(OSCMessage.encode("/sluice/status", [.string(secret)])))
        #expect(OSCMessage.decodeStrings(status)?.address == "/sluice/reply")
        let set = try #require(udp.exchange(OSCMessage.encode("/sluice/node/level/gain", [.string(secret), .float(0.25)])))
        let setReply = OSCMessage.decodeStrings(set)
        #expect(setReply?.address == "/sluice/reply", "\(setReply as Any)")
        #expect(setReply?.arguments.last?.contains(#""value":0.25"#) == true, "\(setReply as Any)")
        #expect(try served.ctl(["quit"]).status == 0)
        #expect(served.wait() == 0)
    }
}

extension ServeCommandTests {
    @Test("64 idle connections hold their places only until the idle timeout; the line limit is exact to the byte")
    func idleConnectionsAndTheLineLimit() throws {
        let server = try JackTestServer.shared()
        let folder = TemporaryFolder()
        let served = try Served(
            graph: try toneGraph(in: folder, connect: "none"), socket: folder.file("control.sock").path, server: server.name,
            extra: ["--idle-timeout", "1"])
        _ = try #require(served.readyLine(), "serve never said it was serving")

        // Every place taken by a client that says nothing: the next is turned away…
        let idle = try (0..<64).map { _ in try UnixLineConnection(socket: served.socket) }
        usleep(200_000)
        let turnedAway = try UnixLineConnection(socket: served.socket)
        #expect(turnedAway.readLine(timeout: 2)?.contains("too-many-clients") == true)
        // …until the idle ones are closed, a second later.
        usleep(1_500_000)
        #expect(idle.allSatisfy { $0.readLine(timeout: 0.5) == nil }, "an idle connection was answered")
        #expect(try served.ctl(["status"]).status == 0, "still locked out after the idle timeout")

        // 65 536 bytes before the newline are a line (not JSON: bad-json); one more is too long,
        // and so is one of about 80 KiB (which got through when the limit was checked per read).
        let connection = try UnixLineConnection(socket: served.socket)
        for (length, code) in [(65_536, "bad-json"), (65_537, "line-too-long"), (80_000, "line-too-long"), (200_000, "line-too-long")] {
            let reply = try connection.exchange(String(repeating: "x", count: length))
            #expect(reply.contains(#""code":"\#(code)""#), "\(length) bytes: \(reply.prefix(200))")
        }
        #expect(try connection.exchange(#"{"command":"status"}"#).contains(#""ok":true"#))
        #expect(try served.ctl(["quit"]).status == 0)
        #expect(served.wait() == 0)
        withExtendedLifetime(idle) {}
    }
}

extension ServeCommandTests {
    /// The control plane under a hostile load while a tone plays into a recorder: 10 000
    /// random and malformed messages (OSC datagrams and JSON lines, from two clients at once),
    /// a third client that watches and never reads, and a fourth asking for status every 50 ms.
    @Test("10 000 hostile messages and a client that never reads: others answered throughout, memory flat, no gap in the recording")
    func controlPlaneUnderHostileLoad() throws {
        try withoutXruns { attempt in try hostileLoad(attempt: attempt) }
    }

    private func hostileLoad(attempt: Int) throws -> (problems: [String], xruns: Int) {
        let (recorder, served, ready) = try servedTone("hostile", attempt: attempt, extra: ["--osc-port", "0"])
        defer { recorder.stop() }
        let oscPort = try #require(ready.split(separator: ":").last.flatMap { Int($0) }, "no OSC port in: \(ready)")
        func residentKiB() -> Int {
            let status = (try? String(contentsOfFile: "/proc/\(served.process.processIdentifier)/status", encoding: .utf8)) ?? ""
            let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
            return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
        }
        let before = residentKiB()

        let stuck = try UnixLineConnection(socket: served.socket)
        _ = stuck.sendWithoutWaiting(#"{"command":"watch","levels":true}"#)
        var flooded = 0
        while flooded < 5_000, stuck.sendWithoutWaiting(#"{"command":"parameters"}"#) { flooded += 1 }

        final class Tally: @unchecked Sendable {
            var answered = 0
        }
        let datagrams = Tally(), lines = Tally()
        let udp = Thread {
            var generator = SeededGenerator(seed: UInt64(40 + attempt))
            guard let socket = try? UDPClient(port: oscPort) else { return }
            for index in 0..<5_000 {
                var bytes = (0..<Int.random(in: 1...96, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
                switch index % 4 {
                case 0: bytes = OSCMessage.encode("/sluice/node/level/gain", [.float(.random(in: -2...2, using: &generator)), .int64(.random(in: .min ... .max, using: &generator))])
                case 1: bytes = OSCMessage.encode("/sluice/speak", [.string(String(repeating: "é", count: index % 50))])
                // Cut short, but not to nothing: an empty datagram has nothing to answer.
                case 2: bytes = Array(bytes.prefix(Int.random(in: 1...bytes.count, using: &generator)))
                default: break
                }
                if socket.exchange(bytes) != nil { datagrams.answered += 1 }
            }
        }
        let socketPath = served.socket
        let unix = Thread {
            var generator = SeededGenerator(seed: UInt64(90 + attempt))
            var text = ""
            for index in 0..<5_000 {
                switch index % 4 {
                case 0: text += #"{"command":"set","node":"level","parameter":"gain","value":1e300,"at":-1e300}"# + "\n"
                case 1: text += #"{"command":"status","command":"quit"}"# + "\n"
                default:
                    let length = Int.random(in: 1...120, using: &generator)
                    text += String((0..<length).map { _ in Character(UnicodeScalar(UInt8.random(in: 0x20...0x7e, using: &generator))) }) + "\n"
                }
            }
            lines.answered = (try? UnixLineClient.exchange(text, socket: socketPath, expecting: 5_000).count) ?? 0
        }
        udp.start()
        unix.start()
        // Status every 50 ms while the load lasts: the slowest answer is kept.
        var slowest = 0.0
        var probes = 0
        let started = Date()
        while (!udp.isFinished || !unix.isFinished) && Date().timeIntervalSince(started) < 60 {
            let asked = Date()
            let status = try CLI.sluice(["ctl", "--socket", served.socket, "status"])
            slowest = max(slowest, Date().timeIntervalSince(asked))
            if status.status != 0 {
                let running = served.process.isRunning
                let tail = running ? "" : String(decoding: served.errors.fileHandleForReading.readDataToEndOfFile().suffix(3_000), as: UTF8.self)
                return (["status failed under load after \(probes) probes: \(status.standardError); serve running: \(running) \(running ? 0 : served.process.terminationStatus) \(tail)"], recorder.xruns)
            }
            probes += 1
            usleep(50_000)
        }
        var problems: [String] = []
        if !udp.isFinished || !unix.isFinished { problems.append("the load did not end within 60 s") }
        if datagrams.answered != 5_000 { problems.append("\(5_000 - datagrams.answered) datagrams unanswered") }
        if lines.answered != 5_000 { problems.append("\(lines.answered) of 5 000 lines answered") }
        // ctl is a process of its own: starting it costs tens of milliseconds; a stall would
        // cost seconds (the 10 s reply timeout).
        if slowest > 1 { problems.append("a status took \(slowest) s under load") }
        let after = residentKiB()
        if after - before > 8_192 { problems.append("resident memory grew from \(before) to \(after) KiB") }
        #expect(try served.ctl(["quit"]).status == 0)
        #expect(served.wait(timeout: 5) == 0, "serve did not end while a client was not reading")
        withExtendedLifetime(stuck) {}
        recorder.stop()

        // The tone plays on throughout: no run of silence inside it.
        let samples = recorder.samples(channel: 0)
        guard let first = samples.firstIndex(where: { $0 != 0 }), let last = samples.lastIndex(where: { $0 != 0 }) else {
            return (problems + ["nothing was recorded"], recorder.xruns)
        }
        var longest = 0, run = 0
        for sample in samples[first...last] {
            run = sample == 0 ? run + 1 : 0
            longest = max(longest, run)
        }
        if longest > 4 { problems.append("a gap of \(longest) frames in the tone after \(probes) probes") }
        return (problems, recorder.xruns)
    }
}

extension ServeCommandTests {
    @Test("status of a direct chain (graphs/live-gain.yaml): nothing buffered, never below zero, while the position advances")
    func directChainStatus() throws {
        let server = try JackTestServer.shared()
        let folder = TemporaryFolder()
        let served = try Served(
            graph: CLI.graphsFolder.appendingPathComponent("live-gain.yaml"), socket: folder.file("control.sock").path,
            server: server.name)
        _ = try #require(served.readyLine(), "serve never said it was serving")
        var positions: [Double] = []
        for _ in 0..<4 {
            usleep(300_000)
            let status = try served.ctl(["status"]).reply
            #expect(status["bufferedSeconds"] as? Double == 0, "\(status)")
            positions.append(status["position"] as? Double ?? -1)
        }
        #expect(positions == positions.sorted() && positions.last! > positions.first!, "\(positions)")
        #expect(try served.ctl(["quit"]).status == 0)
        #expect(served.wait() == 0)
    }
}

/// A UDP socket on loopback that sends a datagram and waits (up to 2 s) for one back.
final class UDPClient {
    let descriptor: Int32
    var destination = sockaddr_in()

    init(port: Int) throws {
        descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        destination.sin_family = sa_family_t(AF_INET)
        destination.sin_port = in_port_t(UInt16(port)).bigEndian
        destination.sin_addr.s_addr = inet_addr("127.0.0.1")
    }

    deinit { close(descriptor) }

    /// The next datagram that arrives within `timeout` seconds, or nil.
    func receive(timeout: Double) -> [UInt8]? {
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, Int32(timeout * 1_000)) > 0 else { return nil }
        var datagram = [UInt8](repeating: 0, count: 65_536)
        let count = datagram.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        return count > 0 ? Array(datagram[0..<count]) : nil
    }

    func send(_ bytes: [UInt8]) -> Bool {
        // SAFETY: `destination` is a complete sockaddr_in.
        withUnsafePointer(to: &destination) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(descriptor, bytes, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        } == bytes.count
    }

    func exchange(_ bytes: [UInt8]) -> [UInt8]? {
        guard send(bytes) else { return nil }
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, 2_000) > 0 else { return nil }
        var reply = [UInt8](repeating: 0, count: 65_536)
        let count = reply.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        return count > 0 ? Array(reply[0..<count]) : nil
    }
}

/// A control request line.
enum ControlLine {
    static func speak(_ text: String) -> String {
        let data = try! JSONSerialization.data(withJSONObject: ["command": "speak", "text": text])
        return String(decoding: data, as: UTF8.self)
    }
}

/// One connection to a control socket that stays open: a line out, a line back.
final class UnixLineConnection {
    let handle: Int32

    init(socket path: String) throws {
        handle = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path.utf8) }
        // SAFETY: a complete sockaddr_un.
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(handle, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else {
            close(handle)
            throw CocoaError(.fileNoSuchFile)
        }
    }

    deinit { close(handle) }

    /// The next line that arrives within `timeout` seconds, or nil.
    func readLine(timeout: Double) -> String? {
        var line: [UInt8] = []
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            var poller = pollfd(fd: handle, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 100) > 0 else { continue }
            var byte: UInt8 = 0
            guard recv(handle, &byte, 1, 0) == 1 else { return nil }
            if byte == 0x0a { return String(decoding: line, as: UTF8.self) }
            line.append(byte)
        }
        return nil
    }

    /// Sends `line` without waiting; false when the socket would block (the server is not
    /// reading) or is gone.
    func sendWithoutWaiting(_ line: String) -> Bool {
        let bytes = Array((line + "\n").utf8)
        return send(handle, bytes, bytes.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) == bytes.count
    }

    func exchange(_ line: String) throws -> String {
        let bytes = Array((line + "\n").utf8)
        guard send(handle, bytes, bytes.count, Int32(MSG_NOSIGNAL)) == bytes.count else { throw CocoaError(.fileWriteUnknown) }
        var reply: [UInt8] = []
        var byte: UInt8 = 0
        while recv(handle, &byte, 1, 0) == 1 {
            if byte == 0x0a { break }
            reply.append(byte)
        }
        return String(decoding: reply, as: UTF8.self)
    }
}

/// Writes lines to a Unix socket and reads a reply line for each.
enum UnixLineClient {
    static func exchange(_ text: String, socket path: String, expecting count: Int) throws -> [String] {
        let handle = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(handle) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path.utf8) }
        // SAFETY: a complete sockaddr_un.
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(handle, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else { throw CocoaError(.fileNoSuchFile) }
        // Write and read at once: the replies must not fill the socket while we still write.
        let bytes = Array(text.utf8)
        let writer = Thread {
            var sent = 0
            while sent < bytes.count {
                let n = bytes[sent...].withUnsafeBytes { send(handle, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if n <= 0 { return }
                sent += n
            }
        }
        writer.start()
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let deadline = Date().addingTimeInterval(30)
        while received.filter({ $0 == 0x0a }).count < count, Date() < deadline {
            var poller = pollfd(fd: handle, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 1_000) > 0 else { continue }
            let n = buffer.withUnsafeMutableBytes { recv(handle, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            received.append(contentsOf: buffer[0..<n])
        }
        return String(decoding: received, as: UTF8.self).split(separator: "\n").map(String.init)
    }
}

extension OSCMessage {
    /// A reply's address and its string arguments (the server replies with strings only).
    static func decodeStrings(_ bytes: [UInt8]) -> (address: String, arguments: [String])? {
        var offset = 0
        func string() -> String? {
            guard let end = bytes[offset...].firstIndex(of: 0) else { return nil }
            let text = String(decoding: bytes[offset..<end], as: UTF8.self)
            offset = (end + 4) / 4 * 4
            return text
        }
        guard let address = string(), let tags = string(), tags.hasPrefix(","), tags.dropFirst().allSatisfy({ $0 == "s" })
        else { return nil }
        var arguments: [String] = []
        for _ in tags.dropFirst() {
            guard offset < bytes.count, let argument = string() else { return nil }
            arguments.append(argument)
        }
        return (address, arguments)
    }
}
