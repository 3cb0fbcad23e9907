import Foundation
import HTTPTestSupport
import SluiceGraph
import SluicePlugins
import SluiceTestSupport
import Synchronization
import Testing

/// The `openai` provider against a loopback server that checks requests as OpenAI's API
/// reference describes POST /v1/audio/speech (bearer key, JSON with model, input, voice,
/// response_format pcm, speed) and answers 24 kHz S16LE PCM or the API's error bodies.
@Suite struct OpenAIProviderTests {
    static let key = "sk-test-0a1b2c3d"

    static func speech(_ text: String) -> [UInt8] { Providers.pcm(frames: 4_800, seed: 3 * text.utf8.count) }

    static func render(_ server: HTTPTestServer, keyEnv: String?, extra: String = "", text: [String]) throws -> ([Float], RunReport) {
        let voice = "type: openai, base-url: \"\(server.baseURL)\", key-env: \(keyEnv ?? "SLUICE_TEST_OPENAI_NONE"), retry-delay: 0.01"
            + (extra.isEmpty ? "" : ", " + extra)
        return try withEnvironment(keyEnv.map { [$0: key] } ?? [:]) {
            try GraphRendering.render(try Providers.graph(plugin: "openai", voice: voice, rate: 24_000), text: text)
        }
    }

    @Test("the request is the API's and the PCM arrives bit-exact")
    func request() throws {
        let server = try HTTPTestServer { request in
            guard request.method == "POST", request.path == "/v1/audio/speech",
                request.headers["authorization"] == "Bearer \(Self.key)", request.headers["content-type"] == "application/json",
                let body = request.json, body["response_format"] as? String == "pcm"
            else { return .error(400, json: #"{"error": {"message": "bad request", "type": "invalid_request_error"}}"#) }
            return .init(body: Self.speech(body["input"] as? String ?? ""), chunkSizes: 1...5_000)
        }
        let texts = ["One.", "Two, three."]
        let (samples, report) = try Self.render(
            server, keyEnv: "SLUICE_TEST_OPENAI_KEY_1", extra: "model: tts-1, voice: nova, speed: 1.25, instructions: Calm.", text: texts)
        #expect(report.failures.isEmpty, "\(report.failures)")
        expectSame(samples, texts.flatMap { Providers.floats(Self.speech($0)) })
        let body = try #require(server.requests.first?.json)
        #expect(body["model"] as? String == "tts-1")
        #expect(body["voice"] as? String == "nova")
        #expect(body["input"] as? String == "One.")
        #expect(body["speed"] as? Double == 1.25)
        #expect(body["instructions"] as? String == "Calm.")
    }

    @Test("a local server needs no key: no Authorization header is sent")
    func localServerWithoutKey() throws {
        let server = try HTTPTestServer { request in
            request.headers["authorization"] == nil ? .init(body: Self.speech("hi")) : .error(400, json: "{}")
        }
        let (samples, report) = try Self.render(server, keyEnv: nil, text: ["hi"])
        #expect(report.failures.isEmpty, "\(report.failures)")
        expectSame(samples, Providers.floats(Self.speech("hi")))
    }

    @Test("each API error becomes its typed error; the key never shows", arguments: [
        (401, #"{"error": {"message": "Incorrect API key provided: sk-test-0a1b2c3d.", "type": "invalid_request_error", "code": "invalid_api_key"}}"#, "invalid-key", 1),
        (429, #"{"error": {"message": "You exceeded your current quota.", "type": "insufficient_quota", "code": "insufficient_quota"}}"#, "quota-exceeded", 1),
        (429, #"{"error": {"message": "Rate limit reached.", "type": "requests", "code": "rate_limit_exceeded"}}"#, "rate-limited", 4),
        (500, #"{"error": {"message": "The server had an error.", "type": "server_error"}}"#, "server-error", 1),
    ])
    func errors(_ status: Int, _ body: String, _ code: String, _ requests: Int) throws {
        let server = try HTTPTestServer { _ in .error(status, json: body) }
        let (samples, report) = try Self.render(server, keyEnv: "SLUICE_TEST_OPENAI_KEY_2_\(code.count)_\(requests)", text: ["hello"])
        #expect(samples.isEmpty)
        #expect(report.failureCodes["voice"] == code)
        #expect(server.requests.count == requests)
        #expect(!report.failures.joined().contains(Self.key), "\(report.failures)")
    }

    @Test("the official endpoint without a key is refused at compile time")
    func missingKey() throws {
        #expect {
            _ = try Providers.graph(plugin: "openai", voice: "type: openai, key-env: SLUICE_TEST_OPENAI_UNSET", rate: 24_000)
        } throws: { error in
            "\(error)".contains("set SLUICE_TEST_OPENAI_UNSET")
        }
    }
}
