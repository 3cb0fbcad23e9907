import Synchronization

/// Runs a graph live: each source on its own thread, one worker thread moving audio through
/// the processors in topological order (sleeping on a semaphore when nothing can move), and
/// each sink pulling from its playhead on its device's clock. The calling thread follows the
/// drain events: flow control, timings, the end of the stream.
///
/// `cancel()` from any thread stops the sources, fades the sinks out within one fade length
/// and lets `wait()` return; every thread is joined before it does.
public final class LiveRun: GraphDriver, @unchecked Sendable {
    let runtime: GraphRuntime
    private let stopRequested = Atomic<Bool>(false)
    private let cancelRequested = Atomic<Bool>(false)
    private let controlWake = WakeSignal()
    private var threads: [GraphThread] = []
    private var finishedThreads: [GraphThread] = []
    private var startedSinks: [any SinkNode] = []
    private var startedDevices: [any GraphDevice] = []
    private var wallStart = 0.0
    private var statistics: RunStatistics

    public init(graph: CompiledGraph) throws {
        runtime = try GraphRuntime(graph: graph, live: true, eventWake: controlWake)
        statistics = RunStatistics(runtime: runtime)
        parameters = ParameterControl(runtime: runtime)
    }

    public var playheads: [Playhead] { runtime.sinks.map(\.playhead) }
    /// [any-thread] Each link whose policy drops (`when-full`), by name, and the frames it
    /// has dropped so far.
    public var linkDrops: [(link: String, frames: Int)] {
        runtime.droppingLinks.map { ($0.link, $0.writer.drops.load(ordering: .relaxed)) }
    }

    /// [any-thread] The last failure of each source that failed so far (a provider's typed
    /// error: its code and message), by node name. What it made before still plays.
    public var sourceFailures: [(node: String, failure: SourceFailure)] {
        runtime.sources.compactMap { source in source.failures.withLock { $0.last }.map { (source.name, $0) } }
    }

    /// [any-thread] How many times each source failed so far, by the failure's code.
    public var sourceFailureCounts: [(node: String, code: String, count: Int)] {
        runtime.sources.flatMap { source in
            source.failures.withLock { $0.byCode }.sorted { $0.key < $1.key }.map { (source.name, $0.key, $0.value) }
        }
    }

    /// [control-thread] Before `start`: a text-driven source that fails (a provider's typed
    /// error) does not end the run. What it made still plays out, with a fade; then it waits
    /// (`failedSources`) until `restartSource` after the caller made it anew
    /// (`TextDrivenSource.interrupt()`). For graphs that serve reply after reply.
    public func survivesSourceFailures() {
        for source in runtime.sources where source.node is any TextDrivenSource { source.survivesFailures = true }
    }

    /// [any-thread] The sources that failed and wait for `restartSource` (or
    /// `endFailedSource`), by node name.
    public var failedSources: [String] {
        runtime.sources.filter { $0.awaitingRestart.load(ordering: .acquiring) }.map(\.name)
    }

    /// [any-thread] A failed source goes on with the text that comes next.
    public func restartSource(_ node: String) {
        runtime.sources.first { $0.name == node }?.restart()
    }

    /// [any-thread] A failed source that cannot be made anew ends its stream after all, with
    /// its failure, as a source of a run that does not survive failures does.
    public func endFailedSource(_ node: String) {
        runtime.sources.first { $0.name == node }?.endAfterFailure()
    }

    /// [any-thread] Every buffered link's fill now: seconds of audio on it and the most it
    /// holds, by name (`from.port -> to.port`). Links carried in place within the cycle have
    /// no buffer and are not listed.
    public var linkFills: [(link: String, heldSeconds: Double, capacitySeconds: Double)] {
        runtime.bufferedLinks.map { link, writer in
            let perSecond = Double(max(1, writer.format.unitsPerSecond))
            return (link, Double(writer.heldUnits) / perSecond, Double(writer.capacityUnits) / perSecond)
        }
    }

    /// Changes the graph's live parameters while it plays (any thread, any number at once).
    public let parameters: ParameterControl

    public var eventObserver: ((DrainEvent) -> Void)?
    public var statusObserver: ((PlaybackStatus) -> Void)?
    public var recordsTimeline = false {
        didSet { statistics.timeline = recordsTimeline ? RunTimeline(window: timelineWindow) : nil }
    }
    /// Keeps a timeline of about the last this many seconds while the graph runs, offered to
    /// other threads by `currentTimeline()` (a served graph's page draws it). It samples at the
    /// control loop's own looks, so it costs no extra wake-ups. Set before `start`.
    public var timelineWindow: Double? {
        didSet {
            statistics.timeline = timelineWindow.map { RunTimeline(window: $0) } ?? (recordsTimeline ? RunTimeline() : nil)
        }
    }
    private let publishedTimeline = Mutex<RunTimeline?>(nil)
    /// When the timeline was last copied out (monotonic seconds): the control loop's, and
    /// under `publishedTimeline`'s lock for readers.
    private var timelinePublished = -Double.infinity
    private nonisolated(unsafe) var timelinePublishedAt = -Double.infinity
    /// When `currentTimeline()` was last called (monotonic seconds, bit pattern).
    private let timelineRead = Atomic<UInt64>(0)

    /// [any-thread] The timeline so far, with its duration and capacity set; nil unless
    /// `timelineWindow` is set. The control loop copies it out every half second while it is
    /// read, and not at all while no one reads: a first read after a quiet spell waits (up to
    /// `timelineWait`, a few looks) for a fresh copy. Not for the real-time thread.
    public func currentTimeline() -> RunTimeline? {
        let asked = monotonicSeconds()
        timelineRead.store(asked.bitPattern, ordering: .relaxed)
        while true {
            let (timeline, at) = publishedTimeline.withLock { ($0, timelinePublishedAt) }
            if asked - at <= Self.timelinePublishInterval * 2 || monotonicSeconds() - asked >= Self.timelineWait {
                return timeline
            }
            controlWake.post()
            sleep(seconds: 0.01)
        }
    }

    /// Seconds between the copies of the timeline `currentTimeline()` hands out while someone
    /// reads it (within `timelineReaderGone`).
    static let timelinePublishInterval = 0.5
    static let timelineReaderGone = 5.0
    /// The longest `currentTimeline()` waits for a fresh copy.
    static let timelineWait = 0.3
    public var primaryPlayhead: Playhead? { runtime.sinks.first?.playhead }

    /// Graph time: the first sink's device clock.
    var graphTime: Double {
        guard let playhead = runtime.sinks.first?.playhead else { return 0 }
        return Double(playhead.deviceFrames) / Double(playhead.sampleRate)
    }

    /// Starts the threads and the sinks' devices.
    public func start() throws {
        precondition(threads.isEmpty, "a live run starts once")
        wallStart = monotonicSeconds()
        for source in runtime.sources {
            threads.append(GraphThread(name: "sluice-source") { [self] in runSource(source) })
        }
        if !runtime.processors.isEmpty {
            threads.append(GraphThread(name: "sluice-worker") { [self] in runWorker() })
        }
        do {
            for sink in runtime.sinks where !(sink.node is any DeviceSinkNode) {
                try sink.node.start(sink.playhead)
                startedSinks.append(sink.node)
            }
            // The device runs the cycle: its sinks and sources, and the nodes between them.
            if let cycle = runtime.cycle {
                for device in runtime.graph.devices {
                    if !device.wakesControl(with: controlWake) { devicesPostNews = false }
                    try device.start(cycle)
                    startedDevices.append(device)
                }
            }
        } catch {
            shutDown()
            throw error
        }
    }

    /// [control-thread] Before `start`: a text-driven source that has spoken all its text marks
    /// the gap with a discontinuity, so every reply plays to its end at once instead of its
    /// last frames waiting, held back by a crossfader or a fader, for the next one. For graphs
    /// that serve reply after reply (`sluice serve`); a stream of one text keeps its
    /// sentences joined by crossfades.
    public func marksGapsBetweenReplies() {
        for source in runtime.sources { source.marksGapsWhenIdle = true }
    }

    /// [any-thread] Fades every sink out within its fade and holds: silence, nothing taken
    /// from the graph (backpressure holds the sources), nothing torn down, until `resume`.
    public func pause() {
        for sink in runtime.sinks { sink.playhead.pause() }
    }

    /// [any-thread] Ends a pause: playback goes on where it stopped, fading in.
    public func resume() {
        for sink in runtime.sinks {
            sink.playhead.resume()
            sink.playhead.dataArrived.post()
        }
    }

    /// True while every sink holds a pause.
    public var isPaused: Bool { runtime.sinks.allSatisfy(\.playhead.isPaused) && !runtime.sinks.isEmpty }

    /// [any-thread] Fades out, stops the sources and ends the run.
    public func cancel() {
        cancelRequested.store(true, ordering: .releasing)
        controlWake.post()
    }

    /// Where playback stands now.
    public var status: PlaybackStatus { RunStatistics.status(of: runtime.sinks.first) }

    /// Follows the run until every sink has played out or the run was cancelled, then joins
    /// every thread and returns the report. Rethrows a sink's failure.
    public func wait() throws -> RunReport {
        var cancelled = false
        var deviceFailure: (any Error)?
        while !runtime.sinks.allSatisfy({ $0.playhead.isFinished }) {
            // A device that went away never renders again: end now, with its error.
            if let failure = runtime.sinks.lazy.compactMap({ $0.node.deviceFailure }).first
                ?? startedDevices.lazy.compactMap(\.failure).first
            {
                deviceFailure = failure
                break
            }
            for device in startedDevices { device.service() }
            if !cancelled && cancelRequested.load(ordering: .acquiring) {
                // The playheads fade out first; the sources stop once they have, so the end
                // of the stream cannot overtake the fade.
                cancelled = true
                for sink in runtime.sinks {
                    sink.playhead.cancel()
                    sink.playhead.dataArrived.post()
                }
            }
            followEvents()
            controlWake.wait(timeout: nextLook)
        }
        followEvents()
        let failure = shutDown()
        var report = statistics.report(graphSeconds: graphTime, wallSeconds: monotonicSeconds() - wallStart)
        report.cancelled = cancelled
        if let playhead = runtime.sinks.first?.playhead, playhead.outputLatencyFrames > 0 {
            report.outputLatency = Double(playhead.outputLatencyFrames) / Double(playhead.sampleRate)
        }
        if !runtime.sources.isEmpty, !runtime.sinks.isEmpty,
            let handed = runtime.sources[0].firstOutputWallTime,
            let played = runtime.sinks[0].playhead.firstAudioWallTime
        {
            report.pipelineLatency = played - handed
        }
        if let deviceFailure { throw deviceFailure }
        if let failure { throw failure }
        return report
    }

    /// Seconds until the control loop looks again unless woken first. The playheads post an
    /// event (underrun, marker, the end), the devices their news (`GraphDevice.wakesControl`)
    /// and `cancel` its request, each waking the loop at once; so it looks on its own only
    /// for what nothing posts: every 5 ms while an `auto` watermark is being sized (from
    /// production over time; `sizingWatermark`), every 10 ms for a timeline's samples, every
    /// 50 ms for a status observer, for the first buffer's arrival and for a device that
    /// cannot post (or waits for ports until a deadline); else once a second. Each look of an
    /// idle thread is a context switch: at 5 ms they were a quarter of a speech run's CPU, and
    /// the 50 ms looks of the control loop and the worker together a quarter of `sluice run`'s
    /// (CHANGELOG.md, Earlier measurements, "jack: Looking less").
    private var nextLook: Double {
        if sizingWatermark { return 0.005 }
        if recordsTimeline && timelineWindow == nil { return 0.01 }
        if statusObserver != nil || statistics.awaitsFirstBuffer || !devicesPostNews
            || startedDevices.contains(where: \.wantsFrequentLooks)
        {
            return 0.05
        }
        return Self.idleLook
    }

    /// Seconds between the looks of a thread that is woken for everything it waits on: the
    /// control loop with nothing to sample, the worker, a source whose edge is full. Only a
    /// safety net.
    static let idleLook = 1.0

    /// Whether every started device posts its news to the control loop.
    private var devicesPostNews = true

    /// Whether a sink's `auto` watermark is being sized: it buffers (before the start, or after
    /// running dry), and a reply is under way or waits in its edge. Not while the primary
    /// source sleeps for text with nothing left to play (before the first reply, between a
    /// served graph's replies): there is nothing to measure, and the source wakes the loop as
    /// it falls asleep and as it wakes (`runSource`). Looking on after an underrun mid-reply
    /// matters: each look re-estimates the watermark with the slower rate the dry spell shows.
    private var sizingWatermark: Bool {
        let waitingForText = runtime.sources.first?.sleepsForText.load(ordering: .acquiring) ?? false
        return runtime.sinks.contains { sink in
            sink.controller.strategy == .auto && sink.playhead.state == .buffering
                && (!waitingForText || sink.writer.writtenUnits.load(ordering: .relaxed) > sink.playhead.playedFrames)
        }
    }

    /// Threads this run started (sources, worker) whose bodies have not returned. Zero once
    /// `wait()` has returned.
    public var runningThreads: Int {
        (threads + finishedThreads).filter { !$0.hasReturned }.count
    }

    private func followEvents() {
        let time = graphTime
        let wallTime = monotonicSeconds() - wallStart
        statistics.update(at: time, wallTime: wallTime)
        statistics.follow(runtime.sinks, observer: eventObserver)
        runtime.updateAutoWatermarks(at: time)
        let read = Double(bitPattern: timelineRead.load(ordering: .relaxed)) - wallStart
        if timelineWindow != nil && wallTime - read < Self.timelineReaderGone
            && wallTime - timelinePublished >= Self.timelinePublishInterval
        {
            // A copy shares the arrays until the next look changes them: one copy of the
            // window per publication, on this thread, and none under the lock.
            timelinePublished = wallTime
            let snapshot = statistics.timelineSoFar(graphSeconds: time)
            let at = wallStart + wallTime
            publishedTimeline.withLock {
                $0 = snapshot
                timelinePublishedAt = at
            }
        }
        if let statusObserver { statusObserver(status) }
    }

    /// Stops devices, then threads; finishes sinks. Returns the first failure.
    @discardableResult
    private func shutDown() -> (any Error)? {
        var failure: (any Error)?
        for device in startedDevices { device.stop() }
        startedDevices.removeAll()
        for sink in startedSinks { sink.stop() }
        stopRequested.store(true, ordering: .releasing)
        for source in runtime.sources {
            source.node.cancel()
            source.wake?.post()
        }
        runtime.workerWake?.post()
        for thread in threads { thread.join() }
        finishedThreads = threads
        threads.removeAll()
        for sink in startedSinks {
            do { try sink.finish() } catch { failure = failure ?? error }
        }
        startedSinks.removeAll()
        runtime.deactivate()
        return failure
    }

    // MARK: Threads

    private func runSource(_ source: SourceSlot) {
        // `auto` sizes its watermark on the control thread once the primary source has made
        // enough of a reply to measure (FlowController): the source wakes it then, for every
        // reply (a served graph's too), so playback can start at the next period, and the
        // control thread need not look every few milliseconds while no reply comes.
        let sizesWatermark = source === runtime.sources.first
            && runtime.sinks.contains { $0.controller.strategy == .auto }
        // The reply (by the unit it began at) whose measurement was posted.
        var measuredReply: Int?
        // The control loop stops and starts its `auto` sizing looks as the source falls asleep
        // for text and wakes (`sizingWatermark`): it is told of each change.
        // In a graph serving reply after reply, the sinks it feeds play a complete utterance
        // while it waits for text, however short the reply (`Playhead.textAwaited`).
        let sourceIndex = runtime.sources.firstIndex { $0 === source }
        let fed = source.marksGapsWhenIdle
            ? runtime.sinks.indices.filter { runtime.sinkSources[$0] == sourceIndex }.map { runtime.sinks[$0].playhead } : []
        func noteSleepsForText(_ sleeps: Bool) {
            guard source.sleepsForText.load(ordering: .relaxed) != sleeps else { return }
            source.sleepsForText.store(sleeps, ordering: .releasing)
            for playhead in fed { playhead.textAwaited.store(sleeps, ordering: .relaxed) }
            if sizesWatermark { controlWake.post() }
        }
        let window = min(FlowController.measureSeconds, source.node.expectedDuration ?? FlowController.measureSeconds)
        var idleLooks = 0
        while !stopRequested.load(ordering: .acquiring) {
            let step = source.step(at: graphTime)
            if step != .idle { idleLooks = 0 }
            switch step {
            case .progressed:
                noteSleepsForText(false)
                if sizesWatermark {
                    let reply = source.segmentStartUnits.load(ordering: .relaxed)
                    if reply != measuredReply && source.segmentProducedSeconds >= window {
                        measuredReply = reply
                        controlWake.post()
                    }
                }
                continue
            case .full:
                // The reader posts the wake as it frees room (the worker as it releases, a
                // playhead once half its edge is free).
                source.wake?.wait(timeout: Self.idleLook)
            case .waiting:
                // Paced sources wait on the device clock, which moves a period at a time.
                sleep(seconds: 0.001)
            case .suspended:
                // Failed, until the served graph makes it anew (`restartSource` posts the wake):
                // nothing more comes of this reply.
                noteSleepsForText(true)
                if let wake = source.wake { _ = wake.wait(timeout: Self.idleLook) } else { sleep(seconds: Self.idleLook) }
            case .idle:
                // A text-driven source that has spoken all its text (`sluice serve` between
                // replies, `speak -` between an LLM's tokens) has nothing until more comes,
                // and text wakes the thread: it sleeps until then.
                if let wake = source.wake, source.waitsForText {
                    noteSleepsForText(true)
                    if wake.wait(timeout: Self.idleLook) { idleLooks = 0 }
                    continue
                }
                // A provider with nothing yet (synthesising, waiting for the network or for
                // text) is looked at again within a millisecond, then, once it has had nothing
                // for a while, less often (provider.h allows "a few milliseconds"): a hundred
                // idle voices polling every millisecond were a hundred thousand context
                // switches a second. New text wakes the thread at once (`onTextArrival`), and
                // the look count starts again from there.
                idleLooks += 1
                let pause = idleLooks <= Self.eagerIdleLooks ? 0.001 : idleLooks <= 4 * Self.eagerIdleLooks ? 0.002 : 0.004
                if let wake = source.wake {
                    if wake.wait(timeout: pause) { idleLooks = 0 }
                } else {
                    sleep(seconds: pause)
                }
            case .finished:
                if sizesWatermark { controlWake.post() }
                return
            }
        }
    }

    /// Idle looks a millisecond apart before a source thread looks less often.
    static let eagerIdleLooks = 20

    private func runWorker() {
        while !stopRequested.load(ordering: .acquiring) {
            if !runtime.workerPass() {
                // Every edge that gained audio or room posted the wake, each post counted: the
                // pass after waking sees all of them, so the rest are dropped. Left counted,
                // a hundred voices' posts became as many passes over every processor. So do a
                // parameter change, a playhead that ran dry (the processors release what they
                // hold back) and the stop: the timeout is only a safety net.
                if runtime.workerWake?.wait(timeout: Self.idleLook) == true { runtime.workerWake?.drain() }
            }
        }
    }
}
