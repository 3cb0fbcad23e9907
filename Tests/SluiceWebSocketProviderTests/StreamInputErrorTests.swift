import Foundation
import SluiceGraph
import SluiceTestSupport
import Testing
import WebSocketTestSupport

/// Each way the service or the network fails becomes its typed error, promptly, after the
/// audio that did arrive (faded out); the key never shows.
@Suite struct StreamInputErrorTests {
    struct Case: Sendable, CustomStringConvertible {
        var name: String
        var failure: StreamInputTestServer.Failure?
        var code: String
        /// The error's message says this.
        var says: String
        /// Some audio arrives before the failure.
        var audioFirst = false
        var extra = ""
        var baseURL: String?
        var description: String { name }
    }

    static let echoedKey = "Invalid API key: \(StreamInput.key)"

    static let cases: [Case] = [
        Case(
            name: "handshake refused 401",
            failure: .refuseHandshake(status: 401, body: #"{"detail": {"status": "invalid_api_key", "message": "\#(echoedKey)"}}"#),
            code: "invalid-key", says: "HTTP 401"),
        Case(
            name: "handshake refused 403",
            failure: .refuseHandshake(status: 403, body: #"{"detail": {"status": "forbidden", "message": "\#(echoedKey)"}}"#),
            code: "invalid-key", says: "HTTP 403"),
        Case(
            name: "bad key: error message, close 1008",
            failure: .errorMessage(#"{"message": "\#(echoedKey)", "error": "invalid_api_key", "code": 1008}"#, closeCode: 1008, onOpening: true),
            code: "invalid-key", says: "invalid_api_key"),
        Case(
            name: "quota exceeded",
            failure: .errorMessage(
                #"{"message": "This request exceeds your quota of 10000.", "error": "quota_exceeded", "code": 1008}"#, closeCode: 1008,
                onOpening: false),
            code: "quota-exceeded", says: "exceeds your quota"),
        Case(
            name: "other server error",
            failure: .errorMessage(#"{"message": "Something broke.", "error": "internal_error", "code": 1011}"#, closeCode: 1011, onOpening: false),
            code: "server-error", says: "Something broke."),
        Case(
            name: "close 1011 mid-stream",
            failure: .close(code: 1011, reason: "internal error", afterAudioBytes: 4_800), code: "connection-lost",
            says: "code 1011 (internal error)", audioFirst: true),
        Case(
            name: "TCP dropped mid-stream", failure: .drop(afterAudioBytes: 4_800), code: "connection-lost", says: "without a close frame",
            audioFirst: true),
        Case(
            name: "stall", failure: .stall(afterAudioBytes: 4_800), code: "stalled", says: "sent nothing for 0.5 s", audioFirst: true,
            extra: "stall-timeout: 0.5"),
        Case(
            name: "busy without finishing", failure: .emptyMessages(afterAudioBytes: 4_800, interval: 0.1), code: "utterance-timeout",
            says: "did not finish an utterance within 1.0 s", audioFirst: true, extra: "stall-timeout: 0.5, utterance-timeout: 1"),
        Case(
            name: "handshake never answered", failure: .silentHandshake, code: "connect-timeout", says: "within 0.5 s",
            extra: "connect-timeout: 0.5"),
        Case(name: "nothing listening", failure: nil, code: "connect-failed", says: "could not connect", baseURL: "http://127.0.0.1:1"),
    ]

    @Test("the typed error, no hang, the audio before it played and faded", arguments: cases)
    func failure(_ testCase: Case) throws {
        let server = try StreamInput.server { $0.failure = testCase.failure }
        var voice = StreamInput.voice(server, keyEnv: "SLUICE_TEST_WS_ERROR", testCase.extra)
        if let baseURL = testCase.baseURL { voice = voice.replacingOccurrences(of: server.baseURL, with: baseURL) }
        let graph = try withEnvironment(["SLUICE_TEST_WS_ERROR": StreamInput.key]) { try StreamInput.graph(voice, fade: 256) }
        // No hang: the provider's own deadlines (connect-timeout, stall-timeout) bound this.
        let (samples, report) = try GraphRendering.render(graph, text: ["First sentence here.", "Second one."])
        #expect(report.failureCodes["voice"] == testCase.code, "\(report.failures)")
        #expect(report.failures.count == 1)
        let message = report.failures.joined()
        #expect(message.contains(testCase.says), "\(message)")
        #expect(!message.contains(StreamInput.key))
        for handshake in server.handshakes { #expect(!(handshake.path + handshake.query).contains(StreamInput.key)) }
        let sent = StreamInput.floats(server.sentAudio)
        #expect(samples.count == sent.count)
        if testCase.audioFirst {
            #expect(!sent.isEmpty)
            // Bit-exact between the fader's fade-in at the start and its fade-out at the
            // failure, which ends in silence.
            expectSame(Array(samples.dropFirst(256).dropLast(256)), Array(sent.dropFirst(256).dropLast(256)))
            #expect(abs(samples.last ?? 1) < 0.001)
        }
    }

    @Test("an alignment far outside its audio (±1e300) is the typed error 'bad-alignment'; the audio before it plays out faded", arguments: [1e300, -1e300])
    func hostileAlignment(_ start: Double) throws {
        let server = try StreamInput.server { $0.failure = .alignmentStarts(start, afterAudioBytes: 4_800) }
        let voice = StreamInput.voice(server, keyEnv: "SLUICE_TEST_WS_ERROR", "")
        let graph = try withEnvironment(["SLUICE_TEST_WS_ERROR": StreamInput.key]) { try StreamInput.graph(voice, fade: 256) }
        let (samples, report) = try GraphRendering.render(graph, text: ["First sentence here.", "Second one."])
        #expect(report.failureCodes["voice"] == "bad-alignment", "\(report.failures)")
        #expect(report.failures.joined().contains("a character starts at \(start) ms"), "\(report.failures)")
        // What came before the bad message: the first messages, exactly, then a fade to silence.
        let sent = StreamInput.floats(server.sentAudio)
        #expect(samples.count >= 2_400 && samples.count < sent.count, "\(samples.count) of \(sent.count)")
        expectSame(Array(samples.dropFirst(256).dropLast(256)), Array(sent.prefix(samples.count).dropFirst(256).dropLast(256)))
        #expect(abs(samples.last ?? 1) < 0.001)
    }
}
