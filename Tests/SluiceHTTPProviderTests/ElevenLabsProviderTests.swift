import Foundation
import HTTPTestSupport
import SluiceGraph
import SluicePlugins
import SluiceTestSupport
import Synchronization
import Testing

/// The `elevenlabs` provider against a loopback server that checks requests the way
/// ElevenLabs' API reference describes them (POST /v1/text-to-speech/{voice_id}/stream,
/// `output_format` in the query, `xi-api-key`, a JSON body) and fails on cue with the API's
/// error bodies.
@Suite struct ElevenLabsProviderTests {
    static let key = "el-test-key-5f2b9"

    static func speech(_ text: String) -> [UInt8] { Providers.pcm(frames: 4_410, seed: text.utf8.count) }

    static func voice(_ server: HTTPTestServer, keyEnv: String, _ extra: String = "") -> String {
        "type: elevenlabs, transport: http, base-url: \"\(server.baseURL)\", key-env: \(keyEnv), voice: voice-7, retry-delay: 0.01"
            + (extra.isEmpty ? "" : ", " + extra)
    }

    /// Whether `request` is a well-formed streaming request; a 400 with the reason otherwise.
    static func check(_ request: HTTPTestServer.Request, format: String) -> String? {
        guard request.method == "POST" else { return "method \(request.method)" }
        guard request.path == "/v1/text-to-speech/voice-7/stream" else { return "path \(request.path)" }
        guard request.queryValue("output_format") == format else { return "output_format \(request.query)" }
        guard request.headers["xi-api-key"] == key else { return "xi-api-key" }
        guard request.headers["content-type"] == "application/json" else { return "content-type" }
        guard request.json?["text"] is String, request.json?["model_id"] is String else { return "body" }
        return nil
    }

    static func render(_ server: HTTPTestServer, keyEnv: String, extra: String = "", rate: Int = 24_000, text: [String], fade: Int? = nil) throws -> ([Float], RunReport) {
        try withEnvironment([keyEnv: key]) {
            let graph = try Providers.graph(plugin: "elevenlabs", voice: voice(server, keyEnv: keyEnv, extra), rate: rate, fade: fade)
            return try GraphRendering.render(graph, text: text)
        }
    }

    @Test("the request is the API's, voice settings included, and the PCM arrives bit-exact")
    func request() throws {
        let server = try HTTPTestServer { request in
            if let problem = Self.check(request, format: "pcm_22050") { return .error(400, json: #"{"detail": "\#(problem)"}"#) }
            // Streamed as the API streams it: chunked transfer encoding.
            return .init(body: Self.speech(request.json?["text"] as? String ?? ""), chunkSizes: 1...9_000, chunked: true)
        }
        let texts = ["Hello there.", "How are you?"]
        let (samples, report) = try Self.render(
            server, keyEnv: "SLUICE_TEST_EL_KEY_1",
            extra: "output-format: pcm_22050, model: eleven_turbo_v2_5, stability: 0.4, similarity-boost: 0.8, style: 0.1, speaker-boost: true",
            rate: 22_050, text: texts)
        #expect(report.failures.isEmpty, "\(report.failures)")
        expectSame(samples, texts.flatMap { Providers.floats(Self.speech($0)) })
        let body = try #require(server.requests.first?.json)
        #expect(body["text"] as? String == "Hello there.")
        #expect(body["model_id"] as? String == "eleven_turbo_v2_5")
        let settings = try #require(body["voice_settings"] as? [String: Any])
        #expect(settings["stability"] as? Double == 0.4)
        #expect(settings["similarity_boost"] as? Double == 0.8)
        #expect(settings["style"] as? Double == 0.1)
        #expect(settings["use_speaker_boost"] as? Bool == true)
    }

    @Test("without voice settings the body has none: the voice's own apply")
    func noVoiceSettings() throws {
        let server = try HTTPTestServer { request in .init(body: Self.speech("x")) }
        let (_, report) = try Self.render(server, keyEnv: "SLUICE_TEST_EL_KEY_2", text: ["x"])
        #expect(report.failures.isEmpty)
        let body = try #require(server.requests.first?.json)
        #expect(body["voice_settings"] == nil)
        #expect(body["model_id"] as? String == "eleven_flash_v2_5")
        #expect(server.requests.first?.queryValue("output_format") == "pcm_24000")
    }

    @Test("each API error becomes its typed error; the key never shows, even when echoed", arguments: [
        (401, #"{"detail": {"status": "invalid_api_key", "message": "Invalid API key: el-test-key-5f2b9"}}"#, "invalid-key", 1),
        (401, #"{"detail": {"status": "quota_exceeded", "message": "This request exceeds your quota of 10000."}}"#, "quota-exceeded", 1),
        (429, #"{"detail": {"status": "too_many_concurrent_requests", "message": "Too many concurrent requests."}}"#, "too-many-concurrent-requests", 4),
        (429, #"{"detail": {"status": "system_busy", "message": "Our services are experiencing high traffic."}}"#, "system-busy", 4),
        (500, #"{"detail": {"status": "internal_error", "message": "Something broke."}}"#, "server-error", 1),
        (422, #"{"detail": {"status": "voice_not_found", "message": "A voice with the voice_id voice-7 was not found."}}"#, "http-422", 1),
    ])
    func errors(_ status: Int, _ body: String, _ code: String, _ requests: Int) throws {
        let server = try HTTPTestServer { request in
            request.json?["text"] as? String == "first" ? .init(body: Self.speech("first")) : .error(status, json: body)
        }
        let (samples, report) = try Self.render(server, keyEnv: "SLUICE_TEST_EL_KEY_3_\(status)_\(code.count)", text: ["first", "second"], fade: 256)
        #expect(report.failureCodes["voice"] == code)
        #expect(server.requests.count == 1 + requests)
        #expect(report.failures.count == 1)
        #expect(!report.failures.joined().contains(Self.key))
        // The first utterance still plays, faded out at the failure.
        #expect(samples.count == 4_410)
        #expect(abs(samples.last ?? 1) < 0.001)
    }

    @Test("too many concurrent requests: retried with backoff, then the audio plays in full")
    func retryThenSucceed() throws {
        let attempts = Atomic<Int>(0)
        let server = try HTTPTestServer { request in
            attempts.add(1, ordering: .relaxed).newValue <= 2
                ? .error(429, json: #"{"detail": {"status": "too_many_concurrent_requests", "message": "busy"}}"#)
                : .init(body: Self.speech("hello"))
        }
        let (samples, report) = try Self.render(server, keyEnv: "SLUICE_TEST_EL_KEY_4", text: ["hello"])
        #expect(report.failures.isEmpty)
        #expect(report.counters["voice.retries"] == 2)
        expectSame(samples, Providers.floats(Self.speech("hello")))
    }

    @Test("the quota check refuses text beyond the characters left, before any speech request")
    func quotaCheck() throws {
        let server = try HTTPTestServer { request in
            if request.path == "/v1/user/subscription" {
                guard request.method == "GET", request.headers["xi-api-key"] == Self.key else { return .error(401, json: "{}") }
                return .error(200, json: #"{"tier": "free", "character_count": 9990, "character_limit": 10000}"#)
            }
            return .init(body: Self.speech(request.json?["text"] as? String ?? ""))
        }
        let (samples, report) = try Self.render(
            server, keyEnv: "SLUICE_TEST_EL_KEY_5", extra: "quota-check: true", text: ["Short one.", "This sentence is too long."])
        // "Short one." (10 characters) fits in the 10 left; the next does not.
        #expect(report.failureCodes["voice"] == "quota-exceeded")
        #expect(report.failures.first?.contains("needs 26 characters but 10 of 10000 remain") == true, "\(report.failures)")
        #expect(server.requests.map(\.path) == [
            "/v1/user/subscription", "/v1/text-to-speech/voice-7/stream", "/v1/user/subscription",
        ])
        #expect(samples.count == 4_410)
    }

    @Test("a missing key is refused when the graph is compiled, naming the variable")
    func missingKey() throws {
        #expect {
            _ = try Providers.graph(plugin: "elevenlabs", voice: "type: elevenlabs, transport: http, key-env: SLUICE_TEST_EL_UNSET", rate: 24_000)
        } throws: { error in
            "\(error)".contains("set SLUICE_TEST_EL_UNSET") && "\(error)".contains("voice")
        }
    }

    @Test("the key appears in no output of the tool: dot, render errors, --stats json")
    func keyNeverPrinted() throws {
        let server = try HTTPTestServer { _ in .error(401, json: #"{"detail": {"status": "invalid_api_key", "message": "bad key el-test-key-5f2b9"}}"#) }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sluice-el-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let graph = folder.appendingPathComponent("speak.yaml").path
        try """
            name: speak
            nodes:
              voice: { type: elevenlabs, transport: http, base-url: "\(server.baseURL)", key-env: SLUICE_TEST_EL_KEY_6 }
              align: { type: aligner }
              out:   { type: wav.sink, path: out.wav, rate: 24000 }
            links:
              - voice -> align -> out
            """.write(toFile: graph, atomically: true, encoding: .utf8)
        let environment = ["SLUICE_TEST_EL_KEY_6": Self.key]
        let dot = try CommandRunner.run(executable: CommandRunner.productsFolder.appendingPathComponent("sluice"), ["dot", graph], environment: environment)
        #expect(dot.status == 0, "\(dot.standardError)")
        let render = try CommandRunner.run(
            executable: CommandRunner.productsFolder.appendingPathComponent("sluice"), ["render", graph, "--text", "hello", "--stats", "json"],
            environment: environment)
        #expect(render.standardOutput.contains("invalid-key"), "\(render.standardOutput)\(render.standardError)")
        for output in [dot.standardOutput, dot.standardError, render.standardOutput, render.standardError] {
            #expect(!output.contains(Self.key))
        }
    }
}
