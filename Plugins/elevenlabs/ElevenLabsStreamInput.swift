import Foundation
import SluiceHTTPProvider
import SluicePluginKit
import SluiceWebSocketProvider

/// ElevenLabs' stream-input WebSocket
/// (`/v1/text-to-speech/{voice_id}/stream-input`): text goes in piece by piece, audio and its
/// alignment come back as soon as the service has enough text. docs/providers/elevenlabs.md
/// ("The WebSocket transport") describes the protocol as built.
struct ElevenLabsStreamInput: WebSocketSpeechService {
    /// Characters buffered before the first generation, then the next ones: the first is the
    /// API's least (50), so speech starts after about eight words — before a first sentence
    /// of usual length (60–100 characters) is complete — and later generations grow to the
    /// API's own default sizes, where the voice has more context and sounds steadier.
    static let defaultSchedule = "50,120,160,290"

    let settings: ElevenLabs
    let schedule: [Int]

    init(_ settings: ElevenLabs, _ parameters: Parameters) throws(PluginError) {
        if settings.quotaCheck {
            throw PluginError(
                code: "bad-parameter",
                message: "quota-check works with transport: http only (stream-input has no request per utterance to check before)")
        }
        self.settings = settings
        schedule = try Self.schedule(parameters.string("chunk-length-schedule") ?? Self.defaultSchedule)
    }

    /// The schedule as the API takes it: integers, each 50 – 500.
    static func schedule(_ text: String) throws(PluginError) -> [Int] {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        let values = parts.compactMap { Int($0) }
        guard !parts.isEmpty, values.count == parts.count, values.allSatisfy({ (50...500).contains($0) }) else {
            throw PluginError(
                code: "bad-parameter",
                message: "chunk-length-schedule '\(text)' must be comma-separated whole numbers of characters, each 50 – 500 (e.g. \(defaultSchedule))")
        }
        return values
    }

    var format: PCMFormat { settings.format }
    var secrets: [String] { [settings.key] }
    var name: String { "ElevenLabs" }

    /// https → wss, http → ws (http only to this machine, as `SecretPolicy` allows).
    var url: String {
        let base = settings.baseURL.hasPrefix("https://")
            ? "wss://" + settings.baseURL.dropFirst("https://".count) : "ws://" + settings.baseURL.dropFirst("http://".count)
        return "\(base)/v1/text-to-speech/\(ServiceSupport.urlEncoded(settings.voice))/stream-input"
            + "?model_id=\(ServiceSupport.urlEncoded(settings.model))&output_format=\(settings.outputFormat)"
            + "&sync_alignment=true&inactivity_timeout=180"
    }

    var headers: [HTTPHeader] { [settings.keyHeader] }

    var openingMessage: String {
        var message: [String: Any] = ["text": " ", "generation_config": ["chunk_length_schedule": schedule]]
        let voiceSettings = settings.voiceSettings
        if !voiceSettings.isEmpty { message["voice_settings"] = voiceSettings }
        return Self.text(message)
    }

    func pieceMessage(_ text: String) -> String { Self.text(["text": text]) }
    var flushMessage: String { Self.text(["text": " ", "flush": true]) }
    var closingMessage: String { Self.text(["text": ""]) }

    private static func text(_ object: [String: Any]) -> String {
        String(decoding: ServiceSupport.json(object), as: UTF8.self)
    }

    /// `{"audio": base64|null, "isFinal": bool|null, "alignment": {chars, charStartTimesMs,
    /// charDurationsMs}|null, "normalizedAlignment": …}`, or an error
    /// `{"message": …, "error": …, "code": …}`.
    func event(for message: String) -> ServerEvent {
        guard let object = ServiceSupport.jsonObject(Array(message.utf8)) else {
            return ServerEvent(failure: PluginError(code: "server-error", message: "ElevenLabs sent a message that is not a JSON object"))
        }
        if let failure = Self.failure(object) { return ServerEvent(failure: failure) }
        var event = ServerEvent()
        if let audio = object["audio"] as? String, !audio.isEmpty {
            guard let bytes = Data(base64Encoded: audio) else {
                return ServerEvent(failure: PluginError(code: "server-error", message: "ElevenLabs sent audio that is not base64"))
            }
            event.audio = [UInt8](bytes)
        }
        if let alignment = object["alignment"] as? [String: Any], let characters = alignment["chars"] as? [String],
            let starts = alignment["charStartTimesMs"] as? [NSNumber]
        {
            event.alignment = zip(characters, starts).map { AlignedCharacter($0, startMilliseconds: $1.doubleValue) }
        }
        event.isFinal = (object["isFinal"] as? Bool) == true || (object["is_final"] as? Bool) == true
        return event
    }

    /// The typed error an error message stands for, or nil for any other message.
    static func failure(_ object: [String: Any]) -> PluginError? {
        let kind = object["error"] as? String
        let text = object["message"] as? String
        guard kind != nil || (text != nil && object["audio"] == nil && object["isFinal"] == nil && object["is_final"] == nil) else {
            return nil
        }
        let detail = [kind, text].compactMap { $0 }.joined(separator: ": ")
        switch kind {
        case "quota_exceeded":
            return PluginError(code: "quota-exceeded", message: "ElevenLabs: the character quota is used up (\(detail))")
        case "invalid_api_key", "unauthorized", "invalid_authorization":
            return PluginError(
                code: "invalid-key", message: "ElevenLabs refused the API key (\(detail)); check the key in the key-env variable")
        default:
            return PluginError(code: "server-error", message: "ElevenLabs reported an error: \(detail)")
        }
    }

    func refusal(status: Int, body: [UInt8]) -> PluginError {
        let response = HTTPResponse(status: status, body: body)
        if status == 403 {
            let object = ServiceSupport.jsonObject(body)
            let message = ((object?["detail"] as? [String: Any])?["message"] as? String) ?? (object?["detail"] as? String)
            return PluginError(
                code: "invalid-key",
                message: "ElevenLabs refused the API key (HTTP 403)\(message.map { ": \($0)" } ?? ""); check the key in \(settings.keyVariable)")
        }
        switch settings.failure(for: response) {
        case .fail(let error), .retry(let error): return error
        }
    }
}
