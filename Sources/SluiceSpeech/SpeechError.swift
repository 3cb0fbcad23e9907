/// What went wrong, typed so a caller can act: the four misuse errors, setup errors with the
/// text a user needs (a graph file's file:line:column and fix), and run failures carrying
/// what was heard before them.
public enum SpeechError: Error, Sendable, Hashable, CustomStringConvertible {
    /// `start()` (or `speak`) on a controller already started.
    case alreadyStarted
    /// Any call but `cancel()` after `cancel()`.
    case alreadyCancelled
    /// `yield`, `finish` or `waitUntilFinished` before `start()`.
    case notStarted
    /// `yield` or `finish` after `finish()`.
    case alreadyFinished
    /// The graph cannot be used: its diagnostics, as `sluice check` prints them; or a plugin
    /// failed to load; or the configuration does not fit the graph.
    case graph(String)
    /// A provider failed. What it had delivered played out, faded; `result` says what was heard.
    case provider(ProviderFailure)
    /// JACK could not start playback, or its server went away (`result` is nil when nothing
    /// had started).
    case jack(message: String, result: SpeechResult?)
    /// The output file could not be written.
    case output(String)

    public var description: String {
        switch self {
        case .alreadyStarted: "the speech controller was already started; make a new one for new speech"
        case .alreadyCancelled: "the speech controller was cancelled; make a new one for new speech"
        case .notStarted: "the speech controller was not started: call start() first"
        case .alreadyFinished: "finish() was already called: no more text can be given"
        case .graph(let message): message
        case .provider(let failure): failure.description
        case .jack(let message, _): message
        case .output(let message): message
        }
    }
}

/// A provider's failure: its stable code (`invalid-key`, `quota-exceeded`, `rate-limited`,
/// `connection-lost`…, docs/providers), its message, and what was heard before it.
public struct ProviderFailure: Sendable, Hashable, CustomStringConvertible {
    /// The provider node's name in the graph.
    public var node: String
    public var code: String
    public var message: String
    public var result: SpeechResult

    public var description: String { "\(node): \(message) [\(code)]" }
}
