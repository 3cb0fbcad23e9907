import SluiceAudio

/// Turns a byte stream in a declared PCM format, cut into chunks of any size (one byte, odd
/// sizes, chunks that split a sample or a frame), into whole interleaved Float32 frames.
///
/// Bytes of an unfinished frame wait in a small carry until the rest arrives. At an utterance
/// boundary, a discontinuity or the end of the stream, an unfinished frame is dropped and
/// counted — never padded into noise — so the next utterance starts frame-aligned even when a
/// provider sent an odd number of bytes.
///
/// Threading: one thread at a time (the graph worker). `process` and `receive` never allocate.
public final class Aligner {
    public let inputFormat: PCMFormat
    /// Float32 frames at the input's rate and channel count.
    public var outputFormat: PCMFormat { inputFormat.float32 }

    /// Unfinished frames dropped so far.
    public private(set) var droppedPartialFrames = 0
    /// Bytes in those unfinished frames.
    public private(set) var droppedBytes = 0
    /// Whole frames produced since the stream began.
    public private(set) var framesProduced = 0

    private let bytesPerFrame: Int
    private let carry: UnsafeMutableRawPointer
    private var carried = 0

    public init(inputFormat: PCMFormat) {
        self.inputFormat = inputFormat
        bytesPerFrame = inputFormat.bytesPerFrame
        carry = .allocate(byteCount: bytesPerFrame, alignment: 16)
    }

    deinit {
        carry.deallocate()
    }

    /// Converts as many whole frames as `output` has room for.
    ///
    /// - Returns: bytes taken from `input` and frames written to `output`. Bytes not taken
    ///   (because `output` was full) must be offered again.
    public func process(
        _ input: UnsafeRawBufferPointer, into output: UnsafeMutableBufferPointer<Float>
    ) -> (bytesConsumed: Int, framesProduced: Int) {
        let channels = inputFormat.channels
        let room = output.count / channels
        guard room > 0, let source = input.baseAddress, let target = output.baseAddress else {
            return (0, 0)
        }
        var consumed = 0
        var produced = 0

        if carried > 0 {
            let taken = min(bytesPerFrame - carried, input.count)
            // SAFETY: carried + taken <= bytesPerFrame, the carry's size.
            (carry + carried).copyMemory(from: source, byteCount: taken)
            carried += taken
            consumed = taken
            guard carried == bytesPerFrame else { return (consumed, 0) }
            SampleConversion.decode(
                carry, format: inputFormat.sampleFormat, samples: channels, into: target)
            carried = 0
            produced = 1
        }

        let whole = min((input.count - consumed) / bytesPerFrame, room - produced)
        if whole > 0 {
            SampleConversion.decode(
                source + consumed, format: inputFormat.sampleFormat, samples: whole * channels,
                into: target + produced * channels)
            consumed += whole * bytesPerFrame
            produced += whole
        }

        let rest = input.count - consumed
        if rest > 0 && rest < bytesPerFrame && produced < room {
            carry.copyMemory(from: source + consumed, byteCount: rest)
            carried = rest
            consumed += rest
        }
        framesProduced += produced
        return (consumed, produced)
    }

    /// Takes a marker whose position the input has reached, and emits it at the output
    /// position it now has. Boundaries drop an unfinished frame.
    public func receive(_ marker: Marker, emitting batch: inout MarkerBatch) {
        switch marker.event {
        case .utteranceStart, .utteranceEnd, .discontinuity, .endOfStream:
            dropCarry()
        case .textSpan, .word:
            break
        }
        batch.append(marker.moved(to: framesProduced))
    }

    /// Forgets the stream: the carry, the counters and the position.
    public func reset() {
        carried = 0
        droppedPartialFrames = 0
        droppedBytes = 0
        framesProduced = 0
    }

    private func dropCarry() {
        guard carried > 0 else { return }
        droppedPartialFrames += 1
        droppedBytes += carried
        carried = 0
    }
}
