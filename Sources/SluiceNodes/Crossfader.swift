import SluiceAudio

/// Blends the end of one utterance into the start of the next with an equal-power crossfade
/// (`cos`/`sin` curves, computed once), so back-to-back utterances join without a click or a
/// dip in loudness.
///
/// How: the node holds back the most recent `duration` frames of the current utterance. When
/// a continuous `utteranceEnd` is followed by a continuous `utteranceStart`, the held tail
/// (`L` = up to `duration` frames) is overlapped with the first `L` frames of the new
/// utterance: `out[i] = tail[i]·cos(θᵢ) + next[i]·sin(θᵢ)`, `θᵢ = π/2 · (i + ½) / L`. The output
/// is `L` frames shorter than the input; markers are restamped to match, and both boundary
/// markers are emitted where the crossfade begins.
///
/// A discontinuity, a discontinuous boundary, the end of the stream or `flush()` releases the
/// held frames unchanged: edges are the fader's job. While an utterance streams in, the node
/// adds `latencyFrames` of delay; a scheduler that sees its sink starving calls `flush()`.
///
/// Threading: one thread at a time (the graph worker). `process` and `receive` never allocate.
public final class Crossfader {
    public let channels: Int
    /// The longest crossfade, in frames.
    public let durationFrames: Int
    /// Frames held back while an utterance streams in.
    public var latencyFrames: Int { durationFrames }
    /// The longest crossfade that begins from now on: `durationFrames` unless set shorter
    /// (clamped to 0…`durationFrames`). The frames held back stay `durationFrames`; a
    /// shorter crossfade blends the newest frames of the tail and lets the older ones out
    /// unchanged first.
    public var crossfadeFrames: Int {
        didSet { crossfadeFrames = min(max(crossfadeFrames, 0), durationFrames) }
    }

    /// Input frames taken since the stream began.
    public private(set) var framesConsumed = 0
    /// Output frames written since the stream began.
    public private(set) var framesProduced = 0
    /// Crossfades completed.
    public private(set) var crossfades = 0

    private enum Phase {
        /// Frames flow through the delay line.
        case passing
        /// An utterance ended; its tail waits to learn whether a continuous one follows.
        case holdingTail(end: Marker)
        /// The next utterance's frames are being blended into the held tail.
        case blending(mixed: Int, length: Int)
    }

    private var phase = Phase.passing
    private var held: FrameDelayLine
    /// Frames at the front of `held` to write out before anything else.
    private var releasing = 0
    private let fadeIn: FadeCurve
    private let fadeOut: FadeCurve

    public init(channels: Int, durationFrames: Int) {
        precondition(channels > 0 && durationFrames >= 0)
        self.channels = channels
        self.durationFrames = durationFrames
        crossfadeFrames = durationFrames
        held = FrameDelayLine(channels: channels, capacity: durationFrames)
        fadeIn = .equalPowerIn(length: durationFrames)
        fadeOut = .equalPowerOut(length: durationFrames)
    }

    /// The gains for frame `index` of a crossfade `length` frames long (`length` at most
    /// `durationFrames`): `outgoing² + incoming² = 1`.
    public func gains(at index: Int, of length: Int) -> (outgoing: Float, incoming: Float) {
        precondition(length > 0 && length <= durationFrames && index >= 0 && index < length)
        return (fadeOut.value(at: index, of: length), fadeIn.value(at: index, of: length))
    }

    /// - Parameter batch: receives the held `utteranceEnd` when audio arrives with no
    ///   utterance start to crossfade into.
    /// - Returns: frames taken from `input` and frames written to `output`. Frames not taken
    ///   must be offered again; call with empty input to collect released frames.
    public func process(
        _ input: UnsafeBufferPointer<Float>, into output: UnsafeMutableBufferPointer<Float>,
        emitting batch: inout MarkerBatch
    ) -> (framesConsumed: Int, framesProduced: Int) {
        guard let target = output.baseAddress else { return (0, 0) }
        let room = output.count / channels
        var produced = 0
        var consumed = 0

        if releasing > 0 {
            let frames = min(releasing, room)
            held.removeOldest(frames, into: target)
            releasing -= frames
            produced = frames
            if releasing > 0 {
                framesProduced += produced
                return (0, produced)
            }
        }

        let available = input.count / channels
        if let source = input.baseAddress {
            while consumed < available {
                switch phase {
                case .holdingTail(let end):
                    // Audio arrived with no continuous utterance start: no crossfade.
                    batch.append(end.moved(to: framesProduced + produced + held.count))
                    phase = .passing
                    // The held tail goes out first, in order; stop once output is full.
                    let frames = min(held.count, room - produced)
                    held.removeOldest(frames, into: target + produced * channels)
                    produced += frames
                    if held.count > 0 {
                        releasing = held.count
                        framesConsumed += consumed
                        framesProduced += produced
                        return (consumed, produced)
                    }
                case .blending(let mixed, let length):
                    let frames = min(available - consumed, length - mixed)
                    for offset in 0..<frames {
                        let index = mixed + offset
                        let frame = held.frame(releasing + index)
                        let gainOut = fadeOut.value(at: index, of: length)
                        let gainIn = fadeIn.value(at: index, of: length)
                        let incoming = source + (consumed + offset) * channels
                        for channel in 0..<channels {
                            frame[channel] = frame[channel] * gainOut + incoming[channel] * gainIn
                        }
                    }
                    consumed += frames
                    phase = mixed + frames == length ? .passing : .blending(mixed: mixed + frames, length: length)
                case .passing:
                    let passed = pass(
                        source + consumed * channels, frames: available - consumed,
                        into: target + produced * channels, room: room - produced)
                    consumed += passed.consumed
                    produced += passed.produced
                    if passed.consumed == 0 {
                        framesConsumed += consumed
                        framesProduced += produced
                        return (consumed, produced)
                    }
                }
            }
        }
        framesConsumed += consumed
        framesProduced += produced
        return (consumed, produced)
    }

    /// Moves input through the delay line: fills it, then each new frame pushes the oldest out.
    private func pass(
        _ source: UnsafePointer<Float>, frames available: Int,
        into target: UnsafeMutablePointer<Float>, room: Int
    ) -> (consumed: Int, produced: Int) {
        if durationFrames == 0 {
            let frames = min(available, room)
            target.update(from: source, count: frames * channels)
            return (frames, frames)
        }
        let filling = min(available, held.freeFrames)
        held.append(source, frames: filling)
        let pushing = min(available - filling, room, held.count)
        held.removeOldest(pushing, into: target)
        held.append(source + filling * channels, frames: pushing)
        return (filling + pushing, pushing)
    }

    /// Takes a marker whose position the input has reached and emits what it announces,
    /// restamped to this node's output.
    public func receive(_ marker: Marker, emitting batch: inout MarkerBatch) {
        switch (phase, marker.event) {
        case (.holdingTail(let end), .utteranceStart) where !marker.isDiscontinuous:
            // The newest `crossfadeFrames` of the tail blend; any older ones go out first.
            let length = min(held.count - releasing, crossfadeFrames)
            releasing = held.count - length
            let start = framesProduced + releasing
            batch.append(end.moved(to: start))
            batch.append(marker.moved(to: start))
            if length > 0 {
                phase = .blending(mixed: 0, length: length)
                crossfades += 1
            } else {
                phase = .passing
            }

        case (.passing, .utteranceEnd) where !marker.isDiscontinuous && durationFrames > 0:
            phase = .holdingTail(end: marker)

        case (.blending(let mixed, let length), .utteranceEnd) where !marker.isDiscontinuous:
            // The new utterance ended inside the crossfade: finish fading out the old tail
            // against silence, then hold the result as this utterance's tail.
            finishFadeOut(from: mixed, length: length)
            phase = .holdingTail(end: marker)

        default:
            resolve(into: &batch)
            if marker.breaksContinuity {
                releasing = held.count
            }
            batch.append(marker.moved(to: nextOutputPosition))
        }
    }

    /// Releases the held frames unchanged (no crossfade), for a scheduler whose sink is about
    /// to run dry. Boundary markers being held are emitted into `batch`.
    public func flush(emitting batch: inout MarkerBatch) {
        resolve(into: &batch)
        releasing = held.count
    }

    /// Forgets the stream: held frames, phase and counters.
    public func reset() {
        held.removeAll()
        releasing = 0
        phase = .passing
        framesConsumed = 0
        framesProduced = 0
        crossfades = 0
    }

    /// Where the next input frame will land in the output.
    private var nextOutputPosition: Int {
        switch phase {
        case .blending(let mixed, _): framesProduced + releasing + mixed
        case .passing, .holdingTail: framesProduced + held.count
        }
    }

    /// Leaves any crossfade state for plain passing: a held end marker is emitted where the
    /// held tail ends, and a crossfade in progress finishes fading the old tail out.
    private func resolve(into batch: inout MarkerBatch) {
        switch phase {
        case .passing:
            break
        case .holdingTail(let end):
            batch.append(end.moved(to: framesProduced + held.count))
        case .blending(let mixed, let length):
            finishFadeOut(from: mixed, length: length)
        }
        phase = .passing
    }

    private func finishFadeOut(from mixed: Int, length: Int) {
        for index in mixed..<length {
            let frame = held.frame(releasing + index)
            let gain = fadeOut.value(at: index, of: length)
            for channel in 0..<channels { frame[channel] *= gain }
        }
    }
}
