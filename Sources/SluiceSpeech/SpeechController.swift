import Foundation
import SluiceGraph
import SluicePlugins
import Synchronization

/// Turns streaming text into speech through a graph: `start()`, `yield(text:)` as the text
/// arrives (a language model's tokens), `finish()`, `waitUntilFinished()`; or `speak(_:)` for
/// one string. `cancel()` (barge-in) fades out and says which part of the text was heard.
///
/// ```swift
/// let speech = try SpeechController(configuration)
/// try speech.start()
/// for try await token in reply { try speech.yield(text: token) }
/// try speech.finish()
/// let result = try await speech.waitUntilFinished()
/// ```
///
/// Every method may be called from any thread. A controller speaks once: after it finished
/// or was cancelled, make a new one. Once started, its thread keeps it (and the JACK client)
/// alive until the speech ends, so end every started controller with `finish()` or `cancel()`.
public final class SpeechController: Sendable {
    /// Where a controller is in its life.
    public enum State: Sendable, Hashable {
        /// Made, not started.
        case idle
        /// Started: taking text and playing.
        case running
        /// `finish()` was called: playing out the rest.
        case finishing
        /// Played out, or ended by a failure.
        case finished
        case cancelled
    }

    private struct Shared {
        var state = State.idle
        var feeder: TextFeeder
        var tracker = HeardTextTracker()
        var outcome: Result<SpeechResult, SpeechError>?
        var startWall = 0.0
        var firstTextWall: Double?
        var observation = PlaybackObservation(scheduledFrames: 0, playedFrames: 0, secondsToBuffer: nil)
        /// What the progress callback was last told.
        var reported = PlaybackObservation(scheduledFrames: 0, playedFrames: 0, secondsToBuffer: nil)
        var timeToFirstBuffer: Double?
        var cancelRequested = false
    }

    private let configuration: SpeechConfiguration
    /// The compiled graph speaking (its nodes, for inspection: a JACK sink's xruns).
    public let graph: CompiledGraph
    private let playback: SpeechPlayback
    private let sourceName: String
    private let shared: Mutex<Shared>
    private let ended = DispatchSemaphore(value: 0)
    /// Set once, before the follower thread starts; joined waiters read it after `ended`.
    private let endedFlag = Atomic<Bool>(false)

    /// Compiles the graph: loads the plugins, checks the graph, and for JACK opens the
    /// client (so a missing server is reported here). Nothing plays before `start()`.
    public init(_ configuration: SpeechConfiguration = SpeechConfiguration()) throws(SpeechError) {
        self.configuration = configuration
        let compiled = try SpeechGraph.compile(configuration)
        sourceName = compiled.sourceName
        graph = compiled.graph
        if let cache = configuration.cache, let provider = compiled.source as? PluginProviderSource,
            let node = compiled.graph.nodes.first(where: { $0.name == compiled.sourceName })
        {
            provider.useCache(ProviderCache(
                cache: cache, provider: provider.typeName,
                parameters: node.parameters.values.mapValues(\.description)))
        }
        switch configuration.output {
        case .jack: playback = try SpeechPlayback.live(graph: compiled.graph)
        case .file(let path): playback = try SpeechPlayback.file(graph: compiled.graph, path: path)
        }
        if configuration.recordsTimeline { playback.recordTimeline() }
        // Sentences end where the voice's language ends them, unless the caller said which.
        let chunker = configuration.chunker.language == nil ? configuration.chunker.speaking(compiled.language) : configuration.chunker
        shared = Mutex(Shared(feeder: TextFeeder(source: compiled.source, chunker: chunker)))
    }

    // MARK: State

    public var state: State { shared.withLock { $0.state } }

    /// Seconds of audio played so far: from the sink's position, never past the audio that
    /// reached it.
    public var playbackTime: Double {
        shared.withLock { min($0.observation.playedFrames, $0.observation.scheduledFrames) }
            .secondsAt(playback.sampleRate)
    }

    /// Seconds still to buffer before playback starts (0 while playing); nil while `auto` is
    /// still measuring or `generateFirst` waits for the whole text.
    public var secondsToBuffer: Double? { shared.withLock { $0.observation.secondsToBuffer } }

    /// Whether text reaches the provider as it arrives (it speaks unfinished utterances)
    /// rather than a sentence at a time.
    public var feedsIncrementally: Bool { shared.withLock { $0.feeder.isIncremental } }

    // MARK: Speaking

    /// Starts playback (opens the JACK client's ports, or the output file). Text may follow.
    public func start() throws(SpeechError) {
        try shared.withLock { (shared) throws(SpeechError) in
            switch shared.state {
            case .idle: break
            case .cancelled: throw .alreadyCancelled
            case .running, .finishing, .finished: throw .alreadyStarted
            }
            shared.startWall = monotonicSeconds()
            playback.observe(
                events: { [self] event in self.shared.withLock { $0.tracker.record(event) } },
                ticks: { [self] observation in self.tick(observation) })
            try playback.start()
            shared.state = .running
        }
        let thread = Thread { [self] in follow() }
        thread.name = "sluice-speech"
        thread.start()
    }

    /// Gives the next piece of text (a token, a word, a sentence). Returns at once.
    public func yield(text: String) throws(SpeechError) {
        try shared.withLock { (shared) throws(SpeechError) in
            try Self.checkTakingText(shared)
            if shared.firstTextWall == nil, !text.isEmpty { shared.firstTextWall = monotonicSeconds() }
            shared.feeder.append(text)
        }
    }

    /// No more text: the rest is spoken and playback ends after it.
    public func finish() throws(SpeechError) {
        try shared.withLock { (shared) throws(SpeechError) in
            try Self.checkTakingText(shared)
            shared.feeder.finish()
            shared.state = .finishing
        }
    }

    private static func checkTakingText(_ shared: Shared) throws(SpeechError) {
        switch shared.state {
        case .idle: throw .notStarted
        case .cancelled: throw .alreadyCancelled
        case .finishing: throw .alreadyFinished
        case .finished:
            // The run ended before `finish()`: it failed; say why.
            if case .failure(let error)? = shared.outcome { throw error }
            throw .alreadyFinished
        case .running: break
        }
    }

    /// Waits until everything given has played (or the speech was cancelled) and returns how
    /// it went. Throws ``SpeechError/provider(_:)`` when the provider failed (what it had
    /// delivered played out first) and ``SpeechError/jack(message:result:)`` when the JACK
    /// server went away. May be called again: it returns the same.
    public func waitUntilFinished() throws(SpeechError) -> SpeechResult {
        let (state, hasRun) = shared.withLock { ($0.state, $0.startWall > 0) }
        switch state {
        case .idle: throw .notStarted
        case .cancelled where !hasRun: throw .alreadyCancelled
        default: break
        }
        waitForEnd()
        return try shared.withLock { $0.outcome! }.get()
    }

    /// `waitUntilFinished()` without blocking the caller's task.
    public func waitUntilFinished() async throws(SpeechError) -> SpeechResult {
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<Result<SpeechResult, SpeechError>, Never>) in
            let thread = Thread { [self] in
                continuation.resume(returning: Result { () throws(SpeechError) in try self.waitUntilFinished() })
            }
            thread.start()
        }
        return try outcome.get()
    }

    /// Starts, speaks `text` and waits until it has played: `start`, `yield`, `finish`,
    /// `waitUntilFinished` in one call.
    @discardableResult
    public func speak(_ text: String) throws(SpeechError) -> SpeechResult {
        try start()
        try yield(text: text)
        try finish()
        return try waitUntilFinished()
    }

    /// `speak(_:)` without blocking the caller's task.
    @discardableResult
    public func speak(_ text: String) async throws(SpeechError) -> SpeechResult {
        try start()
        try yield(text: text)
        try finish()
        return try await waitUntilFinished()
    }

    /// Stops speaking (barge-in): fades out within 5 ms, stops the provider, and returns what
    /// was heard so a conversation can resume from there. Safe in every state and more than
    /// once: before `start()` it only marks the controller cancelled; after the speech ended it
    /// changes nothing and returns what was heard.
    @discardableResult
    public func cancel() -> HeardText {
        let wasRunning = shared.withLock { shared -> Bool in
            switch shared.state {
            case .idle:
                shared.state = .cancelled
                return false
            case .running, .finishing:
                shared.cancelRequested = true
                return true
            case .finished, .cancelled:
                return false
            }
        }
        if wasRunning {
            playback.cancel()
            waitForEnd()
        }
        return shared.withLock { shared in
            switch shared.outcome {
            case .success(let result)?: return result.heard
            case .failure(.provider(let failure))?: return failure.result.heard
            case .failure(.jack(_, let result?))?: return result.heard
            default: return HeardText(remainder: String(decoding: shared.feeder.utf8, as: UTF8.self))
            }
        }
    }

    /// Blocks until the controller's thread has stored the outcome. Each waiter passes the
    /// signal on, so any number of them (and later calls) return.
    private func waitForEnd() {
        guard !endedFlag.load(ordering: .acquiring) else { return }
        ended.wait()
        ended.signal()
    }

    // MARK: Following the run (the controller's thread)

    private func tick(_ observation: PlaybackObservation) {
        let progress = shared.withLock { shared -> SpeechProgress? in
            shared.observation = observation
            if shared.timeToFirstBuffer == nil, observation.scheduledFrames > 0 {
                shared.timeToFirstBuffer = monotonicSeconds() - shared.startWall
            }
            guard configuration.progress != nil,
                observation.scheduledFrames != shared.reported.scheduledFrames || observation.playedFrames != shared.reported.playedFrames
            else { return nil }
            shared.reported = observation
            let rate = playback.sampleRate
            let played = min(observation.playedFrames, observation.scheduledFrames)
            return SpeechProgress(
                samplesGenerated: observation.scheduledFrames, samplesPlayed: played, sampleRate: rate,
                playbackTime: played.secondsAt(rate), secondsToBuffer: observation.secondsToBuffer,
                elapsed: monotonicSeconds() - shared.startWall, timeToFirstBuffer: shared.timeToFirstBuffer)
        }
        if let progress, let callback = configuration.progress, !callback(progress) {
            shared.withLock { $0.cancelRequested = true }
            playback.cancel()
        }
    }

    private func follow() {
        let outcome: Result<RunReport, any Error> = Result { try playback.wait() }
        shared.withLock { shared in
            // A run that failed has no report; what played is known from the last look.
            var report = (try? outcome.get()) ?? RunReport()
            if case .failure = outcome {
                report.audioSeconds = min(shared.observation.playedFrames, shared.observation.scheduledFrames).secondsAt(playback.sampleRate)
                report.wallSeconds = monotonicSeconds() - shared.startWall
            }
            let result = makeResult(report, &shared)
            switch outcome {
            case .success(let report):
                if let code = report.failureCodes[sourceName], !report.cancelled {
                    let message = report.failures.first { $0.hasPrefix("\(sourceName): ") }.map { String($0.dropFirst(sourceName.count + 2)) } ?? code
                    shared.outcome = .failure(.provider(ProviderFailure(node: sourceName, code: code, message: message, result: result)))
                } else {
                    shared.outcome = .success(result)
                }
            case .failure(let error as SpeechError):
                shared.outcome = .failure(error)
            case .failure(let error):
                switch configuration.output {
                case .jack: shared.outcome = .failure(.jack(message: "\(error)", result: result))
                case .file: shared.outcome = .failure(.output("\(error)"))
                }
            }
            shared.state = shared.cancelRequested ? .cancelled : .finished
        }
        endedFlag.store(true, ordering: .releasing)
        ended.signal()
    }

    private func makeResult(_ report: RunReport, _ shared: inout Shared) -> SpeechResult {
        let (heard, utterances) = shared.tracker.heard(
            shared.feeder, rate: playback.sampleRate, wordTiming: shared.feeder.source.reportsWordTiming)
        var firstAudioAfterText: Double?
        if let first = shared.firstTextWall, let played = playback.firstAudioWallTime {
            firstAudioAfterText = max(0, played - first)
        }
        let timings = SpeechTimings(
            timeToFirstBuffer: report.timeToFirstBuffer, timeToFirstAudio: report.timeToFirstAudio,
            firstAudioAfterText: firstAudioAfterText, realTimeFactor: report.sourceRealTimeFactor,
            underruns: report.underruns, audioSeconds: report.audioSeconds, wallSeconds: report.wallSeconds)
        return SpeechResult(timings: timings, heard: heard, utterances: utterances, cancelled: shared.cancelRequested || report.cancelled, report: report)
    }
}

extension Int {
    fileprivate func secondsAt(_ rate: Int) -> Double { Double(self) / Double(rate) }
}
