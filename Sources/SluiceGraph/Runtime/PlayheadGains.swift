/// The output gains of the nodes before a sink's buffer, applied by its playhead to what it
/// plays (`OutputGainNode`): a change is heard from the next period instead of after
/// everything the sink holds.
///
/// Each node's changes arrive on its own `ParameterQueue`, as they would at the node, and are
/// acknowledged with the sink's stream frame from which they hold; a timed change (`at`) waits
/// for that stream frame and splits the period there. The gain of each output channel is the
/// product of every node's, moving in a straight line over the ramp of the change that moved
/// it.
///
/// Threading: `apply` [audio-thread] (the playhead's render); the rest [control-thread], before
/// the graph runs.
import SluiceAudio

final class PlayheadGains: @unchecked Sendable {
    struct Contribution {
        // SAFETY: `owners` keeps both alive for the stage's life; read without retaining.
        let queue: Unmanaged<ParameterQueue>
        let gains: any OutputGains
    }

    let channels: Int
    /// The queues and gains, owned here for the stage's life.
    private let owners: [(node: String, queue: ParameterQueue, gains: any OutputGains)]
    // SAFETY: `contributionCount` records, and one ramp per channel, allocated in `init`,
    // freed in `deinit`; touched only by `apply`, on one thread at a time.
    private let contributions: UnsafeMutablePointer<Contribution>
    private let contributionCount: Int
    private let ramps: UnsafeMutablePointer<GainRamp>
    /// True while every channel's gain is exactly 1 and still: the period passes untouched.
    private var unity: Bool

    /// - Parameter nodes: each node's name, the queue its changes arrive on, and its gains.
    init(channels: Int, nodes: [(node: String, queue: ParameterQueue, gains: any OutputGains)]) {
        precondition(channels > 0 && !nodes.isEmpty)
        self.channels = channels
        owners = nodes
        contributionCount = nodes.count
        contributions = .allocate(capacity: nodes.count)
        for (index, node) in nodes.enumerated() {
            (contributions + index).initialize(to: Contribution(queue: .passUnretained(node.queue), gains: node.gains))
        }
        ramps = .allocate(capacity: channels)
        ramps.initialize(repeating: GainRamp(1), count: channels)
        unity = true
        for channel in 0..<channels {
            let gain = Self.product(nodes.map(\.gains), channel: channel)
            ramps[channel] = GainRamp(gain)
            unity = unity && gain == 1
        }
    }

    deinit {
        contributions.deinitialize(count: contributionCount)
        contributions.deallocate()
        ramps.deallocate()
    }

    /// The nodes whose gains this stage applies, by name, with their queues.
    var queues: [(node: String, queue: ParameterQueue)] { owners.map { ($0.node, $0.queue) } }

    private static func product(_ gains: [any OutputGains], channel: Int) -> Float {
        gains.reduce(1) { $0 * $1.gain(channel: channel) }
    }

    /// [audio-thread] Applies the gains to `frames` interleaved frames the playhead rendered,
    /// whose first frame is stream frame `streamFrame`: changes due there first, then a
    /// timed change at its own frame within the period.
    func apply(to output: UnsafeMutablePointer<Float>, frames: Int, streamFrame: Int) {
        var offset = 0
        while offset < frames {
            let position = streamFrame + offset
            var end = frames
            var index = 0
            while index < contributionCount {
                let queue = contributions[index].queue
                if queue._withUnsafeGuaranteedRef({ $0.hasPending() }) {
                    if queue._withUnsafeGuaranteedRef({ $0.applyPending(to: contributions[index].gains, atOutputFrame: position) }) {
                        retarget(rampFrames: contributions[index].gains.rampFrames)
                    }
                    if let timed = queue._withUnsafeGuaranteedRef({ $0.nextTimedFrame(after: position) }) {
                        end = min(end, offset + (timed - position))
                    }
                }
                index += 1
            }
            if !unity { scale(output + offset * channels, frames: end - offset) }
            offset = end
        }
    }

    /// Moves every channel toward the product of the current gains.
    private func retarget(rampFrames: Int) {
        var channel = 0
        while channel < channels {
            var gain: Float = 1
            var index = 0
            while index < contributionCount {
                gain *= contributions[index].gains.gain(channel: channel)
                index += 1
            }
            ramps[channel].ramp(to: gain, over: rampFrames)
            channel += 1
        }
        unity = false
    }

    private func scale(_ samples: UnsafeMutablePointer<Float>, frames: Int) {
        var settled = true
        var channel = 0
        while channel < channels {
            ramps[channel].apply(toChannel: channel, of: samples, frames: frames, channels: channels)
            settled = settled && ramps[channel].isUnity
            channel += 1
        }
        unity = settled
    }
}
