import Foundation
import SluiceAudio
import SluiceGraph
import SluicePlugins
import SluiceTestKit
import SluiceTestSupport
import Synchronization
import Testing

/// The test plugin written in Swift with SluicePluginKit (Tests/Fixtures/Plugins/swift-test), loaded
/// through the loader and run in graphs.
@Suite struct SwiftKitPluginTests {
    static func library() throws -> PluginLibrary { try PluginLibrary.load(path: Plugins.swiftTest) }

    /// Frame n of a test-pcm utterance, as the aligner turns it into Float32.
    static func sample(_ frame: Int) -> Float { Float((frame * 37) % 2000 - 1000) / 32768 }

    static func expectedSpeech(_ utterances: [String]) -> [Float] {
        utterances.flatMap { text in (0..<100 * text.utf8.count).map(sample) }
    }

    static func speechGraph(_ voice: String) -> String {
        """
        name: speech
        nodes:
          voice: { type: test-pcm, \(voice) }
          align: { type: aligner }
          out:   { type: null.sink, rate: 16000, channels: 1 }
        links:
          - voice -> align -> out
        """
    }

    @Test("both node types are listed with their kinds")
    func listed() throws {
        let library = try Self.library()
        #expect(library.nodeTypes.map(\.descriptor.typeName) == ["test-gain", "test-pcm"])
        #expect(library.nodeTypes.map(\.kind) == [.processor, .provider])
        let pcm = library.nodeTypes[1].descriptor
        #expect(pcm.kind == .source)
        #expect(pcm.outputs.map(\.medium) == [.bytes])
        #expect(pcm.parameter(named: "stutter")?.defaultValue == .boolean(false))
        #expect(pcm.parameter(named: "chunk")?.type == .integer(1...65_536))
    }

    @Test("a Swift processor in a graph: test-gain halves a tone exactly")
    func processor() throws {
        let library = try Self.library()
        let tone = "name: t\nnodes:\n  a: { type: tone, frequency: 440, duration: 0.5, rate: 48000, channels: 2 }\n"
        let plain = try Plugins.compile(tone + "  out: { type: null.sink, rate: 48000, channels: 2 }\nlinks:\n  - a -> out\n", libraries: [library])
        let halved = try Plugins.compile(
            tone + "  g: { type: test-gain, gain: 0.5 }\n  out: { type: null.sink, rate: 48000, channels: 2 }\nlinks:\n  - a -> g -> out\n",
            libraries: [library])
        let (reference, _) = try GraphRendering.render(plain)
        let (samples, _) = try GraphRendering.render(halved)
        #expect(reference.count == 48_000)
        #expect(samples == reference.map { $0 * 0.5 })
    }

    @Test("a Swift provider in a graph: known PCM per utterance, served in odd chunks with would-block", arguments: [
        "chunk: 101, stutter: true", "chunk: 4096", "chunk: 1",
    ])
    func provider(_ voice: String) throws {
        let graph = try Plugins.compile(Self.speechGraph(voice), libraries: [try Self.library()])
        let (samples, report) = try GraphRendering.render(graph, text: ["hello", "hi", "héllo"])
        #expect(samples == Self.expectedSpeech(["hello", "hi", "héllo"]))
        #expect(report.failures.isEmpty)
        #expect(report.droppedPartialFrames == 0)
        // The provider's own counter (get_counters) reaches the run's report.
        #expect(report.counters["voice.bytes-read"] == 2 * 100 * (5 + 2 + 6))
    }

    @Test("text handed over piece by piece makes the same audio as whole utterances")
    func incrementalText() throws {
        let graph = try Plugins.compile(Self.speechGraph("chunk: 333"), libraries: [try Self.library()])
        let voice = try #require(graph.nodes.first { $0.name == "voice" }?.instance as? PluginProviderSource)
        voice.beginUtterance()
        for token in ["Hel", "lo, ", "wor", "ld"] { voice.push(text: token) }
        voice.endUtterance()
        voice.receive(text: "ok")
        voice.finishText()
        let renderer = try OfflineRenderer(graph: graph)
        var samples: [Float] = []
        renderer.output = { _, buffer in samples += buffer }
        _ = try renderer.run()
        #expect(samples == Self.expectedSpeech(["Hello, world", "ok"]))
    }

    @Test("utterance markers sit at the byte positions the reads imply")
    func markers() throws {
        let graph = try Plugins.compile(Self.speechGraph("chunk: 300"), libraries: [try Self.library()])
        let voice = try #require(graph.nodes.first { $0.name == "voice" }?.instance as? PluginProviderSource)
        #expect(voice.format == PCMFormat(.s16le, channels: 1, sampleRate: 16_000))
        voice.receive(text: "hello")  // 500 frames: 1000 bytes
        voice.receive(text: "hi")     // 200 frames: 400 bytes
        voice.finishText()
        let ports = NodePorts(inputs: [], outputs: [.bytes(voice.format)])
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 4096, alignment: 8)
        defer { buffer.deallocate() }
        var markers: [Marker] = []
        var bytes = 0
        var finished = false
        for _ in 0..<100 where !finished {
            ports.setOutput(0, base: buffer, units: 4096)
            var io = ProcessIO(ports)
            if case .finished = voice.produce(&io, at: 0) { finished = true }
            bytes += ports.produced(output: 0)
            for index in 0..<ports.markerCount(output: 0) { markers.append(ports.marker(index, output: 0)) }
            ports.removeMarkers(output: 0)
        }
        #expect(finished)
        #expect(bytes == 1400)
        // Each start is followed by the utterance's UTF-8 range in the text laid end to end.
        #expect(markers == [
            Marker(position: 0, event: .utteranceStart(UtteranceID(0))),
            Marker(position: 0, event: .textSpan(TextSpan(utterance: UtteranceID(0), start: 0, end: 5))),
            Marker(position: 1000, event: .utteranceEnd(UtteranceID(0))),
            Marker(position: 1000, event: .utteranceStart(UtteranceID(1))),
            Marker(position: 1000, event: .textSpan(TextSpan(utterance: UtteranceID(1), start: 5, end: 7))),
            Marker(position: 1400, event: .utteranceEnd(UtteranceID(1))),
        ])
    }

    /// Reads `voice` to its end in 4 KiB calls: the bytes and the markers.
    static func drain(_ voice: PluginProviderSource, calls: Int = 200) -> (bytes: [UInt8], markers: [Marker], finished: Bool) {
        let ports = NodePorts(inputs: [], outputs: [.bytes(voice.format)])
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 4096, alignment: 8)
        defer { buffer.deallocate() }
        var bytes: [UInt8] = []
        var markers: [Marker] = []
        var finished = false
        for _ in 0..<calls where !finished {
            ports.setOutput(0, base: buffer, units: 4096)
            var io = ProcessIO(ports)
            if case .finished = voice.produce(&io, at: 0) { finished = true }
            bytes += UnsafeRawBufferPointer(start: buffer, count: ports.produced(output: 0))
            for index in 0..<ports.markerCount(output: 0) { markers.append(ports.marker(index, output: 0)) }
            ports.removeMarkers(output: 0)
        }
        return (bytes, markers, finished)
    }

    /// An in-memory `UtteranceAudioCache` that counts what it was asked.
    final class MemoryCache: UtteranceAudioCache, @unchecked Sendable {
        let entries = Mutex<[String: [UInt8]]>([:])
        func audio(for text: String, format: PCMFormat) -> [UInt8]? { entries.withLock { $0[text] } }
        func store(_ audio: [UInt8], for text: String, format: PCMFormat) { entries.withLock { $0[text] = audio } }
    }

    @Test("with a cache: stored utterances play their stored bytes and never reach the plugin; new ones are stored")
    func cachedUtterances() throws {
        let cache = MemoryCache()
        let stored: [UInt8] = Array(0..<77)
        cache.store(stored, for: "hi", format: PCMFormat(.s16le, channels: 1, sampleRate: 16_000))
        let graph = try Plugins.compile(Self.speechGraph("chunk: 300"), libraries: [try Self.library()])
        let voice = try #require(graph.nodes.first { $0.name == "voice" }?.instance as? PluginProviderSource)
        voice.useCache(cache)
        voice.receive(text: "hi", at: 0)      // stored: 77 bytes, from the cache
        voice.receive(text: "hello", at: 3)   // synthesised: 1000 bytes, then stored
        voice.receive(text: "hi", at: 9)      // stored again
        voice.finishText()
        let (bytes, markers, finished) = Self.drain(voice)
        #expect(finished)
        let hello = (0..<1000).map { byte -> UInt8 in
            let value = UInt16(bitPattern: Int16((byte / 2 * 37) % 2000 - 1000))
            return byte % 2 == 0 ? UInt8(value & 0xFF) : UInt8(value >> 8)
        }
        #expect(bytes == stored + hello + stored)
        #expect(markers.filter { if case .utteranceEnd = $0.event { true } else { false } }.map(\.position) == [77, 1077, 1154])
        #expect(markers.contains(Marker(position: 77, event: .textSpan(TextSpan(utterance: UtteranceID(1), start: 3, end: 8)))))
        // The plugin read only "hello"; its audio is now stored under its text.
        #expect(voice.counters()["bytes-read"] == 1000)
        #expect(cache.audio(for: "hello", format: voice.format) == hello)
    }

    @Test("a provider declaring incremental text says so; one that does not, does not")
    func incrementalCapability() throws {
        let incremental = try Plugins.compile(Self.speechGraph("incremental: true"), libraries: [try Self.library()])
        let whole = try Plugins.compile(Self.speechGraph("chunk: 100"), libraries: [try Self.library()])
        let voice = try #require(incremental.nodes.first { $0.name == "voice" }?.instance as? PluginProviderSource)
        #expect(voice.acceptsIncrementalText)
        #expect((whole.nodes.first { $0.name == "voice" }?.instance as? PluginProviderSource)?.acceptsIncrementalText == false)
        // Pushed text is spoken before its utterance ends, and the span grows with it: the
        // final span follows at the utterance's end.
        voice.beginUtterance(at: 10)
        voice.push(text: "ab")
        var (bytes, markers, _) = Self.drain(voice, calls: 5)
        #expect(bytes.count == 400)
        #expect(markers == [
            Marker(position: 0, event: .utteranceStart(UtteranceID(0))),
            Marker(position: 0, event: .textSpan(TextSpan(utterance: UtteranceID(0), start: 10, end: 12))),
        ])
        voice.push(text: "c")
        voice.endUtterance()
        voice.finishText()
        (bytes, markers, _) = Self.drain(voice)
        #expect(bytes.count == 200)
        #expect(markers == [
            Marker(position: 600, event: .textSpan(TextSpan(utterance: UtteranceID(0), start: 10, end: 13))),
            Marker(position: 600, event: .utteranceEnd(UtteranceID(0))),
        ])
    }

    @Test("a provider's typed error ends the stream and is reported; what came before plays")
    func providerError() throws {
        let graph = try Plugins.compile(Self.speechGraph("chunk: 100, fail-after: 300"), libraries: [try Self.library()])
        let (samples, report) = try GraphRendering.render(graph, text: ["hello"])
        #expect(report.failures == ["voice: failed after 300 bytes, as asked"])
        #expect(samples.count == 150)
    }

    @Test("a processor refusing its format at activate fails the run with its message")
    func activateError() throws {
        let graph = try Plugins.compile("""
            name: t
            nodes:
              a:   { type: tone, duration: 0.1, rate: 48000, channels: 2 }
              g:   { type: test-gain, channels: 1 }
              out: { type: null.sink, rate: 48000, channels: 2 }
            links:
              - a -> g -> out
            """, libraries: [try Self.library()])
        #expect {
            _ = try GraphRendering.render(graph)
        } throws: { error in
            "\(error)".contains("test-gain was set to 1 channels, got 2")
        }
    }

    @Test("a Swift processor gets its live changes and the markers as events (ProcessBlock.events), at their frames")
    func events() throws {
        let node = try Plugins.processor("test-gain", from: Plugins.swiftTest, NodeParameters(["gate": .boolean(true)]))
        #expect(try Self.library().nodeTypes[0].descriptor.parameters.filter(\.isLive).map(\.name) == ["gain"])
        let live = try #require(node as? any LiveParameterNode)
        let bench = try NodeTestBench(node, inputs: [.frames(rate: 48_000, channels: 2)], seed: 8, inputBlocks: 1...150, outputBlocks: 0...150)
        // Gated off from an utterance's end to the next start, on the markers it hears of.
        bench.feed([Float](repeating: 1, count: 2 * 1_000), markers: [
            Marker(position: 0, event: .utteranceStart(UtteranceID(0))),
            Marker(position: 300, event: .utteranceEnd(UtteranceID(0))),
            Marker(position: 600, event: .utteranceStart(UtteranceID(1))),
        ])
        bench.run()
        live.apply(ParameterChange(parameter: 0, value: 0.5))  // from frame 1000, as the slot does
        bench.feed([Float](repeating: 1, count: 2 * 500))
        bench.run()
        #expect(bench.violations.isEmpty)
        let output = bench.output()
        #expect(output.count == 2 * 1_500)
        #expect(output[..<(2 * 300)].allSatisfy { $0 == 1 })
        #expect(output[(2 * 300)..<(2 * 600)].allSatisfy { $0 == 0 }, "silent between the utterances")
        #expect(output[(2 * 600)..<(2 * 1_000)].allSatisfy { $0 == 1 })
        #expect(output[(2 * 1_000)...].allSatisfy { $0 == 0.5 }, "the change applies from frame 1000")
    }

    @Test("an unknown plugin type in a graph gets the usual hint")
    func unknownType() throws {
        do {
            _ = try Plugins.compile(Self.speechGraph("chunk: 1").replacingOccurrences(of: "test-pcm", with: "test-pcn"), libraries: [try Self.library()])
            Issue.record("accepted")
        } catch let diagnostics as GraphDiagnostics {
            #expect(diagnostics.description.contains("test-pcm"), "\(diagnostics)")
        }
    }
}
