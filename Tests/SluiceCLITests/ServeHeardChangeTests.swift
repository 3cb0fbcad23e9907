import Foundation
import JackTestSupport
import SluiceTestSupport
import Testing

/// Live changes to nodes before a sink's buffer are heard within a period (docs/control.md,
/// "When is a change heard").
extension ServeCommandTests {
    @Test("a gain change to a fader before a 3 s buffer, sent over OSC, is heard within one period + 1 ms of the send, by a ramp that does not click")
    func gainBeforeTheBufferHeardWithinAPeriod() throws {
        try withoutXruns { attempt in try recordHeardChange(attempt: attempt) }
    }

    private func recordHeardChange(attempt: Int) throws -> (problems: [String], xruns: Int) {
        let server = try JackTestServer.shared()
        let recorder = try JackRecorder(
            server: server.name, clientName: "serve-heard-ear-\(getpid())-\(attempt)", channels: 1,
            capacityFrames: 20 * Self.rate)
        defer { recorder.stop() }
        try recorder.start()
        let folder = TemporaryFolder()
        // The fader looks ahead 256 frames (its fades stay in it) and its gain ramps over 1 ms.
        let graph = try folder.write(
            """
            name: serve-heard-\(getpid())
            nodes:
              tone: { type: tone, frequency: \(Self.frequency), amplitude: \(Self.amplitude), duration: 60 }
              level: { type: fader, length: 256, ramp: 0.001 }
              out: { type: jack.sink, connect: [\(recorder.portNames[0])] }
            links: [tone -> level -> out]
            playback: { max-buffered: 3 }
            """, to: "tone.yaml")
        let served = try Served(graph: graph, socket: folder.file("control.sock").path, server: server.name, extra: ["--osc-port", "0"])
        served.kept.append(folder)
        let ready = try #require(served.readyLine(), "serve never said it was serving")
        let oscPort = try #require(ready.split(separator: ":").last.flatMap { Int($0) }, "no OSC port in: \(ready)")
        #expect(recorder.waitForFrames(Self.rate, timeout: .seconds(10)))
        // The tone is made ahead of what is heard: seconds of it wait in the sink's buffer.
        let buffered = try served.ctl(["status"]).reply["bufferedSeconds"] as? Double ?? 0
        #expect(buffered > 2, "the sink holds \(buffered) s")

        let udp = try UDPClient(port: oscPort)
        #expect(udp.send(OSCMessage.encode("/sluice/node/level/gain", [.float(0.25)])))
        // The frames the recorder had taken when the packet left: the change is heard after them.
        let sent = recorder.framesRecorded
        usleep(500_000)
        // The replies say where and when a change is heard: the gain the playhead applies,
        // within a period; the tone's amplitude (set to what it is: nothing changes), once
        // what the sink holds has played.
        let gain = try served.ctl(["set", "level", "gain", "0.25"]).reply
        let gainIn = try #require(gain["heard-in"] as? Double, "no heard-in in \(gain)")
        #expect(gainIn <= Double(server.periodFrames * 2) / Double(Self.rate), "\(gain)")
        #expect(gain["heard-frame"] as? Int == gain["frame"] as? Int, "\(gain)")
        let amplitude = try served.ctl(["set", "tone", "amplitude", "\(Self.amplitude)"]).reply
        let amplitudeIn = try #require(amplitude["heard-in"] as? Double, "no heard-in in \(amplitude)")
        #expect(amplitudeIn > 2 && amplitudeIn < 4, "\(amplitude)")
        #expect(try served.ctl(["quit"]).status == 0)
        #expect(served.wait() == 0)
        recorder.stop()

        let samples = recorder.samples(channel: 0)
        // The tone starts at sin(0) = 0, faded in: its frame 1 is the first non-zero sample.
        let first = try #require(samples.firstIndex { $0 != 0 }) - 1
        let omega = 2 * Double.pi * Self.frequency / Double(Self.rate)
        // Where the level leaves the old one: the ramp's first frame.
        guard let start = (1024..<(samples.count - first)).first(where: {
            abs(Double(samples[first + $0]) - Self.amplitude * sin(omega * Double($0))) > 1e-4
        }) else { return (["the change was never heard"], recorder.xruns) }
        let ramp = Self.rate / 1000
        var problems = levelProblems(samples, first: first, at: start, from: 1, to: 0.25, rampFrames: ramp, checkingFrom: 1024)
        // Within one period + 1 ms of the send: the period in which the packet arrived may
        // already have been rendered, so the next one applies it, and the ramp takes 1 ms.
        let heard = first + start + ramp
        let limit = sent + server.periodFrames + ramp
        if heard > limit {
            problems.append("heard at recorded frame \(heard), \(heard - sent) frames after the send (limit \(limit - sent))")
        }
        // No step steeper than the tone's own and the ramp's own step together: no click.
        let slope = (Self.amplitude * omega + Self.amplitude * 0.75 / Double(ramp)) * 1.01
        var steepest = 0.0
        for n in (first + 1)..<samples.count { steepest = max(steepest, Double(abs(samples[n] - samples[n - 1]))) }
        if steepest > slope { problems.append("a step of \(steepest) against the tone's and the ramp's \(slope)") }
        return (problems, recorder.xruns)
    }
}
