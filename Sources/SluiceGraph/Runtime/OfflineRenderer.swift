import Glibc
import Synchronization

/// Runs a graph on a virtual clock, as fast as the machine allows: each tick, the sources
/// produce what they may by that time, the worker moves everything it can, and each sink's
/// playhead renders one block — exactly what a device would have played, watermark, pacing
/// and underruns included. The output is bit-identical from run to run: a source with
/// nothing yet (a provider waiting for its network) stops the virtual clock while a sink needs
/// its audio, so network timing never shows in a render.
///
/// It stands in for any sink: with `output` set, each sink's audio goes there (a file for
/// `sluice render`) instead of to the sink, so a graph written for JACK renders unchanged.
/// Silence before playback starts is not delivered; silence from underruns is.
public final class OfflineRenderer: GraphDriver, @unchecked Sendable {
    public enum RenderError: Error, Sendable, Hashable, CustomStringConvertible {
        /// Nothing moved for a long stretch of graph time and no source is waiting for a
        /// later time: the graph can never finish.
        case stalled(graphSeconds: Double, detail: String)

        public var description: String {
            switch self {
            case .stalled(let seconds, let detail):
                "the graph stalled at \(format(seconds)) s: nothing moved for \(format(OfflineRenderer.stallSeconds)) s of graph time (\(detail))"
            }
        }
    }

    /// One tick, as an observer sees it after the sinks rendered.
    public struct Tick: Sendable {
        public var index: Int
        /// Graph time at the start of the tick.
        public var time: Double
        /// Frames in the first sink's buffer before it rendered.
        public var bufferedFrames: Int
        public var state: Playhead.State
        /// Frames the first sink has played (taken from its buffer) so far.
        public var playedFrames: Int
        /// Frames that reached the first sink's buffer so far.
        public var scheduledFrames: Int
    }

    static let stallSeconds = 60.0

    let graph: CompiledGraph
    // SAFETY: set by `run` before anything reads it, on the thread that calls `run`.
    private var runtime: GraphRuntime!
    private let cancelRequested = Atomic<Bool>(false)
    /// Where each sink's audio goes instead of the sink: (sink index, interleaved samples).
    public var output: ((Int, UnsafeBufferPointer<Float>) throws -> Void)?
    /// Called after every tick (tests watch the flow control with it).
    public var observer: ((Tick) -> Void)?
    /// Called with each drain event of the first sink, in order, as the ticks render.
    public var eventObserver: ((DrainEvent) -> Void)?
    /// Called after every tick with where the first sink's playback stands.
    public var statusObserver: ((PlaybackStatus) -> Void)?
    public var recordsTimeline = false
    /// Called now and then with the fraction done, when the primary source knows its length.
    public var progress: ((Double) -> Void)?
    public var primaryPlayhead: Playhead? { runtime?.sinks.first?.playhead }

    public init(graph: CompiledGraph) throws {
        self.graph = graph
    }

    /// [any-thread] Fades out and ends the render at the next tick.
    public func cancel() {
        cancelRequested.store(true, ordering: .releasing)
    }

    /// Renders until every sink has played out (or the render is cancelled).
    ///
    /// - Parameter progress: called now and then with the fraction done, when the primary
    ///   source knows its length.
    public func run(progress: ((Double) -> Void)?) throws -> RunReport {
        self.progress = progress
        try start()
        return try wait()
    }

    /// [control-thread] Prepares the graph: edges, nodes, files a sink writes. Set `output`
    /// first: sinks whose audio goes there are never prepared (a wav.sink does not create its
    /// file).
    public func start() throws {
        precondition(runtime == nil, "an offline renderer runs once")
        runtime = try GraphRuntime(graph: graph, live: false, prepareSinks: output == nil)
    }

    /// Renders until every sink has played out (or the render is cancelled).
    public func wait() throws -> RunReport {
        precondition(runtime != nil, "start the renderer first")
        let progress = self.progress
        let wallStart = monotonicSeconds()
        defer { runtime.deactivate() }
        var statistics = RunStatistics(runtime: runtime, recordsTimeline: recordsTimeline)
        let block = runtime.graph.playback.blockFrames
        let sinks = runtime.sinks
        guard let primary = sinks.first else { return RunReport() }
        let buffers = sinks.map { sink in
            UnsafeMutablePointer<Float>.allocate(capacity: (block * sink.playhead.sampleRate / primary.playhead.sampleRate + 2) * sink.playhead.channels)
        }
        defer { for buffer in buffers { buffer.deallocate() } }
        var started = [Int?](repeating: nil, count: sinks.count)
        var ended = [Int?](repeating: nil, count: sinks.count)
        var cancelled = false
        var lastMovement = 0.0
        let expected = runtime.sources.first?.node.expectedDuration

        var tick = 0
        while true {
            let time = Double(tick * block) / Double(primary.playhead.sampleRate)
            if !cancelled && cancelRequested.load(ordering: .acquiring) {
                cancelled = true
                for source in runtime.sources { source.node.cancel() }
                for sink in sinks { sink.playhead.cancel() }
            }
            var anyWaiting = false
            var anyIdle = false
            if moveEverything(at: time, anyWaiting: &anyWaiting, anyIdle: &anyIdle) { lastMovement = time }
            // A source with nothing yet (idle, not waiting for a graph time) waits on the world
            // outside the graph: a network, text still arriving. Graph time stands still for it
            // while a sink would otherwise starve, so what renders never depends on how fast
            // that world was (and a provider's network pauses are not underruns).
            var idleSince: Double?
            while anyIdle && !cancelRequested.load(ordering: .acquiring) && anySinkStarving(sinks, block: block, primaryRate: primary.playhead.sampleRate) {
                let now = monotonicSeconds()
                if let since = idleSince, now - since > Self.stallSeconds {
                    let states = runtime.sources.map { "\($0.name): \($0.isFinished ? "finished" : "no data")" }
                    throw RenderError.stalled(graphSeconds: time, detail: states.joined(separator: ", ") + ", for \(format(Self.stallSeconds)) s of wall time")
                }
                if idleSince == nil { idleSince = now }
                usleep(500)
                anyIdle = false
                if moveEverything(at: time, anyWaiting: &anyWaiting, anyIdle: &anyIdle) {
                    lastMovement = time
                    idleSince = nil
                }
                // What arrived may settle an `auto` watermark that still waits for a
                // measurement: without this, a sink buffering toward the initial "wait for
                // the end" would starve until the text stream closed (`speak - --out` with
                // standard input open).
                runtime.updateAutoWatermarks(at: time)
            }
            statistics.update(at: time, wallTime: monotonicSeconds() - wallStart)
            runtime.updateAutoWatermarks(at: time)
            // Periods to render before the sources and the worker run again. One, unless every
            // sink is playing from a buffer that holds several and no source is waiting for a
            // later time: then the worker could not change what those periods play (each has
            // its frames already, so no underrun and no watermark decision can differ), and
            // rendering them together saves the steps in between.
            let periods = anyWaiting || cancelled ? 1 : periodsReady(sinks, block: block, primaryRate: primary.playhead.sampleRate)
            for period in 0..<periods {
                let index = tick + period
                let buffered = sinks[0].writer.writtenUnits.load(ordering: .relaxed) - sinks[0].playhead.playedFrames
                for sinkIndex in sinks.indices where !sinks[sinkIndex].playhead.isFinished || ended[sinkIndex] == nil {
                    let sink = sinks[sinkIndex]
                    let rate = sink.playhead.sampleRate
                    let first = index * block * rate / primary.playhead.sampleRate
                    let frames = (index + 1) * block * rate / primary.playhead.sampleRate - first
                    sink.playhead.render(into: buffers[sinkIndex], frames: frames)
                    statistics.follow(sinks, only: sinkIndex, observer: eventObserver) { _, event in
                        switch event.kind {
                        case .started: if started[sinkIndex] == nil { started[sinkIndex] = event.deviceFrame }
                        case .finished, .cancelled: ended[sinkIndex] = event.deviceFrame
                        default: break
                        }
                    }
                    if let start = started[sinkIndex] {
                        let from = max(start, first) - first
                        let to = min(ended[sinkIndex] ?? Int.max, first + frames) - first
                        if to > from {
                            let samples = UnsafeBufferPointer(
                                start: buffers[sinkIndex] + from * sink.playhead.channels, count: (to - from) * sink.playhead.channels)
                            if let output { try output(sinkIndex, samples) } else { try sink.node.write(samples) }
                        }
                    }
                    if sink.playhead.isFinished && ended[sinkIndex] == nil { ended[sinkIndex] = first + frames }
                }
                if let statusObserver { statusObserver(RunStatistics.status(of: sinks[0])) }
                // Each period's end is a look at the buffer too: several periods can render
                // between two updates, and the picture should show the buffer draining.
                if recordsTimeline { statistics.sampleTimeline(at: Double((index + 1) * block) / Double(primary.playhead.sampleRate)) }
                observer?(Tick(
                    index: index, time: Double(index * block) / Double(primary.playhead.sampleRate),
                    bufferedFrames: buffered, state: sinks[0].playhead.state,
                    playedFrames: sinks[0].playhead.playedFrames,
                    scheduledFrames: sinks[0].writer.writtenUnits.load(ordering: .relaxed)))
                if let expected, expected > 0, index % 512 == 0 {
                    progress?(min(1, Double(sinks[0].playhead.playedFrames) / (expected * Double(primary.playhead.sampleRate))))
                }
            }
            tick += periods - 1
            if allFinished(sinks) { break }
            if !anyWaiting && time - lastMovement > Self.stallSeconds {
                let states = runtime.sources.map { "\($0.name): \($0.isFinished ? "finished" : "not finished")" }
                throw RenderError.stalled(graphSeconds: time, detail: states.joined(separator: ", "))
            }
            tick += 1
        }
        for sink in sinks where output == nil { try sink.node.finish() }
        progress?(1)
        let endTime = Double((tick + 1) * block) / Double(primary.playhead.sampleRate)
        var report = statistics.report(graphSeconds: endTime, wallSeconds: monotonicSeconds() - wallStart)
        report.cancelled = cancelled
        return report
    }

    /// Sources produce and the worker moves audio until neither can do more at `time`.
    private func moveEverything(at time: Double, anyWaiting: inout Bool, anyIdle: inout Bool) -> Bool {
        var movedAtAll = false
        var moved = true
        while moved {
            moved = false
            for index in runtime.sources.indices {
                let source = runtime.sources[index]
                var idle = 0
                loop: while true {
                    switch source.step(at: time) {
                    case .progressed:
                        moved = true
                    case .idle:
                        idle += 1
                        if idle == 64 {
                            anyIdle = true
                            break loop
                        }
                    case .waiting:
                        anyWaiting = true
                        break loop
                    case .full, .finished, .suspended:
                        // (Suspended: only a live run's sources survive a failure.)
                        break loop
                    }
                }
            }
            if runtime.workerPass() { moved = true }
            movedAtAll = movedAtAll || moved
        }
        return movedAtAll
    }

    /// Most periods rendered between two runs of the sources and the worker.
    static let maximumBatch = 16

    /// How many whole periods every sink can play from what it holds now (1 to
    /// `maximumBatch`); 1 when a sink is not playing.
    private func periodsReady(_ sinks: [GraphRuntime.SinkSlot], block: Int, primaryRate: Int) -> Int {
        var periods = Self.maximumBatch
        for index in sinks.indices {
            let playhead = sinks[index].playhead
            guard playhead.state == .playing else { return 1 }
            periods = min(periods, bufferedFrames(sinks[index]) / periodFrames(playhead, block: block, primaryRate: primaryRate))
        }
        return max(1, periods)
    }

    /// Whether a sink could not render its next period from what it holds: buffering below
    /// its watermark, or playing with less than a period.
    private func anySinkStarving(_ sinks: [GraphRuntime.SinkSlot], block: Int, primaryRate: Int) -> Bool {
        for index in sinks.indices {
            let playhead = sinks[index].playhead
            switch playhead.state {
            case .finished: continue
            case .buffering:
                // Full of markers: the playhead starts with what it has (see Playhead.markersFull).
                if playhead.markersFull && bufferedFrames(sinks[index]) > 0 { continue }
                if bufferedFrames(sinks[index]) < min(max(playhead.watermarkFrames, 1), playhead.capacityFrames) { return true }
            case .playing:
                if bufferedFrames(sinks[index]) < periodFrames(playhead, block: block, primaryRate: primaryRate) { return true }
            }
        }
        return false
    }

    /// Frames in a sink's buffer not yet played.
    private func bufferedFrames(_ sink: GraphRuntime.SinkSlot) -> Int {
        sink.writer.writtenUnits.load(ordering: .acquiring) - sink.playhead.playedFrames
    }

    /// The most frames a sink renders in one period: a block at the primary rate, scaled to
    /// the sink's rate, plus one for rounding.
    private func periodFrames(_ playhead: Playhead, block: Int, primaryRate: Int) -> Int {
        block * playhead.sampleRate / primaryRate + 1
    }

    /// A loop, not `allSatisfy`: this runs every tick and must not allocate, even unoptimized.
    private func allFinished(_ sinks: [GraphRuntime.SinkSlot]) -> Bool {
        for index in sinks.indices where !sinks[index].playhead.isFinished { return false }
        return true
    }
}
