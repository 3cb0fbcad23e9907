import Foundation
import HTTPTestSupport
import SluiceGraph
import SluicePlugins
import SluiceTestSupport
import Testing

/// The `http-pcm` provider against the loopback test server: templated requests, audio
/// bit-exact through random chunking, every failure typed, nothing hangs.
@Suite struct HTTPPCMProviderTests {
    /// Each utterance's PCM: 0.4 s at 16 kHz, seeded by its text.
    static func speech(_ text: String) -> [UInt8] { Providers.pcm(frames: 6_400, seed: text.utf8.count * 31 + Int(text.utf8.first ?? 0)) }

    static func voice(_ server: HTTPTestServer, _ extra: String = "") -> String {
        """
        type: http-pcm, url: "\(server.baseURL)/v1/speak?voice=amy&text={text-url}", rate: 16000, \
        headers: "Authorization: Bearer {env:SLUICE_TEST_HTTP_PCM_TOKEN}\\nX-Client: sluice-test", \
        body: '{"input": {text-json}, "format": "pcm"}'\(extra.isEmpty ? "" : ", " + extra)
        """
    }

    /// Serves each request the speech for the text in its JSON body.
    static func speechServer(chunks: ClosedRange<Int>, delay: Double = 0, chunked: Bool = false) throws -> HTTPTestServer {
        try HTTPTestServer(seed: UInt64(chunks.upperBound)) { request in
            let text = request.json?["input"] as? String ?? ""
            return .init(body: speech(text), chunkSizes: chunks, delay: delay, chunked: chunked)
        }
    }

    @Test("requests follow the templates and the audio is bit-exact, in random chunks fast or slow, chunked or not", arguments: [
        (1...65_536, 0.0, false), (1...3, 0.0, false), (1...700, 0.002, false), (1...65_536, 0.0, true), (1...5, 0.0, true),
    ])
    func bitExact(_ chunks: ClosedRange<Int>, _ delay: Double, _ chunked: Bool) throws {
        let server = try Self.speechServer(chunks: chunks, delay: delay, chunked: chunked)
        let texts = ["Hello there.", "Ünïcode & \"quotes\"?", "Bye."]
        let (samples, report) = try withEnvironment(["SLUICE_TEST_HTTP_PCM_TOKEN": "tok-123"]) {
            let graph = try Providers.graph(plugin: "http-pcm", voice: Self.voice(server), rate: 16_000)
            return try GraphRendering.render(graph, text: texts)
        }
        #expect(report.failures.isEmpty)
        expectSame(samples, texts.flatMap { Providers.floats(Self.speech($0)) })
        let requests = server.requests
        #expect(requests.count == 3)
        for (request, text) in zip(requests, texts) {
            #expect(request.method == "POST")
            #expect(request.path == "/v1/speak")
            #expect(request.queryValue("voice") == "amy")
            #expect(request.queryValue("text")?.removingPercentEncoding == text)
            #expect(request.headers["authorization"] == "Bearer tok-123")
            #expect(request.headers["x-client"] == "sluice-test")
            #expect(request.json?["input"] as? String == text)
            #expect(request.json?["format"] as? String == "pcm")
        }
        #expect(report.counters["voice.requests"] == 3)
        #expect(report.counters["voice.received-bytes"] == texts.map { Self.speech($0).count }.reduce(0, +))
    }

    /// Two utterances; the second is answered by `failure`. Returns the samples, the report and
    /// how many bytes of the second utterance were served.
    func failing(_ failure: HTTPTestServer.Reply, extra: String = "") throws -> ([Float], RunReport, HTTPTestServer) {
        let server = try HTTPTestServer { request in
            let text = request.json?["input"] as? String ?? ""
            return text == "first" ? .init(body: Self.speech(text), chunkSizes: 1...4_096) : failure
        }
        let (samples, report) = try withEnvironment(["SLUICE_TEST_HTTP_PCM_TOKEN": "tok-secret-77"]) {
            let graph = try Providers.graph(
                plugin: "http-pcm", voice: Self.voice(server, "retries: 2, retry-delay: 0.01, stall-timeout: 0.3\(extra)"),
                rate: 16_000, fade: 256)
            return try GraphRendering.render(graph, text: ["first", "second"])
        }
        return (samples, report, server)
    }

    /// The audio before a failure plays, faded out over the fader's 256 frames; nothing after.
    func expectFadedTail(_ samples: [Float], received: [Float]) {
        #expect(samples.count == received.count)
        guard samples.count == received.count, samples.count > 600 else { return }
        // Between the fade-in and the fade-out, bit-exact.
        expectSame(Array(samples[256..<(samples.count - 256)]), Array(received[256..<(received.count - 256)]))
        // The tail falls to silence instead of stopping on a full-scale sample (a click).
        for index in (samples.count - 256)..<samples.count {
            #expect(abs(samples[index]) <= abs(received[index]) + 1e-6)
        }
        #expect(abs(samples.last!) < 0.001)
    }

    @Test("an error status becomes its typed error; retryable ones are retried, boundedly", arguments: [
        (401, "invalid-key", 1), (403, "invalid-key", 1), (429, "rate-limited", 3), (500, "server-error", 1), (404, "http-404", 1),
    ])
    func statusErrors(_ status: Int, _ code: String, _ attempts: Int) throws {
        let (samples, report, server) = try failing(.error(status, json: #"{"error": "no: tok-secret-77"}"#))
        #expect(report.failureCodes["voice"] == code)
        #expect(report.failures.count == 1)
        #expect(!report.failures[0].contains("tok-secret-77"), "the key leaked: \(report.failures[0])")
        #expect(server.requests.count == 1 + attempts)
        #expect(report.counters["voice.retries"] == attempts - 1)
        expectFadedTail(samples, received: Providers.floats(Self.speech("first")))
    }

    @Test("a connection dropped mid-stream or a stalled transfer is typed; what arrived plays out faded", arguments: [
        (HTTPTestServer.Ending.drop(afterBytes: 5_001), false, "connection-lost", 5_000),
        (.drop(afterBytes: 4_001), true, "connection-lost", 4_000),
        (.stall(afterBytes: 3_000), false, "stalled", 3_000),
    ])
    func brokenTransfer(_ ending: HTTPTestServer.Ending, _ chunked: Bool, _ code: String, _ wholeFrameBytes: Int) throws {
        let second = Self.speech("second")
        let (samples, report, _) = try failing(.init(body: second, chunkSizes: 1...1_000, ending: ending, chunked: chunked))
        #expect(report.failureCodes["voice"] == code)
        // An odd byte at the break is a partial frame: the aligner drops it. A stall is
        // abandoned after stall-timeout (0.3 s here).
        expectFadedTail(samples, received: Providers.floats(Self.speech("first") + second.prefix(wholeFrameBytes)))
    }

    @Test("a server that trickles a frame at a time, inside the stall timeout, is cut off at utterance-timeout; what came plays out")
    func trickleForever() throws {
        // One 16 kHz frame every 0.1 s (stall-timeout is 0.3 s): 10 s of audio would take
        // more than two hours.
        let endless = Providers.pcm(frames: 160_000, seed: 11)
        let (samples, report, server) = try failing(
            .init(body: endless, chunkSizes: 2...2, delay: 0.1), extra: ", utterance-timeout: 1")
        #expect(report.failureCodes["voice"] == "utterance-timeout", "\(report.failures)")
        #expect(report.failures.first?.contains("took more than 1 s (utterance-timeout") == true, "\(report.failures)")
        let first = Providers.floats(Self.speech("first"))
        #expect(samples.count >= first.count && samples.count < first.count + 40, "\(samples.count) samples")
        #expect((server.replies.last?.bytesSent ?? .max) < 100, "the transfer was not cut short")
    }

    @Test("a server that sends audio on and on is stopped at max-utterance: 'utterance-too-long', what fits plays out faded")
    func audioForever() throws {
        // 1 s of 16 kHz audio allowed per utterance; for the second the server offers 10 s,
        // paced so it is still sending when the limit is reached.
        let endless = Providers.pcm(frames: 160_000, seed: 9)
        let (samples, report, server) = try failing(
            .init(body: endless, chunkSizes: 1_000...1_000, delay: 0.001), extra: ", max-utterance: 1")
        #expect(report.failureCodes["voice"] == "utterance-too-long")
        #expect(report.failures.first?.contains("more than 1.0 s of audio for one utterance of 6 characters") == true, "\(report.failures)")
        expectFadedTail(samples, received: Providers.floats(Self.speech("first") + endless.prefix(16_000 * 2)))
        #expect((server.replies.last?.bytesSent ?? .max) < endless.count, "the transfer was not cut short")
    }

    @Test("no server listening is 'connect-failed', promptly")
    func noServer() throws {
        let closed = try HTTPTestServer { _ in .init(body: []) }
        let url = closed.baseURL
        closed.stop()
        Thread.sleep(forTimeInterval: 0.05)
        let graph = try Providers.graph(plugin: "http-pcm", voice: "type: http-pcm, url: \"\(url)/x\", rate: 16000, connect-timeout: 2", rate: 16_000)
        let (samples, report) = try GraphRendering.render(graph, text: ["hi"])
        #expect(samples.isEmpty)
        #expect(report.failureCodes["voice"] == "connect-failed")
    }

    @Test("cancel aborts a slow transfer at once and the render ends")
    func cancel() throws {
        let server = try HTTPTestServer { _ in .init(body: Providers.pcm(frames: 160_000), chunkSizes: 100...100, delay: 0.01) }
        let graph = try Providers.graph(
            plugin: "http-pcm", voice: "type: http-pcm, url: \"\(server.baseURL)/x\", rate: 16000", rate: 16_000,
            playback: "playback: { strategy: buffered, watermark: 0.05 }")
        for source in graph.textSources {
            source.receive(text: "long")
            source.finishText()
        }
        let renderer = try OfflineRenderer(graph: graph)
        var rendered = 0
        renderer.output = { _, buffer in
            rendered += buffer.count
            if rendered >= 1_600 { renderer.cancel() }
        }
        let report = try renderer.run()
        #expect(report.cancelled)
        // 10 s of audio at 100 bytes per 10 ms would take 32 s to arrive; cancelled long before.
        #expect(server.replies.first.map { $0.bytesSent < 320_000 } ?? true)
    }

    @Test("a missing {env:…} variable is refused at compile time, naming the node")
    func missingEnvironment() throws {
        #expect {
            _ = try Providers.graph(
                plugin: "http-pcm", voice: "type: http-pcm, url: \"http://127.0.0.1:1/x?k={env:SLUICE_TEST_UNSET_VARIABLE}\"", rate: 16_000)
        } throws: { error in
            "\(error)".contains("SLUICE_TEST_UNSET_VARIABLE is not set") && "\(error)".contains("voice")
        }
    }
}
