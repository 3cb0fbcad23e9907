import Glibc
import SluiceHTTPProvider
import SluicePluginKit
import Synchronization

/// A provider that streams text to a service over one WebSocket as it arrives and plays the
/// audio the service streams back (ElevenLabs' stream-input).
///
/// - Connects when created, so the handshake is done before the first text comes.
/// - Each pushed piece goes out at once; each utterance's end sends a flush; `endText` the
///   closing message, after which the server's final message ends the stream.
/// - Audio goes into a bounded buffer (`BufferedAudio`, as the HTTP engine's). When it is
///   full the socket is not read (TCP backpressure reaches the server).
/// - An utterance's audio ends after the message in which the server's alignment covered all
///   of its characters (`UtteranceLedger`); words get marks from the same alignment.
/// - A failure ends the stream after the audio already received. `cancel` closes the socket
///   at once: a stream-input socket carries one generation stream, so a barge-in ends it and
///   the host's fresh instance connects anew (at barge-in time, not on the next reply's path).
/// - A server that closes an idle socket (nothing owed) is reconnected to at the next
///   utterance.
public final class WebSocketSpeechProvider: Provider, @unchecked Sendable {
    // SAFETY (@unchecked Sendable): everything shared lives in `core`, which synchronises
    // itself; `format` is immutable.
    public let format: PCMFormat
    private let core: StreamCore

    public init(service: any WebSocketSpeechService, options: HTTPOptions) throws(PluginError) {
        format = service.format
        core = try StreamCore(service: service, options: options)
        core.start()
    }

    deinit { core.cancel() }

    public var acceptsIncrementalText: Bool { true }
    public var reportsWordTiming: Bool { true }

    public func beginUtterance() throws(PluginError) { try core.beginUtterance() }
    public func push(text: String) throws(PluginError) { try core.push(text) }
    public func endUtterance() throws(PluginError) { try core.endUtterance() }
    public func endText() { core.endText() }
    public func read(into buffer: UnsafeMutableRawBufferPointer) -> ReadResult { core.read(into: buffer) }
    public func takeWordMarks(limit: Int) -> [WordMark] { core.takeWordMarks(limit: limit) }
    public func cancel() { core.cancel() }
    public var counters: [Counter] { core.counters }
}

/// The provider's state and the rules that move it, shared by the control thread (text),
/// the source thread (reads), the connection's task (server messages) and the watchdog.
final class StreamCore: ConnectionDelegate, @unchecked Sendable {
    // SAFETY (@unchecked Sendable): all mutable state is in `state` (a Mutex) or atomic.

    struct State {
        var audio: BufferedAudio
        var ledger: UtteranceLedger
        var connection: WebSocketConnection?
        var connectionID = 0
        var connectStarted = 0.0
        /// Whitespace pushed before the open utterance's first character: sent with it, or
        /// never (a whitespace-only utterance is not sent).
        var heldWhitespace = ""
        var textEnded = false
        var closingSent = false
        var final = false
        var finished = false
        var failed = false
        var cancelled = false
        /// A failure of a connection while nothing was owed, reported when text next needs
        /// the server if it is one that would only repeat (a refused key, a spent quota).
        var idleFailure: PluginError?
        /// When the server was last heard from, or began to owe audio.
        var lastHeard = 0.0
        /// Seconds the utterance being written has owed audio, waits for room not counted,
        /// and which utterance that is (`UtteranceLedger.writing`): the overall deadline,
        /// which messages without audio do not reset as they reset `lastHeard`.
        var owingFor = 0.0
        var owingUtterance = -1
        var lastLook = 0.0
        /// A server message is being written into the buffer.
        var writingMessage = false
        /// Bytes the utterance audio goes to still needs to end on a whole frame.
        var frameRemainder = 0
        /// The connection's task waits for room in the buffer.
        var roomWaiter: (needed: Int, continuation: CheckedContinuation<Void, Never>)?
        /// What was sent on the current connection before the server said anything on it: sent
        /// again on a new connection when the server closes this one before answering (an idle
        /// socket closed just as text went out).
        var unanswered: [String] = []
        var heardOnConnection = false
        /// A resend happened and the server has not answered since: no second one.
        var resent = false
        var receivedBytes = 0
        var messages = 0
        var connections = 0
        var pauses = 0
    }

    let service: any WebSocketSpeechService
    let options: HTTPOptions
    let endpoint: WebSocketEndpoint
    let frameBytes: Int
    let maximumUtteranceBytes: Int
    private let state: Mutex<State>

    init(service: any WebSocketSpeechService, options: HTTPOptions) throws(PluginError) {
        let endpoint: WebSocketEndpoint
        do throws(ProviderURL.Refusal) {
            endpoint = try WebSocketEndpoint(service.url)
        } catch {
            throw PluginError(
                code: "bad-parameter", message: "\(service.name): '\(HTTPRequest.display(service.url))' is refused: \(error.reason)")
        }
        self.service = service
        self.options = options
        self.endpoint = endpoint
        frameBytes = service.format.frameBytes
        maximumUtteranceBytes = options.maximumUtteranceBytes(for: service.format)
        state = Mutex(State(
            audio: BufferedAudio(capacity: options.bufferBytes(for: service.format)),
            ledger: UtteranceLedger(frameBytes: service.format.frameBytes, sampleRate: service.format.sampleRate)))
    }

    /// Pre-connects and starts the watchdog.
    func start() {
        state.withLock { connect(&$0) }
        Task(executorPreference: ConnectionExecutor.shared) { [self] in await watch() }
    }

    // MARK: Text (control thread)

    func beginUtterance() throws(PluginError) {
        try state.withLock { (s) throws(PluginError) in
            guard !s.ledger.isOpen else { throw PluginError(code: "utterance-open", message: "an utterance is already open") }
            guard !s.textEnded else { throw PluginError(code: "text-ended", message: "no utterance may begin after end_text") }
            s.ledger.begin()
            s.heldWhitespace = ""
            // The previous utterance's end may have waited for this one.
            settle(&s)
            ensureConnected(&s)
        }
    }

    func push(_ piece: String) throws(PluginError) {
        try state.withLock { (s) throws(PluginError) in
            guard s.ledger.isOpen else { throw PluginError(code: "no-utterance", message: "text pushed outside an utterance") }
            s.ledger.append(piece)
            guard s.ledger.openHasText else {
                s.heldWhitespace += piece
                return
            }
            let text = s.heldWhitespace + piece
            s.heldWhitespace = ""
            send(&s, service.pieceMessage(text))
        }
    }

    func endUtterance() throws(PluginError) {
        try state.withLock { (s) throws(PluginError) in
            guard s.ledger.isOpen else { throw PluginError(code: "no-utterance", message: "no utterance is open") }
            close(&s)
        }
    }

    func endText() {
        state.withLock { s in
            guard !s.textEnded else { return }
            if s.ledger.isOpen { close(&s) }
            s.textEnded = true
            if s.connection != nil && !s.failed && !s.cancelled {
                send(&s, service.closingMessage)
                s.closingSent = true
                s.lastHeard = now()
            }
            settle(&s)
        }
    }

    /// Closes the open utterance: a flush when it had text, else it ends with no audio.
    private func close(_ s: inout State) {
        let hadText = s.ledger.openHasText
        let owed = s.ledger.owesAudio
        s.ledger.close()
        s.heldWhitespace = ""
        if hadText {
            send(&s, service.flushMessage)
            if !owed { s.lastHeard = now() }
        }
        settle(&s)
    }

    private func send(_ s: inout State, _ message: String) {
        ensureConnected(&s)
        guard let connection = s.connection else { return }
        if !s.heardOnConnection { s.unanswered.append(message) }
        connection.send(message)
    }

    // MARK: Connection

    private func ensureConnected(_ s: inout State) {
        guard s.connection == nil, !s.failed, !s.cancelled, !s.finished else { return }
        if let failure = s.idleFailure, ["invalid-key", "quota-exceeded"].contains(failure.code) {
            fail(&s, failure)
            return
        }
        connect(&s)
    }

    private func connect(_ s: inout State) {
        s.connectionID += 1
        s.connections += 1
        s.connectStarted = now()
        s.idleFailure = nil
        s.heardOnConnection = false
        s.unanswered.removeAll()
        s.connection = WebSocketConnection(
            id: s.connectionID, endpoint: endpoint, headers: service.headers.map { HTTPHeaderPair(name: $0.name, value: $0.value) },
            opening: service.openingMessage, delegate: self)
    }

    func connectionOpened(_ id: Int) {
        state.withLock { s in
            guard id == s.connectionID else { return }
            s.lastHeard = now()
        }
    }

    func connection(_ id: Int, received text: String) async -> Bool {
        let event = service.event(for: text)
        // Before the message's own audio: the bytes the previous utterance still needs to
        // end on a whole frame.
        let owed: Int? = state.withLock { s in
            guard id == s.connectionID, !s.failed, !s.cancelled, !s.finished else { return nil }
            s.lastHeard = now()
            s.messages += 1
            s.heardOnConnection = true
            s.unanswered.removeAll()
            s.resent = false
            if let failure = event.failure {
                // Said of an idle socket (an inactivity timeout), it matters only if it would
                // repeat at the next utterance (ensureConnected); said while audio is owed, it
                // ends the stream.
                if s.ledger.awaitsAudio || s.closingSent {
                    fail(&s, failure)
                } else {
                    s.idleFailure = failure
                    let connection = s.connection
                    s.connection = nil
                    connection?.close()
                }
                return nil
            }
            s.writingMessage = true
            return min(s.frameRemainder, event.audio.count)
        }
        guard let owed else { return false }
        if owed > 0 {
            guard await write(event.audio[0..<owed]) else { return false }
            state.withLock { s in
                s.ledger.addAudio(owed)
                s.frameRemainder -= owed
                if s.frameRemainder == 0 {
                    s.audio.endUtterance()
                    s.ledger.endWriting()
                    endCompleteUtterances(&s)
                }
            }
        }
        let rest = event.audio[owed...]
        let fits: Int? = state.withLock { s in
            guard !s.failed, !s.cancelled else { return nil }
            let room = max(0, maximumUtteranceBytes - s.ledger.writingAudioBytes)
            if let problem = s.ledger.receive(alignment: event.alignment, audioBytes: min(rest.count, room), skipped: owed) {
                fail(&s, PluginError(
                    code: "bad-alignment", message: "\(service.name) sent an alignment that does not fit its audio or text: \(problem)"))
                return nil
            }
            return min(rest.count, room)
        }
        guard let fits else { return false }
        guard await write(rest.prefix(fits)) else { return false }
        return state.withLock { s in
            s.writingMessage = false
            guard !s.failed, !s.cancelled else { return false }
            if fits < rest.count {
                fail(&s, PluginError(
                    code: "utterance-too-long",
                    message: "\(service.name) sent more than \(options.maximumUtteranceSeconds) s of audio for one utterance; "
                        + "the rest was refused (raise max-utterance if that much is right)"))
                return false
            }
            if event.isFinal { s.final = true }
            settle(&s)
            return !event.isFinal
        }
    }

    func connectionEnded(_ id: Int, _ end: ConnectionEnd) {
        state.withLock { s in
            guard id == s.connectionID, s.connection != nil else { return }
            s.connection = nil
            s.writingMessage = false
            guard !s.failed, !s.cancelled, !s.finished, !s.final else { return }
            if resendAfterUnansweredClose(&s, end) { return }
            let owed = s.ledger.awaitsAudio || s.closingSent
            let error: PluginError?
            switch end {
            case .refused(let status, let body):
                error = service.refusal(status: status, body: body)
            case .failed(let reason):
                error = PluginError(code: "connect-failed", message: "could not connect to \(service.name) at \(display): \(reason)")
            case .closed(let code, _) where code == 1000 && s.closingSent && !s.ledger.awaitsAudio:
                // Closed normally after the closing message with every utterance spoken: as final.
                s.final = true
                error = nil
            case .closed(let code, let reason):
                error = owed ? PluginError(
                    code: "connection-lost",
                    message: "\(service.name) closed the connection with code \(code)\(reason.map { $0.isEmpty ? "" : " (\($0))" } ?? "") "
                        + "before the audio was complete, after \(s.receivedBytes) bytes of audio") : nil
            case .dropped(let reason):
                error = owed ? PluginError(
                    code: "connection-lost",
                    message: "the connection to \(service.name) dropped without a close frame before the audio was complete, "
                        + "after \(s.receivedBytes) bytes of audio\(reason.map { ": \($0)" } ?? "")") : nil
            }
            if let error {
                if owed { fail(&s, error) } else { s.idleFailure = error }
            }
            settle(&s)
        }
    }

    /// A server that closes a connection normally (or drops it) before answering anything on
    /// it never began on the text sent there: most often an idle socket closed just as text
    /// went out. That text goes again on a new connection, once; true when it did.
    private func resendAfterUnansweredClose(_ s: inout State, _ end: ConnectionEnd) -> Bool {
        let normal: Bool
        switch end {
        case .closed(let code, _): normal = code == 1000
        case .dropped: normal = true
        case .refused, .failed: normal = false
        }
        guard normal, !s.heardOnConnection, !s.unanswered.isEmpty, !s.resent else { return false }
        let messages = s.unanswered
        s.resent = true
        connect(&s)
        for message in messages { send(&s, message) }
        return true
    }

    private var display: String { HTTPRequest.display(service.url) }

    // MARK: Audio

    /// Writes `bytes` into the buffer, waiting for room as long as it takes; false when the
    /// stream failed or was cancelled meanwhile.
    private func write(_ bytes: ArraySlice<UInt8>) async -> Bool {
        var offset = 0
        while offset < bytes.count {
            let wrote: Int? = state.withLock { s in
                guard !s.failed, !s.cancelled else { return nil }
                let count = min(s.audio.room, bytes.count - offset)
                guard count > 0 else { return 0 }
                let start = bytes.startIndex + offset
                // SAFETY: the slice's bytes are valid for the closure, and `write` copies them.
                let written = bytes[start..<(start + count)].withUnsafeBytes { s.audio.write($0) }
                precondition(written, "a write within the room failed")
                s.receivedBytes += count
                return count
            }
            guard let wrote else { return false }
            offset += wrote
            if wrote == 0 {
                let needed = min(bytes.count - offset, state.withLock { $0.audio.capacity } / 2)
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let ready = state.withLock { s -> Bool in
                        if s.failed || s.cancelled || s.audio.room >= needed { return true }
                        s.pauses += 1
                        s.roomWaiter = (needed, continuation)
                        return false
                    }
                    if ready { continuation.resume() }
                }
                // Waiting for room is not a stall.
                state.withLock { $0.lastHeard = now() }
            }
        }
        return true
    }

    /// Ends the utterances whose audio is complete, and the stream once all are and the
    /// server said it is done (or no connection is left to say anything).
    private func settle(_ s: inout State) {
        guard !s.writingMessage, !s.failed, !s.cancelled, !s.finished else { return }
        if s.final || (s.textEnded && s.connection == nil) {
            // The server has spoken everything (or nothing is owed and no one will speak):
            // what is left ends here, the last utterance with all the audio that came.
            while s.ledger.writing < s.ledger.count && !(s.ledger.isOpen && s.ledger.writing == s.ledger.count - 1) {
                s.audio.endUtterance()
                s.ledger.endWriting()
            }
            s.frameRemainder = 0
        } else if s.frameRemainder == 0 {
            endCompleteUtterances(&s)
        }
        if s.textEnded && !s.ledger.isOpen && s.ledger.writing == s.ledger.count && (s.final || s.connection == nil) {
            s.audio.finish()
            s.finished = true
            let connection = s.connection
            s.connection = nil
            connection?.close()
        }
    }

    /// Places the ends of the utterances whose audio is complete. An utterance's end waits
    /// until the next one has begun: audio the server sends after an utterance's last
    /// character (the trailing space's) stays in it while nothing follows, and the last one
    /// ends at the server's final message. A boundary falls on a whole frame (the next
    /// message completes one split across two).
    private func endCompleteUtterances(_ s: inout State) {
        while s.ledger.writingIsComplete && s.ledger.writing + 1 < s.ledger.count {
            let partial = s.ledger.writingAudioBytes % frameBytes
            if partial != 0 {
                s.frameRemainder = frameBytes - partial
                return
            }
            s.audio.endUtterance()
            s.ledger.endWriting()
        }
    }

    private func fail(_ s: inout State, _ error: PluginError) {
        guard !s.failed, !s.cancelled else { return }
        s.failed = true
        s.audio.fail(redacted(error))
        let connection = s.connection
        s.connection = nil
        connection?.close()
        if let waiter = s.roomWaiter {
            s.roomWaiter = nil
            waiter.continuation.resume()
        }
    }

    /// `error` with every secret replaced, whatever the server echoed back.
    private func redacted(_ error: PluginError) -> PluginError {
        SecretRedaction.redacted(error, secrets: service.secrets)
    }

    // MARK: Reads (source thread)

    func read(into buffer: UnsafeMutableRawBufferPointer) -> ReadResult {
        let (result, waiter) = state.withLock { s -> (ReadResult, CheckedContinuation<Void, Never>?) in
            let result = s.audio.read(into: buffer)
            if case .utteranceEnd = result { s.ledger.readReachedEnd() }
            if case .data = result, let waiter = s.roomWaiter, s.audio.room >= waiter.needed {
                s.roomWaiter = nil
                return (result, waiter.continuation)
            }
            return (result, nil)
        }
        waiter?.resume()
        return result
    }

    func takeWordMarks(limit: Int) -> [WordMark] {
        state.withLock { $0.ledger.takeMarks(limit: limit) }
    }

    // MARK: Cancel, watchdog, counters

    func cancel() {
        let (connection, waiter) = state.withLock { s -> (WebSocketConnection?, CheckedContinuation<Void, Never>?) in
            s.cancelled = true
            s.audio.cancel()
            let connection = s.connection
            s.connection = nil
            let waiter = s.roomWaiter?.continuation
            s.roomWaiter = nil
            return (connection, waiter)
        }
        connection?.close()
        waiter?.resume()
    }

    /// Checks the handshake's and the server's deadlines until the stream is over.
    private func watch() async {
        let tick = min(0.1, options.stallTimeout / 4, options.connectTimeout / 4)
        while true {
            try? await Task.sleep(nanoseconds: UInt64(tick * 1e9))
            let over = state.withLock { s -> Bool in
                if s.cancelled || s.failed || s.finished { return true }
                let time = now()
                let elapsed = s.lastLook == 0 ? 0 : time - s.lastLook
                s.lastLook = time
                if s.ledger.writing != s.owingUtterance {
                    s.owingUtterance = s.ledger.writing
                    s.owingFor = 0
                }
                if (s.ledger.owesAudio || s.closingSent) && s.roomWaiter == nil && s.connection != nil { s.owingFor += elapsed }
                guard let connection = s.connection else { return false }
                if !connection.isOpen {
                    if time - s.connectStarted > options.connectTimeout {
                        let error = PluginError(
                            code: "connect-timeout",
                            message: "\(service.name) did not answer the WebSocket handshake at \(display) within \(options.connectTimeout) s")
                        s.connection = nil
                        connection.close()
                        if s.ledger.awaitsAudio || s.closingSent { fail(&s, error) } else { s.idleFailure = error }
                        settle(&s)
                    }
                } else if (s.ledger.owesAudio || s.closingSent) && s.roomWaiter == nil && time - s.lastHeard > options.stallTimeout {
                    fail(&s, PluginError(
                        code: "stalled",
                        message: "\(service.name) sent nothing for \(options.stallTimeout) s while audio was due, "
                            + "after \(s.receivedBytes) bytes of audio"))
                } else if s.owingFor > options.utteranceTimeout {
                    fail(&s, PluginError(
                        code: "utterance-timeout",
                        message: "\(service.name) did not finish an utterance within \(options.utteranceTimeout) s "
                            + "(utterance-timeout; waits for room not counted), after \(s.receivedBytes) bytes of audio"))
                }
                return s.failed
            }
            if over { return }
        }
    }

    var counters: [Counter] {
        state.withLock { s in
            [
                Counter("peak-buffered-bytes", Int64(s.audio.peak)),
                Counter("buffer-bytes", Int64(s.audio.capacity)),
                Counter("received-bytes", Int64(s.receivedBytes)),
                Counter("messages", Int64(s.messages)),
                Counter("connections", Int64(s.connections)),
                Counter("pauses", Int64(s.pauses)),
            ]
        }
    }
}

/// Seconds on the monotonic clock.
private func now() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}
