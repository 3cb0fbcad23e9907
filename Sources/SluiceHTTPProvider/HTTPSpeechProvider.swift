import Foundation
import Glibc
import SluicePluginKit
import Synchronization

/// A provider that speaks each utterance with one HTTP request to a service and streams the
/// response body (raw PCM) to the host as it arrives.
///
/// Utterances are requested one after another, in order, by a transfer thread of its own; the
/// next request starts as soon as the previous response is complete, so the network stays
/// ahead of playback. Memory is bounded by `buffer`: when it is full the transfer pauses and
/// the server's sends slow down (`CurlSession`). A failure ends the stream after the audio
/// already received; `cancel` aborts the transfer at once.
public final class HTTPSpeechProvider: Provider, @unchecked Sendable {
    // SAFETY (@unchecked Sendable): `thread` is written once in `init` and read in `deinit`;
    // everything shared lives in `worker`, which synchronises itself.
    public let format: PCMFormat
    private let worker: TransferWorker
    private var thread = pthread_t()

    public init(service: any HTTPSpeechService, options: HTTPOptions) throws(PluginError) {
        format = service.format
        worker = try TransferWorker(service: service, options: options)
        let context = Unmanaged.passRetained(worker).toOpaque()
        let started = pthread_create(&thread, nil, { context in
            // SAFETY: balances the passRetained above; the worker lives until the loop ends.
            let worker = Unmanaged<TransferWorker>.fromOpaque(context!).takeRetainedValue()
            worker.run()
            return nil
        }, context)
        guard started == 0 else {
            Unmanaged<TransferWorker>.fromOpaque(context).release()
            throw PluginError(code: "thread", message: "could not start the transfer thread (error \(started))")
        }
    }

    deinit {
        worker.cancel()
        pthread_join(thread, nil)
    }

    public func beginUtterance() throws(PluginError) {
        try worker.text.withLock { (text) throws(PluginError) in
            guard !text.open else { throw PluginError(code: "utterance-open", message: "an utterance is already open") }
            text.open = true
            text.current = ""
        }
    }

    public func push(text piece: String) throws(PluginError) {
        try worker.text.withLock { (text) throws(PluginError) in
            guard text.open else { throw PluginError(code: "no-utterance", message: "text pushed outside an utterance") }
            text.current += piece
        }
    }

    public func endUtterance() throws(PluginError) {
        try worker.text.withLock { (text) throws(PluginError) in
            guard text.open else { throw PluginError(code: "no-utterance", message: "no utterance is open") }
            text.open = false
            text.queue.append(text.current)
            text.current = ""
        }
        worker.session.wakeUp()
    }

    public func endText() {
        worker.text.withLock { $0.ended = true }
        worker.session.wakeUp()
    }

    public func read(into buffer: UnsafeMutableRawBufferPointer) -> ReadResult {
        let (result, room) = worker.audio.withLock { audio in (audio.read(into: buffer), audio.room) }
        // Wake the transfer thread only when it is paused and its held chunk now fits.
        if case .data = result, worker.paused.load(ordering: .acquiring), room >= worker.resumeRoom.load(ordering: .relaxed) {
            worker.session.wakeUp()
        }
        return result
    }

    public func cancel() { worker.cancel() }

    public var counters: [Counter] { worker.counters }
}

/// The transfer thread's side: the text queue, the buffered audio and the loop that turns one
/// into the other.
final class TransferWorker: @unchecked Sendable {
    // SAFETY (@unchecked Sendable): `text` and `audio` are Mutex-protected, the flags and
    // counters atomic; `service`, `options` and `session` are used by the transfer thread
    // only (`session.wakeUp` excepted, which is thread-safe).

    struct Text {
        var open = false
        var current = ""
        var queue: [String] = []
        var ended = false
    }

    let service: any HTTPSpeechService
    let options: HTTPOptions
    let session: CurlSession
    let text = Mutex(Text())
    let audio: Mutex<BufferedAudio>
    let cancelled = Atomic<Bool>(false)
    /// The transfer is paused for room; `resumeRoom` bytes must be free to resume.
    let paused = Atomic<Bool>(false)
    let resumeRoom = Atomic<Int>(0)
    private let requests = Atomic<Int>(0)
    private let retries = Atomic<Int>(0)
    private let pauses = Atomic<Int>(0)
    private let receivedBytes = Atomic<Int>(0)
    private let capacity: Int

    init(service: any HTTPSpeechService, options: HTTPOptions) throws(PluginError) {
        self.service = service
        self.options = options
        capacity = options.bufferBytes(for: service.format)
        audio = Mutex(BufferedAudio(capacity: capacity))
        session = try CurlSession(limits: .init(
            connectTimeout: options.connectTimeout, stallTimeout: options.stallTimeout, requestTimeout: options.utteranceTimeout))
    }

    func cancel() {
        cancelled.store(true, ordering: .releasing)
        audio.withLock { $0.cancel() }
        session.wakeUp()
    }

    var isCancelled: Bool { cancelled.load(ordering: .acquiring) }

    var counters: [Counter] {
        [
            Counter("peak-buffered-bytes", Int64(audio.withLock { $0.peak })),
            Counter("buffer-bytes", Int64(capacity)),
            Counter("received-bytes", Int64(receivedBytes.load(ordering: .relaxed))),
            Counter("requests", Int64(requests.load(ordering: .relaxed))),
            Counter("retries", Int64(retries.load(ordering: .relaxed))),
            Counter("pauses", Int64(pauses.load(ordering: .relaxed))),
        ]
    }

    // MARK: The transfer thread

    func run() {
        while !isCancelled {
            let next: String?? = text.withLock { text in
                if !text.queue.isEmpty { return .some(text.queue.removeFirst()) }
                return text.ended && !text.open ? .some(nil) : nil
            }
            switch next {
            case .none:
                session.wait(0.5)
            case .some(.none):
                audio.withLock { $0.finish() }
                return
            case .some(.some(let utterance)):
                do throws(PluginError) {
                    try speak(utterance)
                    audio.withLock { $0.endUtterance() }
                } catch {
                    if !isCancelled { audio.withLock { $0.fail(redacted(error)) } }
                    return
                }
            }
        }
    }

    /// Requests one utterance and streams its audio into the buffer, retrying what the
    /// service says may be retried (only before any of its audio arrived).
    private func speak(_ utterance: String) throws(PluginError) {
        // Nothing to say: no request (services refuse empty text), an empty utterance.
        guard !utterance.trimmingWhitespace.isEmpty else { return }
        try service.prepare(text: utterance) { (request) throws(PluginError) in
            try session.fetch(request, cancelled: { isCancelled })
        }
        let request = try service.request(for: utterance)
        let limit = options.maximumUtteranceBytes(for: service.format)
        var attempt = 0
        while true {
            requests.add(1, ordering: .relaxed)
            // Audio of this utterance so far; past `limit` the rest is refused (a retry comes
            // only before any audio, so the count never spans two attempts' audio).
            var utteranceBytes = 0
            var tooLong = false
            let outcome = session.perform(
                request,
                deliver: { [self] bytes in
                    let allowed = min(bytes.count, limit - utteranceBytes)
                    if allowed < bytes.count {
                        // What fits under the limit still plays; a chunk that does not fit in
                        // the buffer now is dropped with the rest (at most one network chunk).
                        if allowed > 0, audio.withLock({ $0.write(UnsafeRawBufferPointer(rebasing: bytes.prefix(allowed))) }) {
                            receivedBytes.add(allowed, ordering: .relaxed)
                            utteranceBytes += allowed
                        }
                        tooLong = true
                        return false
                    }
                    guard audio.withLock({ $0.write(bytes) }) else { return false }
                    utteranceBytes += bytes.count
                    receivedBytes.add(bytes.count, ordering: .relaxed)
                    return true
                },
                canResume: { [self] held in audio.withLock { $0.room } >= held },
                // Past the limit the transfer is paused (deliver refused the chunk) and ends
                // here, as a cancel would.
                cancelled: { isCancelled || tooLong },
                onPause: { [self] held in
                    pauses.add(1, ordering: .relaxed)
                    resumeRoom.store(held, ordering: .relaxed)
                    paused.store(true, ordering: .releasing)
                })
            paused.store(false, ordering: .releasing)
            if tooLong {
                throw PluginError(
                    code: "utterance-too-long",
                    message: "the server sent more than \(options.maximumUtteranceSeconds) s of audio for one utterance of \(utterance.count) characters; "
                        + "the rest was refused (raise max-utterance if that much is right)")
            }
            switch outcome {
            case .completed: return
            case .cancelled: throw PluginError(code: "cancelled", message: "cancelled")
            case .failed(let error): throw error
            case .refused(let response):
                switch service.failure(for: response) {
                case .fail(let error): throw error
                case .retry(let error):
                    guard attempt < options.retries else {
                        var final = error
                        if options.retries > 0 { final.message += " (gave up after \(options.retries) retries)" }
                        throw final
                    }
                    retries.add(1, ordering: .relaxed)
                    sleep(options.retryDelay * Double(1 << attempt))
                    attempt += 1
                    if isCancelled { throw PluginError(code: "cancelled", message: "cancelled") }
                }
            }
        }
    }

    /// Waits `seconds`, or less when cancelled.
    private func sleep(_ seconds: Double) {
        let end = monotonicSeconds() + seconds
        while !isCancelled {
            let left = end - monotonicSeconds()
            if left <= 0 { return }
            session.wait(left)
        }
    }

    /// `error` with every secret replaced, whatever the server echoed back.
    func redacted(_ error: PluginError) -> PluginError {
        SecretRedaction.redacted(error, secrets: service.secrets)
    }
}
