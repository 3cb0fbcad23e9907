import Foundation
import SluiceAudio
import SluiceGraph
import Synchronization

/// A voice that stays on the bus: one speech graph, one JACK client and its ports, reply after
/// reply — where `SpeechController` speaks once. Built on the runtime `sluice serve` uses:
/// each reply plays to its end at once, `cancel()` barges in and says what was heard,
/// `pause()` holds without tearing anything down.
///
/// ```swift
/// let session = try SpeechSession()                  // espeak → … → jack.sink, client up
/// let first = try session.speak("Hello. How can I help?")
/// _ = first.waitUntilHeard(timeout: 10)
/// for try await token in reply { try session.yield(text: token) }   // a streamed reply
/// try session.endReply()
/// let cut = session.cancel()                         // the user talked over it
/// try session.close()
/// ```
///
/// Every method may be called from any thread.
public final class SpeechSession: Sendable {
    /// The compiled graph speaking.
    public let graph: CompiledGraph
    private let run: LiveRun
    private let sourceName: String
    // SAFETY: a source's text calls are thread-safe against its `produce`; `book`'s lock keeps
    // one caller at a time giving it text, in order.
    private nonisolated(unsafe) let source: any TextDrivenSource
    private let book = LedgerBook()
    private let finished = Mutex<Result<RunReport, SpeechError>?>(nil)
    private let ended = DispatchSemaphore(value: 0)
    private let closed = Atomic<Bool>(false)

    /// The ledger, shared with the run's event observer and with `Reply` handles.
    final class LedgerBook: Sendable {
        private let ledger = Mutex(ReplyLedger())
        func withLock<R>(_ body: (inout ReplyLedger) -> R) -> R { ledger.withLock { body(&$0) } }
    }

    /// Compiles the speech graph for JACK, opens the client and starts playing silence: the
    /// ports are up from here until `close()`.
    ///
    /// - Throws: `SpeechError.graph` for a configuration that does not fit (a session plays
    ///   into JACK, not a file), `.jack` when no server runs.
    public init(_ configuration: SpeechConfiguration = SpeechConfiguration()) throws(SpeechError) {
        guard case .jack = configuration.output else {
            throw .graph("a speech session plays into JACK; to render a file, use SpeechController")
        }
        let compiled = try SpeechGraph.compile(configuration)
        graph = compiled.graph
        sourceName = compiled.sourceName
        source = compiled.source
        book.withLock { $0.language = configuration.chunker.language ?? compiled.language }
        do {
            run = try LiveRun(graph: compiled.graph)
        } catch {
            throw .graph("\(error)")
        }
        run.marksGapsBetweenReplies()
        run.eventObserver = { [book] event in
            if event.kind == .marker, let marker = event.marker { book.withLock { _ = $0.record(marker) } }
        }
        do {
            try run.start()
        } catch {
            throw .jack(message: "\(error)", result: nil)
        }
        let thread = Thread { [self] in
            let outcome: Result<RunReport, SpeechError>
            do {
                outcome = .success(try run.wait())
            } catch {
                outcome = .failure(.jack(message: "\(error)", result: nil))
            }
            finished.withLock { $0 = outcome }
            ended.signal()
        }
        thread.name = "sluice-session"
        thread.start()
    }

    /// A reply given to the session: its utterances, and whether the listener has heard them.
    public struct Reply: Sendable {
        /// The ids of the utterances (sentences) the reply became.
        public let utterances: Range<Int>
        let book: LedgerBook

        /// Whether the listener has heard the reply to its end (an empty reply: at once).
        public var isHeard: Bool {
            guard let last = utterances.last else { return true }
            return book.withLock { $0.hasHeard(last) }
        }

        /// Waits up to `timeout` seconds for the reply to be heard to its end; whether it was.
        /// A barge-in that cut it leaves it unheard.
        public func waitUntilHeard(timeout: Double) -> Bool {
            let deadline = monotonicSeconds() + timeout
            while !isHeard {
                if monotonicSeconds() >= deadline { return false }
                usleep(5_000)
            }
            return true
        }
    }

    /// Speaks `text` after what is queued (or, `interrupting`, instead of it: a barge-in first).
    @discardableResult
    public func speak(_ text: String, interrupting: Bool = false) throws(SpeechError) -> Reply {
        if interrupting { _ = cancel() }
        return try give(text, more: false)
    }

    /// Gives a piece of the reply under way (a language model's token); sentences are spoken
    /// as they complete.
    public func yield(text: String) throws(SpeechError) {
        _ = try give(text, more: true)
    }

    /// The streamed reply is complete: its last sentence is spoken. Returns what the pieces
    /// since the last complete sentence became.
    @discardableResult
    public func endReply() throws(SpeechError) -> Reply {
        try give("", more: false)
    }

    /// Barge-in: what plays fades out within 5 ms, the text and audio still queued are
    /// dropped, and the session takes the next reply at once. Says what the listener heard
    /// since the last cancel, to the sentence.
    @discardableResult
    public func cancel() -> ReplyLedger.Cut {
        book.withLock { ledger -> ReplyLedger.Cut in
            guard !closed.load(ordering: .acquiring), let next = source.interrupt() else {
                return ReplyLedger.Cut(heard: [], partial: nil, unheard: 0)
            }
            for playhead in run.playheads { playhead.discard(untilUtterance: next) }
            return ledger.cut(resumingAt: next)
        }
    }

    /// Fades out and holds: silence, nothing dropped or torn down, until `resume()`.
    public func pause() { run.pause() }

    /// Goes on where `pause()` stopped, fading in.
    public func resume() { run.resume() }

    /// Whether a pause holds.
    public var isPaused: Bool { run.isPaused }

    /// Seconds of the stream heard so far (waits between replies not counted).
    public var position: Double { run.status.position }

    /// Fades out, ends the graph and closes the JACK client; the run's report. Further calls
    /// return the same report.
    @discardableResult
    public func close() throws(SpeechError) -> RunReport {
        if !closed.exchange(true, ordering: .acquiringAndReleasing) {
            source.finishText()
            run.cancel()
            ended.wait()
            ended.signal()  // for any other caller waiting
        } else {
            ended.wait()
            ended.signal()
        }
        return try finished.withLock { $0 }!.get()
    }

    private func give(_ text: String, more: Bool) throws(SpeechError) -> Reply {
        if closed.load(ordering: .acquiring) { throw .alreadyFinished }
        if let failure = finished.withLock({ $0 }), case .failure(let error) = failure { throw error }
        let given = book.withLock { $0.give(text, more: more, to: source) }
        return Reply(utterances: given.ids, book: book)
    }
}
