import Synchronization

/// Drives a playhead for a sink that has no device callback of its own: a thread that
/// renders one period after another and hands each to `write`.
///
/// - `.free` renders only when a whole period is ready (or the stream has ended), sleeping on
///   the playhead's `dataArrived` signal otherwise: files get every frame, no silence, as
///   fast as the graph produces.
/// - `.realtime(speed:)` renders on a wall-clock schedule, `speed` times faster than real
///   time, as a sound card would (speed 1): null sinks, and tests that want a device.
public final class ClockThread: @unchecked Sendable {
    public enum Pace: Sendable, Hashable {
        case free
        case realtime(speed: Double)
    }

    private let playhead: Playhead
    private let periodFrames: Int
    private let pace: Pace
    private let write: (UnsafeBufferPointer<Float>) throws -> Void
    private let stopRequested = Atomic<Bool>(false)
    private var thread: GraphThread?
    // SAFETY: written by the clock thread before it returns, read after `join`.
    nonisolated(unsafe) private var failure: (any Error)?

    /// - Parameter write: [clock thread] receives each rendered period, interleaved.
    public init(
        playhead: Playhead, periodFrames: Int, pace: Pace,
        write: @escaping (UnsafeBufferPointer<Float>) throws -> Void
    ) {
        self.playhead = playhead
        self.periodFrames = periodFrames
        self.pace = pace
        self.write = write
    }

    /// Whether the thread has started and not yet returned.
    public var isRunning: Bool { thread.map { !$0.hasReturned } ?? false }

    public func start() {
        precondition(thread == nil, "a clock thread starts once")
        thread = GraphThread(name: "sluice-clock") { [self] in run() }
    }

    /// Stops rendering and waits for the thread. Rethrows what `write` threw.
    public func stop() throws {
        stopRequested.store(true, ordering: .releasing)
        playhead.dataArrived.post()
        thread?.join()
        if let failure { throw failure }
    }

    private func run() {
        let buffer = UnsafeMutablePointer<Float>.allocate(capacity: periodFrames * playhead.channels)
        defer { buffer.deallocate() }
        let started = monotonicSeconds()
        var periods = 0
        while !stopRequested.load(ordering: .acquiring) && !playhead.isFinished {
            switch pace {
            case .free:
                guard playhead.isReady(toRender: periodFrames) else {
                    playhead.dataArrived.wait(timeout: 0.05)
                    continue
                }
            case .realtime(let speed):
                let due = started + Double(periods * periodFrames) / (Double(playhead.sampleRate) * speed)
                let now = monotonicSeconds()
                if due > now { sleep(seconds: due - now) }
            }
            let before = playhead.playedFrames
            let finished = playhead.render(into: buffer, frames: periodFrames)
            periods += 1
            // A file takes only what played; silence before the start is not part of it.
            let frames = pace == .free ? playhead.playedFrames - before : periodFrames
            do {
                if frames > 0 {
                    try write(UnsafeBufferPointer(start: buffer, count: frames * playhead.channels))
                }
            } catch {
                failure = error
                return
            }
            if finished { return }
        }
    }
}
