import SluiceAudio

/// Sums N inputs of the same channel count into one output, each input with its own gain.
/// Gains move in straight-line ramps, never in jumps.
///
/// Threading: one thread at a time (the graph worker). `mix` never allocates.
public final class Mixer {
    public let inputCount: Int
    public let channels: Int
    private let gains: UnsafeMutablePointer<GainRamp>

    public init(inputs: Int, channels: Int) {
        precondition(inputs > 0 && channels > 0)
        inputCount = inputs
        self.channels = channels
        gains = .allocate(capacity: inputs)
        gains.initialize(repeating: GainRamp(), count: inputs)
    }

    deinit {
        gains.deinitialize(count: inputCount)
        gains.deallocate()
    }

    /// The gain input `index` has now.
    public func gain(ofInput index: Int) -> Float {
        precondition(index >= 0 && index < inputCount, "no mixer input \(index)")
        return gains[index].current
    }

    /// Moves input `index`'s gain to `gain` over `rampFrames` frames.
    public func setGain(_ gain: Float, ofInput index: Int, rampFrames: Int = 0) {
        precondition(index >= 0 && index < inputCount, "no mixer input \(index)")
        gains[index].ramp(to: gain, over: rampFrames)
    }

    /// Mixes `frames` frames of every input into `output` (overwriting it).
    ///
    /// - Parameter inputs: one pointer per input, each to `frames × channels` samples.
    public func mix(
        _ inputs: UnsafeBufferPointer<UnsafePointer<Float>>, frames: Int,
        into output: UnsafeMutablePointer<Float>
    ) {
        precondition(inputs.count == inputCount, "the mixer has \(inputCount) inputs")
        output.update(repeating: 0, count: frames * channels)
        for index in 0..<inputCount {
            gains[index].accumulate(inputs[index], into: output, frames: frames, channels: channels)
        }
    }
}
