// The `openai` provider: OpenAI's speech endpoint (POST /v1/audio/speech) with
// response_format pcm, or any server that speaks the same API. docs/providers/openai.md.
import SluiceHTTPProvider
import SluicePluginABI
import SluicePluginKit

@c(sluice_plugin_entry)
public func sluicePluginEntry() -> UnsafePointer<sluice_plugin_entry_t>? {
    SluicePlugin.entry {
        [
            .provider(OpenAISpeech.description, make: { parameters throws(PluginError) in
                try HTTPSpeechProvider(service: OpenAISpeech(parameters), options: HTTPOptions(parameters))
            })
        ]
    }
}

struct OpenAISpeech: HTTPSpeechService {
    static let officialBaseURL = "https://api.openai.com"

    static let description = NodeDescription(
        typeName: "openai", kind: .provider,
        summary: "Speech from an OpenAI-compatible /v1/audio/speech endpoint as 24 kHz PCM (key from OPENAI_API_KEY).",
        outputs: [Port("out", .bytes, summary: "S16LE 24000 Hz mono")],
        parameters: [
            Parameter("model", .string, default: .string("gpt-4o-mini-tts"), summary: "The model."),
            Parameter("voice", .string, default: .string("alloy"), summary: "The voice."),
            Parameter("speed", .number(0.25...4), default: .number(1), summary: "Speaking speed, 1 the model's own."),
            Parameter("instructions", .string, default: nil, summary: "How to speak (models that take instructions)."),
            Parameter("base-url", .string, default: nil,
                      summary: "The API's address (default $OPENAI_BASE_URL, else https://api.openai.com); a local server that speaks the same API works too."),
            Parameter("key-env", .string, default: .string("OPENAI_API_KEY"),
                      summary: "The environment variable holding the key (required only for api.openai.com; its name begins with OPENAI_ or SLUICE_)."),
        ] + HTTPOptions.parameters)

    let baseURL: String
    let model: String
    let voice: String
    let speed: Double
    let instructions: String?
    let keyVariable: String
    let key: String?
    let format = PCMFormat(.s16le, sampleRate: 24_000, channels: 1)

    /// A key goes only to OpenAI or a host the user configured (docs/providers/secrets.md).
    static let secretPolicy = SecretPolicy(
        service: "OpenAI", variablePrefixes: ["OPENAI_"], defaultBaseURL: officialBaseURL, baseURLVariable: "OPENAI_BASE_URL")

    init(_ parameters: Parameters) throws(PluginError) {
        let policy = Self.secretPolicy
        baseURL = try ServiceSupport.baseURL(parameters.string("base-url") ?? policy.configuredBaseURL ?? Self.officialBaseURL)
        model = parameters.string("model") ?? "gpt-4o-mini-tts"
        voice = parameters.string("voice") ?? "alloy"
        speed = parameters.double("speed") ?? 1
        instructions = parameters.string("instructions")
        keyVariable = parameters.string("key-env") ?? "OPENAI_API_KEY"
        try policy.checkVariable(keyVariable, parameter: "key-env")
        key = ServiceSupport.environment(keyVariable)
        // Without a key nothing secret is sent, so any server that speaks the API will do.
        if key != nil { try policy.checkDestination(baseURL, parameter: "base-url") }
        if key == nil && baseURL == Self.officialBaseURL {
            throw PluginError(
                code: "missing-key", message: "OpenAI needs an API key: set \(keyVariable) (https://platform.openai.com/api-keys)")
        }
    }

    var secrets: [String] { key.map { [$0] } ?? [] }

    func request(for text: String) throws(PluginError) -> HTTPRequest {
        var body: [String: Any] = ["model": model, "input": text, "voice": voice, "response_format": "pcm", "speed": speed]
        if let instructions { body["instructions"] = instructions }
        var headers = [HTTPHeader("Content-Type", "application/json")]
        if let key { headers.append(HTTPHeader("Authorization", "Bearer \(key)")) }
        return HTTPRequest(method: "POST", url: "\(baseURL)/v1/audio/speech", headers: headers, body: ServiceSupport.json(body))
    }

    func failure(for response: HTTPResponse) -> HTTPFailure {
        // Errors come as {"error": {"message": "...", "type": "...", "code": "..."}}.
        let error = ServiceSupport.jsonObject(response.body)?["error"] as? [String: Any]
        let message = error?["message"] as? String
        let code = (error?["code"] as? String) ?? (error?["type"] as? String)
        switch (response.status, code) {
        case (401, _):
            return .fail(HTTPErrors.invalidKey("OpenAI", variable: keyVariable, detail: message))
        case (429, "insufficient_quota"):
            return .fail(PluginError(code: "quota-exceeded", message: "OpenAI: the quota is used up\(message.map { ": \($0)" } ?? "")"))
        case (429, _):
            return .retry(PluginError(code: "rate-limited", message: "OpenAI: rate limited (HTTP 429)\(message.map { ": \($0)" } ?? "")"))
        case (500..., _):
            return .fail(HTTPErrors.serverError("OpenAI", response, detail: message))
        default:
            return .fail(HTTPErrors.generic(response, service: "OpenAI", detail: message))
        }
    }
}
