/// A node that measures what passes through it and reports levels (the `meter` node): the
/// cycle posts what it measured through a lock-free queue; whoever follows the run (`sluice
/// serve`'s event stream) takes the readings on its control thread.
public protocol MeteringNode: Node {
    /// [control-thread] Every reading completed since the last call, oldest first. Whatever
    /// is computed from many periods (loudness, true peak) is computed here, off the
    /// real-time thread.
    func takeReadings() -> [MeterReading]
}

/// The levels of one window of a meter's stream (`interval` seconds).
public struct MeterReading: Sendable, Hashable {
    /// The node's output frame (counted since its stream began) where the window ends.
    public var frame: Int
    /// Per channel.
    public var channels: [ChannelLevels]
    /// EBU R128 loudness of all channels together (LUFS, BS.1770 weighted): over the last
    /// 400 ms, the last 3 s, and gated over everything so far. Nil when not measured, or for
    /// silence (below the meter's floor).
    public var momentary: Double?
    public var shortTerm: Double?
    public var integrated: Double?

    public init(frame: Int, channels: [ChannelLevels], momentary: Double? = nil, shortTerm: Double? = nil, integrated: Double? = nil) {
        self.frame = frame
        self.channels = channels
        self.momentary = momentary
        self.shortTerm = shortTerm
        self.integrated = integrated
    }

    /// One channel's levels over the window, linear (1 is full scale).
    public struct ChannelLevels: Sendable, Hashable {
        /// The largest sample magnitude.
        public var peak: Double
        /// The root of the mean square.
        public var rms: Double
        /// The largest magnitude between samples too (4× oversampled, BS.1770); nil when not
        /// measured.
        public var truePeak: Double?

        public init(peak: Double, rms: Double, truePeak: Double? = nil) {
            self.peak = peak
            self.rms = rms
            self.truePeak = truePeak
        }
    }
}

/// A node whose hosted plugin reports values of its own (an LV2 plugin's control outputs: its
/// meters, a compressor's gain reduction, a tuner's pitch): the cycle posts each change
/// through a lock-free queue; whoever follows the run (`sluice serve`'s event stream) takes
/// them on its control thread.
public protocol ReportingNode: Node {
    /// [control-thread] The latest value of each output that changed since the last call,
    /// in the order of the outputs.
    func takeReports() -> [ReportedValue]
}

/// One reported value.
public struct ReportedValue: Sendable, Hashable {
    /// The output's name (an LV2 port's symbol).
    public var name: String
    public var value: Double
    /// The node's output frame (counted since its stream began) at the end of the block that
    /// produced it.
    public var frame: Int

    public init(name: String, value: Double, frame: Int) {
        self.name = name
        self.value = value
        self.frame = frame
    }
}
