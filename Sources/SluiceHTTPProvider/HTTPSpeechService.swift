import SluicePluginKit

/// What a speech service over HTTP (ElevenLabs, OpenAI's speech endpoint, any endpoint that
/// returns raw PCM) tells the shared engine: its format, how an utterance becomes a request,
/// and what a failed response means. `HTTPSpeechProvider` does the rest — the transfer, the
/// bounded buffer, backpressure, retries, cancel, counters.
public protocol HTTPSpeechService: Sendable {
    /// The PCM the service's responses carry.
    var format: PCMFormat { get }

    /// Values that must never appear in an error message (API keys): the engine replaces
    /// them with `[redacted]`, even when a server echoes them back.
    var secrets: [String] { get }

    /// [transfer thread] Runs before the utterance's request, e.g. a quota check with
    /// `fetch`. Throwing fails the stream before any request for this text is made.
    func prepare(text: String, fetch: (HTTPRequest) throws(PluginError) -> HTTPResponse) throws(PluginError)

    /// [transfer thread] The request that speaks `text`.
    func request(for text: String) throws(PluginError) -> HTTPRequest

    /// [transfer thread] What a non-2xx response means.
    func failure(for response: HTTPResponse) -> HTTPFailure
}

extension HTTPSpeechService {
    public var secrets: [String] { [] }
    public func prepare(text: String, fetch: (HTTPRequest) throws(PluginError) -> HTTPResponse) throws(PluginError) {}
}

/// A failed response's meaning.
public enum HTTPFailure: Sendable, Hashable {
    /// Try the same request again after a backoff (a busy server, too many concurrent
    /// requests), at most `retries` times; then fail with this error.
    case retry(PluginError)
    /// Give up with this error.
    case fail(PluginError)
}

/// The typed errors every HTTP service shares, named the same in every provider.
public enum HTTPErrors {
    /// A status the service has no specific meaning for: `http-<status>` with the server's
    /// message when it sent a short one.
    public static func generic(_ response: HTTPResponse, service: String, detail: String? = nil) -> PluginError {
        let reason = detail ?? shortText(response.body)
        let kind = response.status >= 500 ? "the server failed" : "the request was refused"
        return PluginError(
            code: "http-\(response.status)",
            message: "\(service): \(kind) with HTTP \(response.status)\(reason.map { ": \($0)" } ?? "")")
    }

    /// HTTP 401: the key was refused; `variable` names where it came from.
    public static func invalidKey(_ service: String, variable: String?, detail: String?) -> PluginError {
        let fix = variable.map { "check the key in \($0)" } ?? "check the credentials"
        return PluginError(
            code: "invalid-key",
            message: "\(service) refused the API key (HTTP 401)\(detail.map { ": \($0)" } ?? ""); \(fix)")
    }

    /// HTTP 5xx.
    public static func serverError(_ service: String, _ response: HTTPResponse, detail: String?) -> PluginError {
        PluginError(
            code: "server-error",
            message: "\(service) failed with HTTP \(response.status)\((detail ?? shortText(response.body)).map { ": \($0)" } ?? "")")
    }

    /// The body as one line when it is short printable text, else nil.
    public static func shortText(_ body: [UInt8]) -> String? {
        guard !body.isEmpty, body.count <= 400 else { return nil }
        let text = String(decoding: body, as: UTF8.self).split(whereSeparator: \.isNewline).joined(separator: " ")
        guard text.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0 != "\u{FFFD}" }) else { return nil }
        return text.trimmingWhitespace
    }
}

extension String {
    /// The string without leading and trailing whitespace.
    public var trimmingWhitespace: String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
            let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return "" }
        return String(scalars[first...last])
    }
}
