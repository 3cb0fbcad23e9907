import Foundation
import Synchronization

/// What a served graph was asked and what it played, counted for `/metrics`: requests by
/// command and outcome (from every surface: socket, OSC, web), utterances begun and heard to
/// their end, cancels, and how long each `speak` waited for its first utterance to be heard.
///
/// Threading: [thread-safe]. Counted on the threads that handle requests and on the run's
/// control thread, never on the real-time thread.
public final class ServedCounters: Sendable {
    /// One command's count with one outcome: `ok`, or the error's code.
    public struct RequestCount: Sendable, Hashable {
        public let command: String
        public let result: String
        public let count: Int
    }

    /// The most `speak` requests waiting for their first utterance that are remembered; past
    /// it the oldest is forgotten (a cancel forgets them all).
    static let waitingLimit = 1024
    /// The most first-audio samples kept between two takes; past it the oldest are dropped.
    static let sampleLimit = 4096

    private struct State {
        var requests: [String: [String: Int]] = [:]
        var utterancesStarted = 0
        var utterancesEnded = 0
        var cancels = 0
        /// The first utterance of each `speak` not yet heard, and when it was asked for.
        var waiting: [(utterance: Int, since: Double)] = []
        var firstAudio: [Double] = []
    }

    private let state = Mutex(State())

    public init() {}

    func count(_ command: String, result: String) {
        state.withLock { $0.requests[command, default: [:]][result, default: 0] += 1 }
    }

    func spoke(firstUtterance: Int) {
        let now = Self.now()
        state.withLock { state in
            if state.waiting.count >= Self.waitingLimit { state.waiting.removeFirst() }
            state.waiting.append((firstUtterance, now))
        }
    }

    func utteranceStarted(_ id: Int) {
        let now = Self.now()
        state.withLock { state in
            state.utterancesStarted += 1
            guard let index = state.waiting.firstIndex(where: { $0.utterance == id }) else { return }
            if state.firstAudio.count >= Self.sampleLimit { state.firstAudio.removeFirst() }
            state.firstAudio.append(now - state.waiting[index].since)
            state.waiting.remove(at: index)
        }
    }

    func utteranceEnded() { state.withLock { $0.utterancesEnded += 1 } }

    func cancelled() {
        state.withLock { state in
            state.cancels += 1
            state.waiting.removeAll()
        }
    }

    /// Every command asked so far, by outcome.
    public var requests: [RequestCount] {
        state.withLock { state in
            state.requests.flatMap { command, results in
                results.map { RequestCount(command: command, result: $0.key, count: $0.value) }
            }
        }
    }

    public var utterancesStarted: Int { state.withLock { $0.utterancesStarted } }
    public var utterancesEnded: Int { state.withLock { $0.utterancesEnded } }
    public var cancels: Int { state.withLock { $0.cancels } }

    /// The seconds from each `speak` to its first utterance being heard, since the last take.
    public func takeFirstAudio() -> [Double] {
        state.withLock { state in
            defer { state.firstAudio.removeAll(keepingCapacity: true) }
            return state.firstAudio
        }
    }

    private static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}
