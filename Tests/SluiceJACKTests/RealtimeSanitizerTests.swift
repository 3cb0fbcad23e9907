import Foundation
import JackTestSupport
import SluiceTestSupport
import Testing

/// jack.sink's process callback under clang's RealtimeSanitizer: the probe (linked with the
/// RTSan runtime, see Package.swift) plays the speech chain into the test server with
/// real-time context entered around every callback; any allocation, lock or blocking call in
/// it is a report and a non-zero exit.
@Suite struct RealtimeSanitizerTests {
    static let probe = "RealtimeSanitizerProbe"
    static let input = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("graphs/audio/hello-24k.s16").path

    @Test func theSanitizerIsWatching() throws {
        let outcome = try CommandRunner.run(Self.probe, ["--self-test"], timeout: 60)
        #expect(outcome.status != 0)
        #expect(outcome.standardError.contains("RealtimeSanitizer: unsafe-library-call"))
        #expect(outcome.standardError.contains("`malloc` in real-time context"))
    }

    /// The probe's summary: "played S s in C callbacks under RealtimeSanitizer, N nodes in the
    /// cycle, hooks entered H times".
    static func figures(_ output: String) -> (callbacks: Int, inCycle: Int, entries: Int)? {
        let words = output.split(separator: " ")
        func number(before word: String) -> Int? {
            guard let index = words.firstIndex(where: { $0.hasPrefix(word) }), index > 0 else { return nil }
            return Int(words[index - 1])
        }
        guard let callbacks = number(before: "callbacks"), let nodes = number(before: "nodes"),
              let entries = number(before: "times") else { return nil }
        return (callbacks, nodes, entries)
    }

    @Test("the speech chain's callback, with the nodes on the worker (boundary: sink) and in the cycle (boundary: source)",
          arguments: ["sink", "source"])
    func theProcessCallbackIsRealtimeSafe(boundary: String) throws {
        let server = try JackTestServer.shared()
        let outcome = try CommandRunner.run(Self.probe, [server.name, Self.input, "--boundary", boundary], timeout: 60)
        #expect(!outcome.standardError.contains("RealtimeSanitizer"), "\(outcome.standardError.prefix(4000))")
        #expect(outcome.status == 0)
        #expect(outcome.standardOutput.hasPrefix("played 1.27"))
        let figures = try #require(Self.figures(outcome.standardOutput), "\(outcome.standardOutput)")
        // Every callback entered the real-time context (the hooks ran, so RTSan watched).
        #expect(figures.entries == figures.callbacks)
        #expect(figures.inCycle == (boundary == "source" ? 6 : 1))
    }

    @Test("the live chain's callback: capture, fader and playback in one cycle")
    func theLiveChainIsRealtimeSafe() throws {
        let server = try JackTestServer.shared()
        let outcome = try CommandRunner.run(Self.probe, [server.name, "--live-chain", "1.5"], timeout: 60)
        #expect(!outcome.standardError.contains("RealtimeSanitizer"), "\(outcome.standardError.prefix(4000))")
        #expect(outcome.status == 0)
        let figures = try #require(Self.figures(outcome.standardOutput), "\(outcome.standardOutput)")
        #expect(figures.entries == figures.callbacks)
        #expect(figures.inCycle == 3)
    }

    @Test("the direct section's callback: mono nodes on the ports' buffers, stereo through the section's own")
    func theDirectSectionIsRealtimeSafe() throws {
        let server = try JackTestServer.shared()
        let outcome = try CommandRunner.run(Self.probe, [server.name, "--direct-chains", "1.5"], timeout: 60)
        #expect(!outcome.standardError.contains("RealtimeSanitizer"), "\(outcome.standardError.prefix(4000))")
        #expect(outcome.status == 0)
        let figures = try #require(Self.figures(outcome.standardOutput), "\(outcome.standardOutput)")
        #expect(figures.entries == figures.callbacks)
        #expect(figures.inCycle == 6)
    }

    @Test("hosted plugins in the cycle: an LV2 and a LADSPA plugin between capture and playback")
    func hostedPluginsAreRealtimeSafe() throws {
        let server = try JackTestServer.shared()
        let outcome = try CommandRunner.run(Self.probe, [server.name, "--hosted-chains", "1.5"], timeout: 60)
        #expect(!outcome.standardError.contains("RealtimeSanitizer"), "\(outcome.standardError.prefix(4000))")
        #expect(outcome.status == 0)
        let figures = try #require(Self.figures(outcome.standardOutput), "\(outcome.standardOutput)")
        #expect(figures.entries == figures.callbacks)
        #expect(figures.inCycle == 4)
    }

    @Test("an LV2 plugin's worker: the response handed over in the cycle, the convolver's render, under RealtimeSanitizer")
    func lv2WorkerIsRealtimeSafe() throws {
        let folder = TemporaryFolder("sluice-rtsan-lv2")
        var response = [Float](repeating: 0, count: 4_096)
        for index in response.indices {
            let time = Double(index)
            response[index] = Float(0.5 * sin(time * 0.01) * exp(-time / 800))
        }
        try WAVFile.write(response, channels: 1, rate: 48_000, to: folder.path("ir.wav"))
        _ = try folder.write("""
            @prefix lv2: <http://lv2plug.in/ns/lv2core#> .
            @prefix pset: <http://lv2plug.in/ns/ext/presets#> .
            @prefix state: <http://lv2plug.in/ns/ext/state#> .
            <> a pset:Preset ; lv2:appliesTo <http://gareus.org/oss/lv2/zeroconvolv#Mono> ;
               state:state [ <http://gareus.org/oss/lv2/zeroconvolv#ir> <ir.wav> ] .
            """, to: "state.ttl")
        let outcome = try CommandRunner.run(Self.probe, ["--lv2-worker", folder.path("state.ttl")], timeout: 60)
        #expect(!outcome.standardError.contains("RealtimeSanitizer"), "\(outcome.standardError.prefix(4000))")
        #expect(outcome.status == 0, "\(outcome.standardOutput) \(outcome.standardError.prefix(2000))")
        #expect(outcome.standardOutput.contains("rendered 200 blocks"), "\(outcome.standardOutput)")
    }
}
