/// A gain that moves to a new value in a straight line over a set number of frames instead
/// of jumping (a jump in gain is a click). Used by the fader, each mixer input, the channel
/// map and the gains a playhead applies for the nodes before its buffer.
public struct GainRamp: Sendable {
    /// The gain applied to the next frame.
    public private(set) var current: Float
    /// Where the ramp ends.
    public private(set) var target: Float
    private var step: Float = 0
    private var remaining = 0

    public init(_ gain: Float = 1) {
        current = gain
        target = gain
    }

    /// Moves to `gain` over `frames` frames (at once when `frames` is 0).
    public mutating func ramp(to gain: Float, over frames: Int) {
        target = gain
        if frames <= 0 {
            current = gain
            remaining = 0
        } else {
            step = (gain - current) / Float(frames)
            remaining = frames
        }
    }

    /// True when the gain is exactly 1 and not moving: audio passes untouched.
    /// Compared as bits, which for 1 is the same test: the compiler then compares with an
    /// immediate instead of loading a constant of 1 from memory, a cache line of its own in
    /// the JACK callback's period (CHANGELOG.md, Earlier measurements, "jack: Flat chains").
    @inlinable public var isUnity: Bool {
        current.bitPattern == 0x3F80_0000 && target.bitPattern == 0x3F80_0000  // 1.0's bits
    }

    /// Multiplies `frames` interleaved frames in place.
    public mutating func apply(to samples: UnsafeMutablePointer<Float>, frames: Int, channels: Int) {
        var frame = 0
        while remaining > 0 && frame < frames {
            advance()
            for channel in 0..<channels { samples[frame * channels + channel] *= current }
            frame += 1
        }
        if frame < frames && current != 1 {
            let gain = current
            for index in (frame * channels)..<(frames * channels) { samples[index] *= gain }
        }
    }

    /// Multiplies one channel (`channel` of `channels`) of `frames` interleaved frames in place.
    public mutating func apply(toChannel channel: Int, of samples: UnsafeMutablePointer<Float>, frames: Int, channels: Int) {
        var frame = 0
        while remaining > 0 && frame < frames {
            advance()
            samples[frame * channels + channel] *= current
            frame += 1
        }
        if frame < frames && current != 1 {
            let gain = current
            for index in frame..<frames { samples[index * channels + channel] *= gain }
        }
    }

    /// Adds `frames` interleaved frames of `source`, scaled, into `destination`.
    public mutating func accumulate(
        _ source: UnsafePointer<Float>, into destination: UnsafeMutablePointer<Float>,
        frames: Int, channels: Int
    ) {
        var frame = 0
        while remaining > 0 && frame < frames {
            advance()
            for channel in 0..<channels {
                let index = frame * channels + channel
                destination[index] += source[index] * current
            }
            frame += 1
        }
        let gain = current
        for index in (frame * channels)..<(frames * channels) {
            destination[index] += source[index] * gain
        }
    }

    @inline(__always)
    private mutating func advance() {
        remaining -= 1
        // Land exactly on the target, whatever rounding the steps accumulated.
        current = remaining == 0 ? target : current + step
    }
}
