import SluiceHTTPProvider
import SluicePluginKit

/// What a speech service that streams over one WebSocket (ElevenLabs' stream-input) tells the
/// shared engine: where to connect, the messages it sends, and what the server's messages
/// mean. `WebSocketSpeechProvider` does the rest — the connection, the bounded buffer and
/// backpressure, utterance boundaries and word marks from the alignment, timeouts, cancel.
///
/// The protocol the engine follows: one opening message when the socket opens; each piece of
/// text as it arrives; a flush at the end of every utterance that had text; a closing message
/// after the last one. The server answers with audio messages that carry the alignment of
/// the characters whose audio begins in them, and a final message.
public protocol WebSocketSpeechService: Sendable {
    /// The PCM the server's audio messages carry.
    var format: PCMFormat { get }

    /// Values that must never appear in an error message (API keys): replaced by `[redacted]`.
    var secrets: [String] { get }

    /// The service's name in messages ("ElevenLabs").
    var name: String { get }

    /// `ws://` or `wss://`: where to connect. Carries no secret (it appears in messages
    /// without its query, and the server logs it).
    var url: String { get }

    /// The handshake's extra headers (the key goes here, never in the URL).
    var headers: [HTTPHeader] { get }

    /// The first message on every new socket.
    var openingMessage: String { get }

    /// The message that sends `text`, a piece of the current utterance.
    func pieceMessage(_ text: String) -> String

    /// The message that ends an utterance: the server speaks everything it holds.
    var flushMessage: String { get }

    /// The message after the last utterance: the server finishes and says so (`isFinal`).
    var closingMessage: String { get }

    /// What one text message from the server says.
    func event(for message: String) -> ServerEvent

    /// The error for a handshake the server refused with HTTP `status` and `body`.
    func refusal(status: Int, body: [UInt8]) -> PluginError
}

extension WebSocketSpeechService {
    public var secrets: [String] { [] }
}

/// One message from the server, as the engine needs it.
public struct ServerEvent: Sendable {
    /// Audio to append (raw PCM in the service's format); empty when the message had none.
    public var audio: [UInt8]
    /// The characters whose audio begins in this message, in order, each with where it
    /// begins, in milliseconds from the start of this message's audio. Nil when the
    /// message had no alignment.
    public var alignment: [AlignedCharacter]?
    /// The server has spoken everything (after the closing message).
    public var isFinal: Bool
    /// The server reported an error: the stream fails with it.
    public var failure: PluginError?

    public init(audio: [UInt8] = [], alignment: [AlignedCharacter]? = nil, isFinal: Bool = false, failure: PluginError? = nil) {
        self.audio = audio
        self.alignment = alignment
        self.isFinal = isFinal
        self.failure = failure
    }
}

/// One character of the server's alignment.
public struct AlignedCharacter: Sendable, Hashable {
    /// The character as the server wrote it (one Unicode scalar, usually).
    public var text: String
    /// Where its audio begins, in milliseconds from the start of the message's audio.
    public var startMilliseconds: Double

    public init(_ text: String, startMilliseconds: Double) {
        self.text = text
        self.startMilliseconds = startMilliseconds
    }
}
