import Foundation
import HTTPTestSupport
import SluiceGraph
import SluicePlugins
import Testing

/// Backpressure reaches the network: a server streams ten minutes of audio as fast as loopback
/// allows into a graph consuming it on the offline driver's clock. The provider holds at most
/// its `buffer` (libcurl's transfer pauses), and the server's sends block until the graph has
/// played most of the stream.
@Suite struct BackpressureTests {
    static let rate = 24_000
    static let seconds = 600

    /// Sample n of the stream, as S16LE: generated on the fly on both sides.
    static func sample(_ frame: Int) -> Int16 { Int16(truncatingIfNeeded: frame &* 40_503 >> 5) }

    @Test("ten minutes streamed fast: memory stays bounded, the server sees the transfer slow down")
    func tenMinutes() throws {
        let frames = Self.rate * Self.seconds
        var body = [UInt8](repeating: 0, count: frames * 2)
        for frame in 0..<frames {
            let value = UInt16(bitPattern: Self.sample(frame))
            body[2 * frame] = UInt8(value & 0xFF)
            body[2 * frame + 1] = UInt8(value >> 8)
        }
        let stream = body
        // A small send buffer, so the server feels a pause soon rather than after the kernel's
        // autotuned megabytes.
        let server = try HTTPTestServer(sendBufferBytes: 64 << 10) { _ in .init(body: stream, chunkSizes: 1...65_536) }
        let graph = try Providers.graph(
            plugin: "http-pcm", voice: "type: http-pcm, url: \"\(server.baseURL)/stream\", rate: \(Self.rate), buffer: 1",
            rate: Self.rate)
        for source in graph.textSources {
            source.receive(text: "ten minutes")
            source.finishText()
        }
        let renderer = try OfflineRenderer(graph: graph)
        var played = 0
        var mismatches = 0
        var halfPlayedAt: Double?
        renderer.output = { _, buffer in
            for sample in buffer {
                if sample != Float(Self.sample(played)) / 32768 { mismatches += 1 }
                played += 1
            }
            if halfPlayedAt == nil && played >= frames / 2 { halfPlayedAt = HTTPTestServer.now() }
        }
        let report = try renderer.run()
        let counters = report.counters
        #expect(report.failures.isEmpty, "\(report.failures)")
        #expect(played == frames)
        #expect(mismatches == 0)

        // Bounded memory: never more than the buffer (1 s = 48,000 bytes, raised to the
        // 64 KiB minimum), whatever the network offered.
        let capacity = try #require(counters["voice.buffer-bytes"])
        #expect(capacity == 65_536)
        #expect(try #require(counters["voice.peak-buffered-bytes"]) <= capacity)
        #expect(try #require(counters["voice.pauses"]) > 0)
        #expect(counters["voice.received-bytes"] == frames * 2)

        // The server could not send faster than the graph played: its last byte left only
        // after half of the audio had been played (unthrottled, all 28.8 MB leave loopback in
        // a few dozen milliseconds, long before).
        let reply = try #require(server.replies.first)
        let finished = try #require(reply.finished)
        let half = try #require(halfPlayedAt)
        #expect(finished > half, "the server finished \(half - finished) s before half the audio played")
        #expect(reply.blockedSeconds > 0)
    }
}
