import SluiceAudio

/// Shapes the edges of the audio so nothing clicks, and applies a gain that moves smoothly.
///
/// - Fade in over `fadeLength` frames at the start of the stream and after every break in
///   continuity (a `discontinuity` marker, or an utterance boundary flagged discontinuous).
/// - Fade out over the last `fadeLength` frames before such a break and before the end of the
///   stream. To shape frames before it knows a break is coming, the node holds back the most
///   recent `fadeLength` frames (its latency).
/// - `cancel()` fades out what it holds — within one fade length — and drops everything after.
/// - `setGain(_:rampFrames:)` moves the gain in a straight line, never in a jump.
/// - `setFadeLengths(in:out:)` shortens the fades (never beyond `fadeLength`, the look-ahead
///   that holds what a fade out shapes) from the next break on: a fade under way keeps its
///   length, so a change never makes a step.
///
/// Frames outside the fades pass bit-identical while the gain is 1. The curve is a raised
/// cosine. A segment (the audio between two breaks) no longer than `fadeLength` gets both
/// fades squeezed into halves of its length, so even a blip rises and falls smoothly.
///
/// Threading: one thread at a time (the graph worker). `process`, `receive`, `cancel` and
/// `setGain` never allocate.
public final class Fader {
    public static let defaultFadeLength = 256

    // What `processFrameForFrame` reads comes first, in declaration order, so that it lies on
    // the object's first cache line: the JACK callback finds it cold and pays per line.
    public let channels: Int
    public let fadeLength: Int
    /// True after `cancel()`, until `reset()`.
    public private(set) var isCancelled = false
    /// Frames at the front of `held` already shaped and due out before anything else.
    private var releasing = 0
    /// Output frames written since the stream began.
    public private(set) var framesProduced = 0
    private var gainRamp = GainRamp()

    /// Frames held back so an end can be faded.
    public var latencyFrames: Int { fadeLength }
    public var gain: Float { gainRamp.current }

    private var held: FrameDelayLine
    /// Frames taken since the last break in continuity (the current segment's length).
    private var segmentFrames = 0
    private let curve: FadeCurve
    /// The fades asked for (`setFadeLengths`), at most `fadeLength`.
    public private(set) var fadeInLength: Int
    public private(set) var fadeOutLength: Int
    /// The current segment's fade in: `fadeInLength` as it was when the segment began.
    private var segmentFadeIn: Int

    public init(channels: Int, fadeLength: Int = Fader.defaultFadeLength) {
        precondition(channels > 0 && fadeLength >= 0)
        self.channels = channels
        self.fadeLength = fadeLength
        held = FrameDelayLine(channels: channels, capacity: fadeLength)
        curve = .raisedCosineIn(length: fadeLength)
        fadeInLength = fadeLength
        fadeOutLength = fadeLength
        segmentFadeIn = fadeLength
    }

    /// The largest gain change between neighbouring frames that a fade makes.
    public var steepestFadeStep: Float { curve.steepestStep }

    /// - Returns: frames taken from `input` and frames written to `output`. Frames not taken
    ///   must be offered again; call with empty input to collect released frames.
    @inline(__always)
    public func process(
        _ input: UnsafeBufferPointer<Float>, into output: UnsafeMutableBufferPointer<Float>
    ) -> (framesConsumed: Int, framesProduced: Int) {
        // No look-ahead, nothing held, not cancelled: a copy and the gain, small enough to
        // inline into the node's step; shaping (and everything rare) is out of line
        // (CHANGELOG.md, Earlier measurements, "jack: Fewer lines a period").
        if let target = output.baseAddress, let source = input.baseAddress,
            let frames = processFrameForFrame(source, into: target, samples: min(input.count, output.count) / channels * channels)
        {
            return (frames, frames)
        }
        return shape(input, into: output)
    }

    /// `process`'s usual case on plain buffers, for the JACK cycle's frame-for-frame period
    /// (`FaderNode.frameKernel`): `samples` samples from `input` to `output` (which may be
    /// the same) with the gain, when there is no look-ahead, nothing held and no cancel; the
    /// frames made, or nil to have the period go through `process`.
    @inline(__always)
    public func processFrameForFrame(_ input: UnsafePointer<Float>, into output: UnsafeMutablePointer<Float>, samples: Int) -> Int? {
        guard _fastPath(fadeLength == 0 && releasing == 0 && !isCancelled) else { return nil }
        let frames = samples / channels
        if UnsafePointer(output) != input { output.update(from: input, count: frames * channels) }
        finish(output, frames)
        return frames
    }

    /// `process` with fades: the look-ahead, a release under way, a cancel.
    @inline(never)
    private func shape(
        _ input: UnsafeBufferPointer<Float>, into output: UnsafeMutableBufferPointer<Float>
    ) -> (framesConsumed: Int, framesProduced: Int) {
        guard let target = output.baseAddress else { return (0, 0) }
        let room = output.count / channels
        var produced = 0

        if releasing > 0 {
            produced = min(releasing, room)
            held.removeOldest(produced, into: target)
            releasing -= produced
        }
        if isCancelled {
            // Everything after a cancel is dropped.
            finish(target, produced)
            return (input.count / channels, produced)
        }
        guard releasing == 0, let source = input.baseAddress else {
            finish(target, produced)
            return (0, produced)
        }

        let available = input.count / channels
        if fadeLength == 0 {
            let frames = min(available, room - produced)
            (target + produced * channels).update(from: source, count: frames * channels)
            finish(target, produced + frames)
            return (frames, produced + frames)
        }

        // Fill the delay line, then each incoming frame pushes the oldest one out. A frame is
        // faded in as it leaves: by then the node knows its segment is longer than the fade.
        var consumed = min(available, held.freeFrames)
        held.append(source, frames: consumed)
        segmentFrames += consumed
        let pushing = min(available - consumed, room - produced)
        var pushed = 0
        while pushed < pushing {
            let run = min(pushing - pushed, held.count)
            fadeInOldest(run, firstIndex: segmentFrames - held.count)
            held.removeOldest(run, into: target + (produced + pushed) * channels)
            held.append(source + (consumed + pushed) * channels, frames: run)
            segmentFrames += run
            pushed += run
        }
        consumed += pushing
        finish(target, produced + pushing)
        return (consumed, produced + pushing)
    }

    /// Takes a marker whose position the input has reached. Breaks in continuity fade out
    /// what is held and arm a fade-in for what follows.
    public func receive(_ marker: Marker, emitting batch: inout MarkerBatch) {
        if marker.breaksContinuity && !isCancelled {
            fadeOutHeld()
        }
        batch.append(marker.moved(to: framesProduced + held.count))
    }

    /// Fades out what is held, within one fade length, and drops all later input until
    /// `reset()`. Collect the faded frames with `process`.
    public func cancel() {
        guard !isCancelled else { return }
        fadeOutHeld()
        isCancelled = true
    }

    /// Moves the gain to `gain` in a straight line over `rampFrames` output frames.
    public func setGain(_ gain: Float, rampFrames: Int) {
        gainRamp.ramp(to: gain, over: rampFrames)
    }

    /// Fade lengths for the breaks to come, each clamped to `0...fadeLength`: the next segment
    /// fades in over `in` frames, and the next break fades out over the last `out` frames
    /// before it (a segment not yet begun takes its fade in at once). Never allocates.
    public func setFadeLengths(in fadeIn: Int, out fadeOut: Int) {
        fadeInLength = min(max(fadeIn, 0), fadeLength)
        fadeOutLength = min(max(fadeOut, 0), fadeLength)
        // A segment that has not begun takes its fade in from now.
        if segmentFrames == 0 { segmentFadeIn = fadeInLength }
    }

    /// Forgets the stream; the next frame fades in again. The gain and fade lengths are kept.
    public func reset() {
        held.removeAll()
        releasing = 0
        segmentFrames = 0
        segmentFadeIn = fadeInLength
        isCancelled = false
        framesProduced = 0
    }

    /// Fades in the oldest `frames` held frames, which are about to leave. `firstIndex` is the
    /// position of the first of them in its segment; only a segment's first `segmentFadeIn`
    /// frames fade.
    private func fadeInOldest(_ frames: Int, firstIndex: Int) {
        var index = 0
        while firstIndex + index < segmentFadeIn && index < frames {
            let gain = curve.value(at: firstIndex + index, of: segmentFadeIn)
            let frame = held.frame(index)
            for channel in 0..<channels { frame[channel] *= gain }
            index += 1
        }
    }

    /// Shapes the held frames of the current segment for a break and releases them: a fade
    /// out over the last `fadeOutLength` of them, and the fade-in those still owe. A segment
    /// held whole and no longer than its fades gets both squeezed into halves of its length;
    /// one shorter than the two fades together is quieter where they overlap.
    private func fadeOutHeld() {
        let span = held.count - releasing
        let firstIndex = segmentFrames - span
        let squeezed = firstIndex == 0 && span <= max(segmentFadeIn, fadeOutLength) && segmentFadeIn > 0 && fadeOutLength > 0
        let rise = squeezed ? (span + 1) / 2 : segmentFadeIn
        let fall = squeezed ? span - rise : min(span, fadeOutLength)
        for index in 0..<span {
            var gain: Float = 1
            let segmentIndex = firstIndex + index
            if segmentIndex < rise { gain = curve.value(at: segmentIndex, of: rise) }
            let fromEnd = span - 1 - index
            if fromEnd < fall { gain *= curve.value(at: fromEnd, of: fall) }
            let frame = held.frame(releasing + index)
            for channel in 0..<channels { frame[channel] *= gain }
        }
        releasing = held.count
        segmentFrames = 0
        segmentFadeIn = fadeInLength
    }

    /// Applies the gain to the frames written this call and counts them.
    @inline(__always)
    private func finish(_ target: UnsafeMutablePointer<Float>, _ frames: Int) {
        if _slowPath(!gainRamp.isUnity) {
            gainRamp.apply(to: target, frames: frames, channels: channels)
        }
        framesProduced += frames
    }
}
