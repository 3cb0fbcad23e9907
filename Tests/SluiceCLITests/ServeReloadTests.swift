import Foundation
import JackTestSupport
import SluiceTestSupport
import Synchronization
import Testing

/// `sluice ctl reload`, SIGHUP and `serve --watch`: the graph file read again while the graph
/// plays (docs/control.md, "Reloading the graph file").
extension ServeCommandTests {
    /// The tone graph of `toneGraph`, with its fader's line replaced by `fader`, and `extra`
    /// lines of nodes after it.
    func toneGraphText(connect: String, fader: String = "level: { type: fader, length: 0, ramp: 0.01 }", extra: String = "", links: String = "tone -> level -> out") -> String {
        """
        name: serve-tone-\(getpid())
        nodes:
          tone: { type: tone, frequency: \(Self.frequency), amplitude: \(Self.amplitude), duration: 60 }
          \(fader)
          out: { type: jack.sink, connect: [\(connect)] }
        \(extra)
        links: [\(links)]
        playback: { max-buffered: 0.5 }
        """
    }

    /// What a served process writes to standard error after its ready line, as it comes.
    final class ErrorLines: Sendable {
        private let text = Mutex("")

        init(_ served: Served) {
            served.errors.fileHandleForReading.readabilityHandler = { [self] handle in
                let chunk = handle.availableData
                self.text.withLock { $0 += String(decoding: chunk, as: UTF8.self) }
            }
        }

        /// Waits up to `timeout` seconds for a line containing `needle`; the line, or nil.
        func line(containing needle: String, timeout: Double = 10) -> String? {
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                if let line = text.withLock({ $0 }).split(separator: "\n").first(where: { $0.contains(needle) }) { return String(line) }
                usleep(20_000)
            }
            return nil
        }
    }

    @Test("ctl reload and SIGHUP apply a changed live parameter by its ramp from the stated frame; a broken file, a new node and a changed parameter that is not live are refused, and the tone plays on")
    func reloadAppliesLiveChangesAndRefusesTheRest() throws {
        try withoutXruns { attempt in try recordReload(attempt: attempt) }
    }

    private func recordReload(attempt: Int) throws -> (problems: [String], xruns: Int) {
        let (recorder, served, _) = try servedTone("reload", attempt: attempt)
        defer { recorder.stop() }
        let errors = ErrorLines(served)
        let folder = try #require(served.kept.first as? TemporaryFolder)
        let port = recorder.portNames[0]
        func rewrite(_ text: String) throws { _ = try folder.write(text, to: "tone.yaml") }

        let unchanged = try served.ctl(["reload"])
        #expect(unchanged.status == 0 && (unchanged.reply["changes"] as? [Any])?.isEmpty == true, "\(unchanged.reply)")

        try rewrite(toneGraphText(connect: port, fader: "level: { type: fader, length: 0, ramp: 0.01, gain: 0.5 }"))
        let reload = try served.ctl(["reload"])
        #expect(reload.status == 0, "\(reload.reply)")
        let change = try #require((reload.reply["changes"] as? [[String: Any]])?.first, "no change in \(reload.reply)")
        #expect(change["node"] as? String == "level" && change["parameter"] as? String == "gain" && change["value"] as? Double == 0.5, "\(change)")
        let frame = try #require(change["frame"] as? Int, "no frame in \(change)")
        #expect(change["heard-frame"] as? Int == frame, "\(change)")
        usleep(300_000)

        // Refused, each naming why; the graph plays on untouched.
        try rewrite(toneGraphText(connect: port, links: "tone -> levle -> out"))
        let broken = try served.ctl(["reload"])
        let brokenError = broken.reply["error"] as? [String: Any] ?? [:]
        #expect(broken.status == 1 && brokenError["code"] as? String == "does-not-check", "\(broken.reply)")
        #expect((brokenError["message"] as? String ?? "").contains("tone.yaml:"), "no file:line in \(brokenError)")
        #expect((brokenError["message"] as? String ?? "").contains("levle"), "\(brokenError)")
        try rewrite(toneGraphText(
            connect: port, fader: "level: { type: fader, length: 0, ramp: 0.01, gain: 0.5 }",
            extra: "  more: { type: fader, length: 0 }", links: "tone -> level -> more -> out"))
        let added = try served.ctl(["reload"])
        let addedError = added.reply["error"] as? [String: Any] ?? [:]
        #expect(added.status == 1 && addedError["code"] as? String == "cannot-reload", "\(added.reply)")
        #expect((addedError["message"] as? String ?? "").contains("node 'more' was added"), "\(addedError)")
        try rewrite(toneGraphText(connect: port, fader: "level: { type: fader, length: 64, ramp: 0.01, gain: 0.5 }"))
        let notLive = try served.ctl(["reload"])
        let notLiveError = notLive.reply["error"] as? [String: Any] ?? [:]
        #expect(
            (notLiveError["message"] as? String ?? "").contains("parameter 'length' changed from 0 to 64 and is not live"), "\(notLive.reply)")

        // SIGHUP reads the file as `ctl reload` does.
        try rewrite(toneGraphText(connect: port, fader: "level: { type: fader, length: 0, ramp: 0.01, gain: 0.25 }"))
        kill(served.process.processIdentifier, SIGHUP)
        let hangUp = errors.line(containing: "reloaded (SIGHUP)")
        #expect(hangUp?.contains("level.gain = 0.25") == true, "\(hangUp ?? "no reload after SIGHUP")")
        #expect(try served.ctl(["status"]).reply["state"] as? String == "playing")

        usleep(UInt32((0.5 + 0.5) * 1e6))
        #expect(try served.ctl(["quit"]).status == 0)
        #expect(served.wait() == 0)
        recorder.stop()

        let samples = recorder.samples(channel: 0)
        let first = try #require(samples.firstIndex { $0 != 0 }) - 1
        let ramp = Self.rate / 100
        var problems = levelProblems(samples, first: first, at: frame, from: 1, to: 0.5, rampFrames: ramp)
        // Ramps only, no gap and no step steeper than the tone's own: nothing refused touched it.
        let slope = Self.amplitude * 2 * Double.pi * Self.frequency / Double(Self.rate) * 1.01
        var steepest = 0.0
        for n in (first + 1)..<samples.count { steepest = max(steepest, Double(abs(samples[n] - samples[n - 1]))) }
        if steepest > slope { problems.append("a step of \(steepest) against the tone's \(slope)") }
        let finalPeak = samples.suffix(Self.rate / 10).map { abs(Double($0)) }.max() ?? 0
        if abs(finalPeak - 0.25 * Self.amplitude) > 1e-3 {
            problems.append("the SIGHUP reload to 0.25 was not heard: the last tenth of a second peaks at \(finalPeak)")
        }
        return (problems, recorder.xruns)
    }

    @Test("serve --watch reloads the file when it is saved (written, or renamed over it) and refuses a broken save; over OSC a reload answers at once, its outcome an event, and a flood of them holds up no other sender")
    func watchReloadsOnSave() throws {
        let (recorder, served, ready) = try servedTone("watch", attempt: 1, extra: ["--watch", "--osc-port", "0"])
        defer { recorder.stop() }
        let errors = ErrorLines(served)
        let folder = try #require(served.kept.first as? TemporaryFolder)
        let port = recorder.portNames[0]
        // As editors save: a new file renamed over the old one.
        let saved = try folder.write(toneGraphText(connect: port, fader: "level: { type: fader, length: 0, ramp: 0.01, gain: 0.5 }"), to: "saved.yaml")
        #expect(rename(saved.path, folder.file("tone.yaml").path) == 0)
        let reloaded = errors.line(containing: "reloaded (")
        #expect(reloaded?.contains("level.gain = 0.5") == true, "\(reloaded ?? "no reload after the save")")
        // Written in place, broken: refused with the file's own diagnostic, and it plays on.
        _ = try folder.write(toneGraphText(connect: port, links: "tone -> levle -> out"), to: "tone.yaml")
        let refused = errors.line(containing: "reload refused (")
        #expect(refused?.contains("levle") == true, "\(refused ?? "no refusal after the broken save")")
        #expect(try served.ctl(["status"]).reply["state"] as? String == "playing")

        // OSC: a subscriber's reload is answered at once; its outcome comes as an event.
        let oscPort = try #require(ready.split(separator: ":").last.flatMap { Int($0) }, "no OSC port in: \(ready)")
        let udp = try UDPClient(port: oscPort)
        func messages(for seconds: Double) -> [(address: String, arguments: [String])] {
            var found: [(address: String, arguments: [String])] = []
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                if let datagram = udp.receive(timeout: 0.2), let message = OSCMessage.decodeStrings(datagram) { found.append(message) }
            }
            return found
        }
        #expect(udp.send(OSCMessage.encode("/sluice/subscribe", [.string("events")])))
        _ = messages(for: 0.3)
        _ = try folder.write(toneGraphText(connect: port, fader: "level: { type: fader, length: 0, ramp: 0.01, gain: 0.25 }"), to: "saved.yaml")
        // Renamed in place so the watcher and the OSC reload race for it: one of them applies it.
        #expect(rename(folder.file("saved.yaml").path, folder.file("tone.yaml").path) == 0)
        #expect(udp.send(OSCMessage.encode("/sluice/reload", [])))
        let answered = messages(for: 1.5)
        let reply = answered.first { $0.address == "/sluice/reply" || $0.address == "/sluice/error" }
        #expect(reply.map { $0.address == "/sluice/reply" ? $0.arguments.last?.contains(#""started":true"#) == true : $0.arguments.contains("reload-busy") } == true,
                "\(answered)")
        let outcomes = answered.filter { $0.address == "/sluice/event" && ($0.arguments.first == "reloaded" || $0.arguments.first == "reload-refused") }
        #expect(outcomes.contains { $0.arguments.first == "reloaded" && $0.arguments.last?.contains(#""value":0.25"#) == true }, "\(answered)")

        // A flood of reloads: each answered (begun, or busy), and a status between them at once.
        for _ in 0..<50 { _ = udp.send(OSCMessage.encode("/sluice/reload", [])) }
        #expect(udp.send(OSCMessage.encode("/sluice/status", [])))
        let flood = messages(for: 2)
        let floodReplies = flood.filter { $0.address == "/sluice/reply" || $0.address == "/sluice/error" }
        #expect(floodReplies.count == 51, "\(floodReplies.count) replies to 51 messages")
        #expect(floodReplies.contains { $0.arguments.first == "status" }, "no status reply among \(floodReplies.count)")
        #expect(try served.ctl(["quit"]).status == 0)
        #expect(served.wait() == 0)
    }
}
