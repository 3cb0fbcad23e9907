import SluiceGraph
import Synchronization

/// The `null.sink` node: plays into nothing, at the pace of a sound card (or as fast as
/// possible), so graphs can run live, and be timed, without a device.
///
/// In live runs a `ClockThread` pulls one `period` from the playhead at a time: on a wall-clock
/// schedule `speed` times real time (`.realtime(speed:)`), or as soon as a period is ready when
/// `speed` is 0 (`.free`). What it pulls is counted and dropped; offline drivers' `write`
/// calls are counted and dropped the same way.
public final class NullSink: SinkNode {
    public static let type = NodeType(
        NodeDescriptor(
            typeName: "null.sink", kind: .sink,
            summary: "Discards what plays, at the pace of a sound card (or unpaced): runs graphs without a device.",
            inputs: [PortDescriptor("in", .frames, summary: "Float32 frames")],
            parameters: [
                ParameterDescriptor(
                    "rate", .rate(1_000...384_000), default: .auto, unit: "Hz",
                    summary: "The rate it plays at; auto takes the input's. A set rate is what auto rates upstream follow."),
                ParameterDescriptor(
                    "channels", .integer(1...64), default: nil,
                    summary: "Channels the input must have; absent takes the input's."),
                ParameterDescriptor(
                    "speed", .number(0...1_000), default: .number(1), unit: "× real time",
                    summary: "Live runs: how fast it plays, as a sound card would at 1; 0 plays as fast as audio comes."),
                ParameterDescriptor(
                    "period", .integer(16...8_192), default: .integer(256), unit: "frames",
                    summary: "Live runs: frames it takes at a time, like a device period."),
            ])
    ) { parameters in
        NullSink(
            rate: parameters.rate("rate"), channels: SinkFormats.channels(parameters),
            speed: parameters.double("speed"), period: parameters.integer("period"))
    }

    /// The rate asked for, or nil for `auto`.
    public let rate: Int?
    /// The channel count asked for, or nil to take the input's.
    public let channels: Int?
    public let speed: Double
    public let period: Int

    private var inputChannels = 1
    private var clock: ClockThread?
    private let framesDiscarded = Atomic<Int>(0)

    public init(rate: Int? = nil, channels: Int? = nil, speed: Double = 1, period: Int = 256) {
        precondition(speed >= 0, "a speed cannot be negative")
        precondition(period > 0, "a period holds at least one frame")
        self.rate = rate
        self.channels = channels
        self.speed = speed
        self.period = period
    }

    public var decidedRate: Int? { rate }

    /// [any-thread] Frames written (and dropped) since the node was prepared.
    public var framesWritten: Int { framesDiscarded.load(ordering: .relaxed) }

    /// How the clock thread paces itself in live runs.
    public var pace: ClockThread.Pace { speed == 0 ? .free : .realtime(speed: speed) }

    public func outputFormats(for inputs: [StreamFormat], context: FormatContext) throws(FormatMismatch) -> [StreamFormat] {
        _ = try SinkFormats.check(inputs, rate: rate, channels: channels)
        return []
    }

    public func prepare(_ context: PrepareContext) throws {
        guard let input = context.inputFormats.first, case .frames(_, let channels) = input else {
            throw SinkFormats.unprepared(Self.type.descriptor.typeName, context.inputFormats)
        }
        inputChannels = channels
        framesDiscarded.store(0, ordering: .relaxed)
    }

    public func start(_ playhead: Playhead) throws {
        precondition(clock == nil, "a null.sink starts once")
        // SAFETY: unowned: the clock thread ends before `stop` returns, so it never outlives `self`.
        let clock = ClockThread(playhead: playhead, periodFrames: period, pace: pace) { [unowned self] samples in
            try self.write(samples)
        }
        self.clock = clock
        clock.start()
    }

    public func stop() {
        // `write` never throws, so neither can the clock thread.
        try? clock?.stop()
        clock = nil
    }

    public func write(_ samples: UnsafeBufferPointer<Float>) throws {
        framesDiscarded.add(samples.count / inputChannels, ordering: .relaxed)
    }

    public func report(into report: inout NodeReport) {
        report.counters["frames-discarded"] = framesWritten
    }
}
