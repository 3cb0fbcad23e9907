import SluiceGraph

/// How fast a test source may produce, on the graph's clock: so a tone or a file can stand in
/// for a slow (or fast) speech provider, or one that stalls, with results that do not depend
/// on the machine.
///
/// - pace `p` > 0: by graph time `t` at most `⌊p · rate · t⌋` frames in all; the next frame is
///   due at the first time `t` with `⌊p · rate · t⌋ ≥ produced + 1`, about
///   `(produced + 1) / (p · rate)`. Pace 0 does not limit anything.
/// - stall `[a, a + d)`: no frames while `a ≤ t < a + d`. The pace budget still counts from
///   time 0, so a paced source catches up in a burst after the stall, as a provider
///   delivering a delayed batch would.
struct SourcePacing: Sendable, Hashable {
    var pace: Double
    var rate: Int
    var stall: Range<Double>?

    enum Allowance: Equatable {
        /// Up to this many frames now (`Int.max` when unlimited).
        case frames(Int)
        /// Nothing until this graph time.
        case waiting(until: Double)
    }

    /// What a source that has produced `produced` frames may produce at graph time `time`.
    func allowance(produced: Int, at time: Double) -> Allowance {
        if let stall, stall.contains(time) { return .waiting(until: stall.upperBound) }
        guard pace > 0 else { return .frames(.max) }
        let due = dueFrames(at: time)
        if due > produced { return .frames(due - produced) }
        return .waiting(until: nextDue(after: produced))
    }

    /// `⌊pace · rate · time⌋`.
    func dueFrames(at time: Double) -> Int {
        let due = (pace * Double(rate) * time).rounded(.down)
        return due >= Double(Int.max) ? .max : max(0, Int(due))
    }

    /// The first time at which frame `produced` (counting from 0) is due. Computed as
    /// `(produced + 1) / (pace · rate)`, then nudged up where rounding would leave
    /// `dueFrames` one short there, so a call at exactly that time always makes progress.
    func nextDue(after produced: Int) -> Double {
        var time = Double(produced + 1) / (pace * Double(rate))
        while dueFrames(at: time) <= produced { time = time.nextUp }
        return time
    }
}

/// Parameters several sources share, declared once so they read the same everywhere.
enum SourceParameters {
    static let pace = ParameterDescriptor(
        "pace", .number(0...10_000), default: .number(0), unit: "× real time",
        summary: "Produce at most pace × rate × t frames by graph time t, like a provider; 0 is unpaced.")

    static let rate = ParameterDescriptor(
        "rate", .rate(1_000...384_000), default: .integer(48_000), unit: "Hz",
        summary: "Output rate; auto takes the rate of the sink downstream, or 48000.")

    static let channels = ParameterDescriptor(
        "channels", .integer(1...8), default: .integer(1),
        summary: "Output channels, all carrying the same signal.")
}
