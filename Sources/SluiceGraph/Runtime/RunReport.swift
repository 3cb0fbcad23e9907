/// Timings and counters of one run, printed by `--stats json`. Times are seconds on the
/// graph clock (the sink device's time; virtual time offline) from the start of the run.
public struct RunReport: Sendable, Hashable, Codable {
    /// When the first audio reached the sink's buffer.
    public var timeToFirstBuffer: Double?
    /// When the sink started playing (the watermark was reached).
    public var timeToFirstAudio: Double?
    /// Live runs: wall seconds from the primary source's first bytes entering the graph to
    /// the device callback that rendered the first sample (with watermark 0, the graph's own
    /// latency: at most a device period plus the processing).
    public var pipelineLatency: Double?
    /// Live runs: seconds from the device rendering audio to the listener hearing it (JACK's
    /// playback latency of the sink's ports plus the period rendered ahead), as the device
    /// reports it; nil offline and for devices that report none.
    public var outputLatency: Double?
    /// `timeToFirstAudio` plus `outputLatency`: when the first audio is heard.
    public var timeToFirstHeard: Double? {
        guard let start = timeToFirstAudio else { return nil }
        return start + (outputLatency ?? 0)
    }
    /// Audio played, in seconds.
    public var audioSeconds: Double = 0
    /// Seconds the primary source took per second of audio — wall time inside its `produce`
    /// plus graph time it was not yet due, not time it waited for room: below 1 is faster
    /// than real time.
    public var sourceRealTimeFactor: Double?
    /// Underruns of every sink together (each sink's own are counters `<sink>.underruns` when
    /// a graph has several).
    public var underruns = 0
    public var droppedPartialFrames = 0
    /// The most audio the sink held, in seconds.
    public var peakBufferedSeconds = 0.0
    /// The watermark playback last started from, in seconds (after `auto` sized it).
    public var watermarkSeconds: Double?
    /// Wall-clock seconds the run took.
    public var wallSeconds = 0.0
    /// Graph-clock seconds the run took.
    public var graphSeconds = 0.0
    public var cancelled = false
    /// Source failures, as "node: message".
    public var failures: [String] = []
    /// Source failures' stable codes ("invalid-key", "connection-lost"), by node name.
    public var failureCodes: [String: String] = [:]
    /// Node counters, as "node.counter".
    public var counters: [String: Int] = [:]
    /// The run over time, when the driver was asked to record it (`recordsTimeline`); not
    /// part of `--stats json`, which stays one line of figures.
    public var timeline: RunTimeline?

    public init() {}

    private enum CodingKeys: String, CodingKey {
        case timeToFirstBuffer, timeToFirstAudio, pipelineLatency, outputLatency, audioSeconds
        case sourceRealTimeFactor, underruns, droppedPartialFrames, peakBufferedSeconds
        case watermarkSeconds, wallSeconds, graphSeconds, cancelled, failures, failureCodes, counters
    }
}

/// Where playback stands during a live run (the figures speech libraries expose).
public struct PlaybackStatus: Sendable, Hashable {
    public var state: Playhead.State
    /// Seconds of audio heard: rendered, less the device's output latency.
    public var position: Double
    /// Seconds of audio in the sink's buffer.
    public var bufferedSeconds: Double
    /// Seconds still to buffer before playback starts (0 while playing); nil while `auto` is
    /// still measuring or `generate-first` waits for the end.
    public var secondsToBuffer: Double?
    /// Seconds of audio that reached the sink's buffer so far (played or not).
    public var scheduledSeconds: Double
    /// The watermark playback starts (and restarts after an underrun) from, in seconds; nil
    /// while `auto` is still sizing it or `generate-first` waits for the end.
    public var watermarkSeconds: Double? = nil
    /// The most audio the sink's buffer holds, in seconds.
    public var capacitySeconds: Double = 0
}
