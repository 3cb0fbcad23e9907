// The `elevenlabs` provider: ElevenLabs' text-to-speech as raw PCM, over the stream-input
// WebSocket (text in as it arrives, audio and alignment out; ElevenLabsStreamInput.swift) or
// the HTTP streaming endpoint (POST /v1/text-to-speech/{voice_id}/stream, one request per
// utterance). docs/providers/elevenlabs.md.
import SluiceHTTPProvider
import SluicePluginABI
import SluicePluginKit
import SluiceWebSocketProvider

@c(sluice_plugin_entry)
public func sluicePluginEntry() -> UnsafePointer<sluice_plugin_entry_t>? {
    SluicePlugin.entry {
        [
            .provider(ElevenLabs.description, make: { parameters throws(PluginError) -> any Provider in
                let service = try ElevenLabs(parameters)
                switch parameters.string("transport") ?? "websocket" {
                case "http":
                    return try HTTPSpeechProvider(service: service, options: HTTPOptions(parameters))
                default:
                    return try WebSocketSpeechProvider(
                        service: try ElevenLabsStreamInput(service, parameters), options: HTTPOptions(parameters))
                }
            })
        ]
    }
}

struct ElevenLabs: HTTPSpeechService {
    static let outputFormats = ["pcm_16000", "pcm_22050", "pcm_24000", "pcm_44100"]

    static let description = NodeDescription(
        typeName: "elevenlabs", kind: .provider,
        summary: "Speech from ElevenLabs' streaming text-to-speech API, as raw PCM (key from ELEVENLABS_API_KEY).",
        outputs: [Port("out", .bytes, summary: "S16LE mono at the output-format's rate")],
        parameters: [
            Parameter("transport", .choice(["websocket", "http"]), default: .string("websocket"),
                      summary: "websocket: text streams in as it arrives and speech starts before a sentence ends (stream-input); http: one request per whole utterance."),
            Parameter("voice", .string, default: .string("21m00Tcm4TlvDq8ikWAM"), summary: "The voice id (GET /v1/voices lists yours)."),
            Parameter("model", .string, default: .string("eleven_flash_v2_5"), summary: "The model_id."),
            Parameter("output-format", .choice(outputFormats), default: .string("pcm_24000"),
                      summary: "Raw S16LE mono at 16, 22.05, 24 or 44.1 kHz (pcm_44100 needs a Pro plan)."),
            Parameter("stability", .number(0...1), default: nil, summary: "voice_settings.stability; the voice's own when absent."),
            Parameter("similarity-boost", .number(0...1), default: nil, summary: "voice_settings.similarity_boost."),
            Parameter("style", .number(0...1), default: nil, summary: "voice_settings.style."),
            Parameter("speaker-boost", .boolean, default: nil, summary: "voice_settings.use_speaker_boost."),
            Parameter("quota-check", .boolean, default: .boolean(false),
                      summary: "Before each request, ask GET /v1/user/subscription and refuse text beyond the characters left (transport: http only)."),
            Parameter("chunk-length-schedule", .string, default: .string(ElevenLabsStreamInput.defaultSchedule),
                      summary: "websocket: characters the service buffers before each successive generation, comma-separated, each 50 – 500."),
            Parameter("base-url", .string, default: nil,
                      summary: "The API's address (default $ELEVENLABS_BASE_URL, else https://api.elevenlabs.io); the key goes only to a host you trust (docs/providers/secrets.md)."),
            Parameter("key-env", .string, default: .string("ELEVENLABS_API_KEY"),
                      summary: "The environment variable holding the API key (its name begins with ELEVENLABS_ or SLUICE_)."),
        ] + HTTPOptions.parameters)

    let baseURL: String
    let voice: String
    let model: String
    let outputFormat: String
    let stability: Double?
    let similarityBoost: Double?
    let style: Double?
    let speakerBoost: Bool?
    let quotaCheck: Bool
    let keyVariable: String
    let key: String
    let format: PCMFormat

    /// The key goes only to ElevenLabs or a host the user configured (docs/providers/secrets.md).
    static let secretPolicy = SecretPolicy(
        service: "ElevenLabs", variablePrefixes: ["ELEVENLABS_"], defaultBaseURL: "https://api.elevenlabs.io",
        baseURLVariable: "ELEVENLABS_BASE_URL")

    init(_ parameters: Parameters) throws(PluginError) {
        let policy = Self.secretPolicy
        baseURL = try ServiceSupport.baseURL(parameters.string("base-url") ?? policy.configuredBaseURL ?? "https://api.elevenlabs.io")
        voice = parameters.string("voice") ?? "21m00Tcm4TlvDq8ikWAM"
        model = parameters.string("model") ?? "eleven_flash_v2_5"
        outputFormat = parameters.string("output-format") ?? "pcm_24000"
        stability = parameters.double("stability")
        similarityBoost = parameters.double("similarity-boost")
        style = parameters.double("style")
        speakerBoost = parameters.boolean("speaker-boost")
        quotaCheck = parameters.boolean("quota-check") ?? false
        keyVariable = parameters.string("key-env") ?? "ELEVENLABS_API_KEY"
        try policy.checkVariable(keyVariable, parameter: "key-env")
        try policy.checkDestination(baseURL, parameter: "base-url")
        guard let key = ServiceSupport.environment(keyVariable) else {
            throw PluginError(
                code: "missing-key",
                message: "ElevenLabs needs an API key: set \(keyVariable) (https://elevenlabs.io/app/settings/api-keys)")
        }
        self.key = key
        let rate = Int(outputFormat.dropFirst("pcm_".count)) ?? 24_000
        format = PCMFormat(.s16le, sampleRate: rate, channels: 1)
    }

    var secrets: [String] { [key] }

    var keyHeader: HTTPHeader { HTTPHeader("xi-api-key", key) }

    /// `voice_settings` with only the settings the graph gives.
    var voiceSettings: [String: Any] {
        var settings: [String: Any] = [:]
        if let stability { settings["stability"] = stability }
        if let similarityBoost { settings["similarity_boost"] = similarityBoost }
        if let style { settings["style"] = style }
        if let speakerBoost { settings["use_speaker_boost"] = speakerBoost }
        return settings
    }

    func request(for text: String) throws(PluginError) -> HTTPRequest {
        var body: [String: Any] = ["text": text, "model_id": model]
        let settings = voiceSettings
        if !settings.isEmpty { body["voice_settings"] = settings }
        return HTTPRequest(
            method: "POST",
            url: "\(baseURL)/v1/text-to-speech/\(ServiceSupport.urlEncoded(voice))/stream?output_format=\(outputFormat)",
            headers: [keyHeader, HTTPHeader("Content-Type", "application/json"), HTTPHeader("Accept", "audio/pcm")],
            body: ServiceSupport.json(body))
    }

    /// The quota check: the characters left this period must cover the text.
    func prepare(text: String, fetch: (HTTPRequest) throws(PluginError) -> HTTPResponse) throws(PluginError) {
        guard quotaCheck else { return }
        let response = try fetch(HTTPRequest(method: "GET", url: "\(baseURL)/v1/user/subscription", headers: [keyHeader]))
        guard (200..<300).contains(response.status) else {
            switch failure(for: response) {
            case .fail(let error), .retry(let error): throw error
            }
        }
        guard let subscription = ServiceSupport.jsonObject(response.body),
            let used = ServiceSupport.integer(subscription["character_count"]),
            let limit = ServiceSupport.integer(subscription["character_limit"])
        else {
            throw PluginError(code: "quota-check", message: "ElevenLabs: the subscription answer had no character_count and character_limit")
        }
        let needed = text.count
        if needed > limit - used {
            throw PluginError(
                code: "quota-exceeded",
                message: "ElevenLabs: the text needs \(needed) characters but \(max(0, limit - used)) of \(limit) remain this period; nothing was requested")
        }
    }

    func failure(for response: HTTPResponse) -> HTTPFailure {
        // Errors come as {"detail": {"status": "...", "message": "..."}} (or a plain detail).
        let object = ServiceSupport.jsonObject(response.body)
        let detail = object?["detail"] as? [String: Any]
        let status = detail?["status"] as? String
        let message = (detail?["message"] as? String) ?? (object?["detail"] as? String)
        switch (response.status, status) {
        case (401, "quota_exceeded"), (402, _):
            return .fail(PluginError(code: "quota-exceeded", message: "ElevenLabs: the character quota is used up\(message.map { ": \($0)" } ?? "")"))
        case (401, _):
            return .fail(HTTPErrors.invalidKey("ElevenLabs", variable: keyVariable, detail: message))
        case (429, "system_busy"):
            return .retry(PluginError(code: "system-busy", message: "ElevenLabs is busy (HTTP 429)\(message.map { ": \($0)" } ?? "")"))
        case (429, "too_many_concurrent_requests"):
            return .retry(PluginError(
                code: "too-many-concurrent-requests",
                message: "ElevenLabs: too many concurrent requests for this plan (HTTP 429)\(message.map { ": \($0)" } ?? "")"))
        case (429, _):
            return .retry(PluginError(code: "rate-limited", message: "ElevenLabs: rate limited (HTTP 429)\(message.map { ": \($0)" } ?? "")"))
        case (500..., _):
            return .fail(HTTPErrors.serverError("ElevenLabs", response, detail: message))
        default:
            return .fail(HTTPErrors.generic(response, service: "ElevenLabs", detail: message))
        }
    }
}
