import CSndFile
import Foundation
import JackTestSupport
import SluiceTestSupport
import Testing

/// Beyond one machine, on NetJack2 (docs/netjack.md): two JACK servers in two network
/// namespaces joined by a veth pair (`NetJackPair`), a `sluice` on one host playing into the
/// other's. Each test opens clients on its own servers, so it runs in an exit test (libjack
/// serves one server per process, and the shared test server has clients here).
///
/// Needs root for the namespaces; CI runs as root, and so do these tests there. They run in a
/// pass of their own (`scripts/test` sets SLUICE_TEST_NETJACK=1 after the whole suite): the
/// net driver clocks the slave over the network, and a 2-core machine busy with the parallel
/// suite starves it until it drops the link.
@Suite(
    .serialized,
    .enabled(if: ProcessInfo.processInfo.environment["SLUICE_TEST_NETJACK"] == "1", "runs in scripts/test's NetJack2 pass"),
    .enabled(if: NetJackPair.isAvailable, "needs root, iproute2 and JACK 2's net driver"))
struct NetJackTests {
    static let tone = "tone frequency=441 amplitude=0.5 duration=1 ! fader"
    /// Attempts a recording spoiled by xruns gets.
    static let attempts = 4
    static let text = "Routing speech between hosts. The network adds a fixed delay and nothing else."

    /// The speech chain with a fixed resampler quality (rendered and live alike) and every
    /// sample synthesised before playback starts, so the recording can be compared sample for
    /// sample with the offline render.
    static func speechGraph(connect: String) -> String {
        """
        name: netjack-speech
        nodes:
          voice:    { type: espeak, voice: en, rate: 175 }
          align:    { type: aligner }
          resample: { type: resampler, quality: sinc-medium }
          fade:     { type: fader, length: 256 }
          stereo:   { type: channel-map, channels: 2 }
          out:      { type: jack.sink, client: netjack-speech, connect: \(connect) }
        links:
          - voice -> align -> resample -> fade -> stereo -> out
        playback: { strategy: generate-first, max-buffered: 30 }
        """
    }

    static func readWAV(_ path: String) -> (samples: [Float], rate: Int, channels: Int)? {
        var info = SF_INFO()
        guard let handle = sf_open(path, Int32(SFM_READ), &info) else { return nil }
        defer { sf_close(handle) }
        var samples = [Float](repeating: 0, count: Int(info.frames) * Int(info.channels))
        _ = sf_readf_float(handle, &samples, info.frames)
        return (samples, Int(info.samplerate), Int(info.channels))
    }

    static func waitUntil(seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while !condition() {
            if Date() > deadline { return false }
            usleep(20_000)
        }
        return true
    }

    /// The recorder's two channels interleaved, from their first sound on.
    static func fromFirstSound(_ recorder: JackRecorder) -> [Float] {
        let left = recorder.samples(channel: 0), right = recorder.samples(channel: 1)
        guard let start = left.indices.first(where: { left[$0] != 0 || ($0 < right.count && right[$0] != 0) }) else { return [] }
        var interleaved: [Float] = []
        interleaved.reserveCapacity((left.count - start) * 2)
        for frame in start..<min(left.count, right.count) { interleaved += [left[frame], right[frame]] }
        return interleaved
    }

    @Test("sluice run on the slave speaks into the master: the master's recording equals the offline render, no gaps; latency reported through")
    func slaveToMaster() async {
        await #expect(processExitsWith: .success) {
            let pair = try NetJackPair()
            defer { pair.stop() }
            let folder = TemporaryFolder("sluice-netjack")
            let graph = folder.path("speech.yaml")
            try Self.speechGraph(connect: "auto").write(toFile: graph, atomically: true, encoding: .utf8)

            // The master hears the slave's playback ports as the slave client's from_slave_N.
            let ear = try JackRecorder(server: pair.master.name, clientName: "netjack-ear", channels: 2, capacityFrames: 20 * 48_000)
            defer { ear.stop() }
            try ear.start()
            try ear.connect(from: ["\(pair.slaveClient):from_slave_1", "\(pair.slaveClient):from_slave_2"])

            let reference = folder.path("reference.wav")
            let rendered = try CommandRunner.run(
                "sluice", ["render", graph, "--text", Self.text, "--rate", "48000", "-o", reference], timeout: 60)
            #expect(rendered.status == 0, "\(rendered.standardError)")
            let expected = try #require(Self.readWAV(reference))
            #expect(expected.rate == 48_000 && expected.channels == 2)
            let firstSound = try #require(expected.samples.firstIndex { $0 != 0 }) / 2 * 2
            let wanted = Array(expected.samples[firstSound...])

            // Without real-time scheduling a loaded machine has xruns now and then, and one
            // loses a period on the way; an attempt that differs *and* saw one (on either
            // server) is run again.
            for attempt in 1...Self.attempts {
            ear.discardRecorded()
            let xrunsBefore = ear.xruns
            // `connect: auto` on the slave finds its physical playback ports: the network's.
            let live = try CommandRunner.run(
                "sluice", ["run", graph, "--text", Self.text, "--server", pair.slave.name, "--stats", "json"], timeout: 60)
            #expect(live.status == 0, "\(live.standardError)")
            // The network's latency is reported through: the slave's playback ports carry it.
            let stats = try #require(try JSONSerialization.jsonObject(with: Data(live.standardOutput.utf8)) as? [String: Any])
            let outputLatency = try #require(stats["outputLatency"] as? Double)
            #expect(outputLatency >= Double(pair.latencyCycles * 256) / 48_000, "outputLatency \(outputLatency) s")
            usleep(UInt32(Double(pair.latencyCycles + 4) * 256 / 48_000 * 1e6) + 200_000)
            ear.drain()

            let heard = Self.fromFirstSound(ear)
            let compared = min(heard.count, wanted.count)
            let firstDifference = (0..<compared).first { heard[$0] != wanted[$0] }
            // Either end may lose the period: the master's ear, or the slave's server under
            // the player (its xruns are in the run's stats).
            let xruns = ear.xruns - xrunsBefore + ((stats["xruns"] as? Int) ?? 0)
            if (firstDifference != nil || heard.count < wanted.count) && xruns > 0 && attempt < Self.attempts { continue }
            #expect(heard.count >= wanted.count, "the master heard \(heard.count / 2) frames of \(wanted.count / 2)")
            #expect(firstDifference == nil, "the recording differs from the render at sample \(firstDifference ?? -1) (with \(xruns) xruns)")
            // After the speech, silence: nothing repeated or left over.
            #expect(heard.dropFirst(wanted.count).allSatisfy { $0 == 0 })
            return
            }
        }
    }

    @Test("a jack.source on the slave is fed from the master: what it passes on equals the rendered tone, no gaps")
    func masterToSlave() async {
        await #expect(processExitsWith: .success) {
            let pair = try NetJackPair()
            defer { pair.stop() }
            let folder = TemporaryFolder("sluice-netjack")
            // On the slave: what arrives from the master (its capture ports) is passed through
            // to a recorder of the test's, in the JACK cycle.
            let ear = try JackRecorder(server: pair.slave.name, clientName: "netjack-ear", channels: 1, capacityFrames: 20 * 48_000)
            defer { ear.stop() }
            try ear.start()
            let passThrough = folder.path("pass.yaml")
            try """
                name: netjack-pass
                nodes:
                  in:  { type: jack.source, client: netjack-pass, channels: 1, connect: system:capture_1 }
                  out: { type: jack.sink, client: netjack-pass, connect: netjack-ear:in_1 }
                links:
                  - in -> out
                """.write(toFile: passThrough, atomically: true, encoding: .utf8)
            let slaveSide = Process()
            slaveSide.executableURL = CommandRunner.productsFolder.appendingPathComponent("sluice")
            slaveSide.arguments = ["run", passThrough, "--server", pair.slave.name]
            slaveSide.standardOutput = FileHandle.nullDevice
            try slaveSide.run()
            defer {
                slaveSide.interrupt()
                slaveSide.waitUntilExit()
            }
            let connected = Self.waitUntil(seconds: 10) {
                (try? pair.slave.connections(of: "netjack-ear:in_1"))?.isEmpty == false
            }
            #expect(connected, "the pass-through never connected to the ear")

            let reference = folder.path("tone.wav")
            let rendered = try CommandRunner.run(
                "sluice", ["render", Self.tone + " ! jack.sink connect=none", "--rate", "48000", "-o", reference], timeout: 30)
            #expect(rendered.status == 0, "\(rendered.standardError)")
            let expected = try #require(Self.readWAV(reference)).samples
            let first = try #require(expected.firstIndex { $0 != 0 })
            let wanted = Array(expected[first...])

            for attempt in 1...Self.attempts {
            ear.discardRecorded()
            let xrunsBefore = ear.xruns
            // On the master: a tone into the slave's client port.
            let line = Self.tone + " ! jack.sink client=netjack-tone connect=\(pair.slaveClient):to_slave_1 wait-for-ports=10"
            let played = try CommandRunner.run("sluice", ["launch", line, "--server", pair.master.name], timeout: 30)
            #expect(played.status == 0, "\(played.standardError)")
            usleep(300_000)
            ear.drain()

            let recorded = ear.samples(channel: 0)
            let start = try #require(recorded.firstIndex { $0 != 0 }, "nothing from the master reached the slave's recorder")
            let heard = Array(recorded[start...])
            let difference = (0..<min(heard.count, wanted.count)).first { heard[$0] != wanted[$0] }
            let xruns = ear.xruns - xrunsBefore
            if (difference != nil || heard.count < wanted.count) && xruns > 0 && attempt < Self.attempts { continue }
            #expect(heard.count >= wanted.count)
            #expect(difference == nil, "differs at \(difference ?? -1) (with \(xruns) xruns)")
            return
            }
        }
    }
}
