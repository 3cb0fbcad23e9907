/// Gathers a run's timings and counters from the drain events and the slots.
struct RunStatistics {
    let runtime: GraphRuntime
    private var report = RunReport()
    private var now = 0.0
    /// Recorded only when the driver was asked to (`recordsTimeline`).
    var timeline: RunTimeline?
    private var xrunsSeen = 0
    /// Frames the dropping links had let go at the last look, for the timeline.
    private var dropsSeen = 0

    init(runtime: GraphRuntime, recordsTimeline: Bool = false) {
        self.runtime = runtime
        if recordsTimeline { timeline = RunTimeline() }
    }

    /// Whether the first sink's edge has had no audio yet at any look: the time to the first
    /// buffer is still to be measured, by looking. Not for a sink the cycle feeds: its audio
    /// is there in the period it is made (and a direct section's never enters the edge).
    var awaitsFirstBuffer: Bool {
        report.timeToFirstBuffer == nil && !runtime.sinks.isEmpty && !runtime.sinks[0].fedInCycle
    }

    /// Looks at the buffers at graph time `time`.
    mutating func update(at time: Double, wallTime: Double) {
        now = time
        // Index, not `first`: unspecialized `first` boxes its result in debug builds, and
        // this runs every tick.
        guard !runtime.sinks.isEmpty else { return }
        let sink = runtime.sinks[0]
        let written = sink.writer.writtenUnits.load(ordering: .relaxed)
        if report.timeToFirstBuffer == nil && written > 0 { report.timeToFirstBuffer = time }
        // A live sink's edge notes its fullest since the last look (`tracksFill`): its peak is
        // exact however seldom the run looks.
        let held = max(written - sink.playhead.playedFrames, sink.writer.takeFillPeak())
        let buffered = Double(held) / Double(sink.playhead.sampleRate)
        report.peakBufferedSeconds = max(report.peakBufferedSeconds, buffered)
        if timeline != nil {
            sampleTimeline(at: time, buffered: buffered)
            let xruns = runtime.graph.devices.reduce(0) { $0 + $1.xruns }
            if xruns > xrunsSeen {
                for _ in xrunsSeen..<xruns { timeline!.mark(.xrun, at: time) }
                xrunsSeen = xruns
            }
            var drops = 0
            var index = 0
            while index < runtime.droppingLinks.count {
                drops += runtime.droppingLinks[index].writer.drops.load(ordering: .relaxed)
                index += 1
            }
            if drops > dropsSeen {
                timeline!.mark(.dropped, at: time)
                dropsSeen = drops
            }
        }
    }

    /// Records the first sink's buffer at graph time `time` in the timeline, if one is kept
    /// (an offline renderer also looks between its updates, at each period it renders).
    mutating func sampleTimeline(at time: Double, buffered known: Double? = nil) {
        guard timeline != nil, !runtime.sinks.isEmpty else { return }
        let sink = runtime.sinks[0]
        let rate = Double(sink.playhead.sampleRate)
        let buffered = known ?? Double(sink.writer.writtenUnits.load(ordering: .relaxed) - sink.playhead.playedFrames) / rate
        let watermark = sink.playhead.watermarkFrames
        timeline!.sample(at: time, buffered: max(0, buffered), watermark: watermark == Int.max ? nil : Double(watermark) / rate)
    }

    /// Takes every sink's waiting drain events in order: each is recorded, the first sink's
    /// are handed to `observer`, and every one to `each` (sink index, event). Live and offline
    /// runs both follow their sinks through this.
    mutating func follow(
        _ sinks: [GraphRuntime.SinkSlot], only: Int? = nil, observer: ((DrainEvent) -> Void)?,
        each: (Int, DrainEvent) -> Void = { _, _ in }
    ) {
        for index in sinks.indices where only == nil || only == index {
            while let event = sinks[index].events.next() {
                record(event, sink: index)
                if index == 0 { observer?(event) }
                each(index, event)
            }
        }
    }

    /// Where the first sink's playback stands: the status a driver's observers see.
    static func status(of sink: GraphRuntime.SinkSlot?) -> PlaybackStatus {
        guard let sink else {
            return PlaybackStatus(state: .finished, position: 0, bufferedSeconds: 0, secondsToBuffer: 0, scheduledSeconds: 0)
        }
        let playhead = sink.playhead
        let rate = Double(playhead.sampleRate)
        // A sink fed in place, in the JACK cycle (a direct chain), has nothing on its edge: what
        // played is all that was made, and nothing is buffered.
        let played = playhead.playedFrames
        let written = max(sink.writer.writtenUnits.load(ordering: .relaxed), played)
        let buffered = written - played
        let watermark = playhead.watermarkFrames
        let toBuffer: Double? = switch playhead.state {
        case .buffering: watermark == Int.max ? nil : Double(max(0, min(watermark, playhead.capacityFrames) - buffered)) / rate
        case .playing, .finished: 0
        }
        // The position is what the listener hears: rendered audio still on its way out of the
        // device (its output latency) is not heard yet.
        return PlaybackStatus(
            state: playhead.state, position: Double(playhead.heardFrames) / rate,
            bufferedSeconds: Double(buffered) / rate, secondsToBuffer: toBuffer, scheduledSeconds: Double(written) / rate,
            watermarkSeconds: watermark == Int.max ? nil : Double(min(watermark, playhead.capacityFrames)) / rate,
            capacitySeconds: Double(playhead.capacityFrames) / rate)
    }

    mutating func record(_ event: DrainEvent, sink index: Int) {
        guard index == 0 else { return }
        let playhead = runtime.sinks[0].playhead
        let rate = Double(playhead.sampleRate)
        if timeline != nil { recordInTimeline(event, at: Double(event.deviceFrame) / rate) }
        switch event.kind {
        case .started:
            if report.timeToFirstAudio == nil { report.timeToFirstAudio = Double(event.deviceFrame) / rate }
            let watermark = playhead.watermarkFrames
            report.watermarkSeconds = watermark == Int.max ? nil : Double(watermark) / rate
        case .underrunEnd:
            let watermark = playhead.watermarkFrames
            report.watermarkSeconds = watermark == Int.max ? nil : Double(watermark) / rate
        default:
            break
        }
    }

    private mutating func recordInTimeline(_ event: DrainEvent, at time: Double) {
        switch event.kind {
        case .started:
            // Only the first start is first audio (the report's, set after this); later ones
            // follow pauses and waits for text.
            if report.timeToFirstAudio == nil { timeline!.mark(.firstAudio, at: time) }
        case .underrunStart: timeline!.mark(.underrunStart, at: time)
        case .underrunEnd: timeline!.mark(.underrunEnd, at: time)
        case .finished: timeline!.mark(.finished, at: time)
        case .cancelled: timeline!.mark(.cancelled, at: time)
        case .marker: if let marker = event.marker { timeline!.played(marker, at: time) }
        }
    }

    /// The timeline as it stands at graph time `graphSeconds`, its duration and capacity set.
    func timelineSoFar(graphSeconds: Double) -> RunTimeline? {
        guard var timeline else { return nil }
        timeline.duration = graphSeconds
        if let sink = runtime.sinks.first {
            timeline.capacitySeconds = Double(sink.playhead.capacityFrames) / Double(sink.playhead.sampleRate)
        }
        return timeline
    }

    func report(graphSeconds: Double, wallSeconds: Double) -> RunReport {
        var report = self.report
        report.timeline = timelineSoFar(graphSeconds: graphSeconds)
        if let sink = runtime.sinks.first {
            report.audioSeconds = Double(sink.playhead.playedFrames) / Double(sink.playhead.sampleRate)
        }
        // Every sink's underruns count (many voices into one client); each is named too when
        // there are several.
        report.underruns = runtime.sinks.reduce(0) { $0 + $1.playhead.underruns }
        report.sourceRealTimeFactor = runtime.sources.first?.realTimeFactor(now: now)
        report.droppedPartialFrames = runtime.droppedPartialFrames
        report.counters = runtime.counters
        if runtime.sinks.count > 1 {
            for sink in runtime.sinks { report.counters["\(sink.name).underruns"] = sink.playhead.underruns }
        }
        // Frames each link with a dropping policy let go (`when-full`), named by the link.
        for (link, writer) in runtime.droppingLinks { report.counters["\(link) dropped"] = writer.drops.load(ordering: .relaxed) }
        report.failures = runtime.sources.compactMap { source in source.failure.map { "\(source.name): \($0.message)" } }
        for source in runtime.sources {
            if let failure = source.failure { report.failureCodes[source.name] = failure.code }
        }
        report.graphSeconds = graphSeconds
        report.wallSeconds = wallSeconds
        return report
    }
}
