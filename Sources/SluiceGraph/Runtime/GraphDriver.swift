/// What runs a compiled graph to its end: `LiveRun` (a device's clock) or `OfflineRenderer`
/// (a virtual clock, as fast as the machine allows). Both drive the same `GraphRuntime` —
/// slots, edges, playheads — and follow the sinks' drain events and statistics the same way
/// (`RunStatistics.follow`), so a caller (the speech layer, the tool) holds one of these and
/// does not care which.
///
/// Lifecycle: set the observers → `start()` → `wait()` on one thread (the observers are called
/// there) → the report. `cancel()` from any thread fades out and ends the run.
public protocol GraphDriver: AnyObject, Sendable {
    /// [control-thread] Called on the thread in `wait()` with each drain event of the first
    /// sink, in order (markers played, start, underruns, the end). Set before `start()`.
    var eventObserver: ((DrainEvent) -> Void)? { get set }
    /// [control-thread] Called on the thread in `wait()` after each look at the buffers (every
    /// few milliseconds live, every period offline) with where playback stands. Set before
    /// `start()`.
    var statusObserver: ((PlaybackStatus) -> Void)? { get set }
    /// [control-thread] Whether the report carries a `RunTimeline` of the run (buffer fill,
    /// events, utterances over time). Off by default: it keeps a sample every 5 ms. Set
    /// before `start()`.
    var recordsTimeline: Bool { get set }
    /// [control-thread] Gets ready to play: prepares the graph, opens the devices.
    func start() throws
    /// Plays to the end (or the cancel) and returns the run's report.
    func wait() throws -> RunReport
    /// [any-thread] Fades out and ends the run.
    func cancel()
    /// [any-thread] The first sink's playhead, once started (live: from `init`).
    var primaryPlayhead: Playhead? { get }
}

extension GraphDriver {
    /// Starts the run and waits for it.
    public func run() throws -> RunReport {
        try start()
        return try wait()
    }
}
