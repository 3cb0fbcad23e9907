/// Gathers a run's timings and counters from the drain events and the slots.
struct RunStatistics {
    let runtime: GraphRuntime
    private var report = RunReport()
    private var now = 0.0

    init(runtime: GraphRuntime) {
        self.runtime = runtime
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
        let buffered = Double(written - sink.playhead.playedFrames) / Double(sink.playhead.sampleRate)
        report.peakBufferedSeconds = max(report.peakBufferedSeconds, buffered)
    }

    mutating func record(_ event: DrainEvent, sink index: Int) {
        guard index == 0 else { return }
        let playhead = runtime.sinks[0].playhead
        let rate = Double(playhead.sampleRate)
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

    func report(graphSeconds: Double, wallSeconds: Double) -> RunReport {
        var report = self.report
        if let sink = runtime.sinks.first {
            report.audioSeconds = Double(sink.playhead.playedFrames) / Double(sink.playhead.sampleRate)
            report.underruns = sink.playhead.underruns
        }
        report.sourceRealTimeFactor = runtime.sources.first?.realTimeFactor(now: now)
        report.droppedPartialFrames = runtime.droppedPartialFrames
        report.counters = runtime.counters
        report.failures = runtime.sources.compactMap { source in source.failure.map { "\(source.name): \($0.message)" } }
        for source in runtime.sources {
            if let failure = source.failure { report.failureCodes[source.name] = failure.code }
        }
        report.graphSeconds = graphSeconds
        report.wallSeconds = wallSeconds
        return report
    }
}
