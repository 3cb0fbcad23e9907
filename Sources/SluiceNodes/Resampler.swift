import CSampleRate
import SluiceAudio

/// libsamplerate's five converters, by the names graph files use.
public enum ResamplerQuality: String, CaseIterable, Sendable {
    case sincBest = "sinc-best"
    case sincMedium = "sinc-medium"
    case sincFastest = "sinc-fastest"
    case zeroOrderHold = "zero-order-hold"
    case linear

    var converter: Int32 {
        switch self {
        case .sincBest: Int32(SRC_SINC_BEST_QUALITY)
        case .sincMedium: Int32(SRC_SINC_MEDIUM_QUALITY)
        case .sincFastest: Int32(SRC_SINC_FASTEST)
        case .zeroOrderHold: Int32(SRC_ZERO_ORDER_HOLD)
        case .linear: Int32(SRC_LINEAR)
        }
    }
}

/// Why a resampler could not be made.
public enum ResamplerError: Error, Equatable, Sendable, CustomStringConvertible {
    case unsupportedRate(Int)
    case unsupportedChannels(Int)
    case libsamplerate(code: Int32, message: String)

    public var description: String {
        switch self {
        case .unsupportedRate(let rate):
            "sample rate \(rate) Hz is outside 1...\(Resampler.maximumRate) Hz"
        case .unsupportedChannels(let channels):
            "\(channels) channels: the resampler takes 1...\(Resampler.maximumChannels)"
        case .libsamplerate(let code, let message):
            "libsamplerate error \(code): \(message)"
        }
    }
}

/// Converts Float32 frames from one sample rate to another with libsamplerate, streaming.
///
/// - Output is time-aligned with input: input frame `p` corresponds to output frame
///   `round(p × outputRate / inputRate)`; markers are restamped by that rule.
/// - At the end of the stream the converter is flushed, and the total output is exactly
///   `round(inputFrames × ratio)` frames — no lost tail, no padding beyond it.
/// - The output is bit-identical whatever the block split: libsamplerate is always called
///   with exactly `blockFrames` input frames (the last call of a stream excepted) and the same
///   output capacity, so the caller's block sizes never reach it. While a stream is live, up
///   to `blockFrames - 1` input frames may wait for a block to fill.
/// - Equal rates pass audio through untouched.
///
/// Threading: one thread at a time (the graph worker). `process` and `receive` never
/// allocate: libsamplerate's state and the staging buffers are allocated in `init`.
public final class Resampler {
    public static let maximumRate = 192_000
    public static let maximumChannels = 64
    public static let defaultBlockFrames = 128

    public let channels: Int
    public let inputRate: Int
    public let outputRate: Int
    public let quality: ResamplerQuality
    /// Output frames per input frame.
    public let ratio: Double
    /// Input frames handed to libsamplerate per call.
    public let blockFrames: Int
    /// How many output frames the converter itself holds back: the filter delay between a
    /// frame entering and the frame it becomes leaving. Measured from libsamplerate when the
    /// node is made. Block staging may add up to `blockFrames - 1` input frames while live.
    public let latencyFrames: Int

    /// Input frames taken from callers since the stream began.
    public private(set) var inputFramesConsumed = 0
    /// Output frames handed to callers since the stream began.
    public private(set) var outputFramesProduced = 0
    /// True once the end of the stream has been received and every output frame emitted.
    public var isFinished: Bool {
        endOfInput && (state == nil || flushed) && outputFramesProduced >= finalOutputFrames
    }

    private let state: OpaquePointer?
    private var endOfInput = false
    /// libsamplerate has returned everything after the end of input.
    private var flushed = false
    /// Input frames libsamplerate has taken.
    private var converterFramesConsumed = 0

    private let stagedInput: UnsafeMutablePointer<Float>
    private var stagedInputFrames = 0
    /// Output capacity offered to libsamplerate on every call.
    private let callCapacity: Int
    private let stagedOutput: UnsafeMutablePointer<Float>
    private var stagedOutputStart = 0
    private var stagedOutputFrames = 0

    public init(
        channels: Int, inputRate: Int, outputRate: Int, quality: ResamplerQuality = .sincMedium,
        blockFrames: Int = Resampler.defaultBlockFrames
    ) throws(ResamplerError) {
        for rate in [inputRate, outputRate] where !(1...Self.maximumRate).contains(rate) {
            throw .unsupportedRate(rate)
        }
        guard (1...Self.maximumChannels).contains(channels) else {
            throw .unsupportedChannels(channels)
        }
        precondition(blockFrames > 0, "the resampler's block must hold at least one frame")
        self.channels = channels
        self.inputRate = inputRate
        self.outputRate = outputRate
        self.quality = quality
        self.blockFrames = blockFrames
        ratio = Double(outputRate) / Double(inputRate)
        callCapacity = Int((Double(blockFrames) * ratio).rounded(.up)) + 16
        stagedInput = .allocate(capacity: blockFrames * channels)
        // Room for one call's output on top of what a full call left waiting.
        stagedOutput = .allocate(capacity: 2 * callCapacity * channels)
        if inputRate == outputRate {
            state = nil
            latencyFrames = 0
        } else {
            do {
                state = try Self.makeState(quality: quality, channels: channels)
                latencyFrames = try Self.measureLatency(quality: quality, channels: channels, ratio: ratio)
            } catch {
                stagedInput.deallocate()
                stagedOutput.deallocate()
                throw error
            }
        }
    }

    deinit {
        if let state { src_delete(state) }
        stagedInput.deallocate()
        stagedOutput.deallocate()
    }

    /// The output frame that input frame `position` becomes.
    @inlinable
    public func outputPosition(forInputPosition position: Int) -> Int {
        // Integer arithmetic: round-half-up of position × outputRate / inputRate.
        (position * outputRate * 2 + inputRate) / (inputRate * 2)
    }

    /// Resamples as much of `input` as fits in `output`.
    ///
    /// - Returns: frames taken from `input` and frames written to `output`. Frames not taken
    ///   must be offered again. After the end of the stream, call with empty input until
    ///   `isFinished` to collect the tail.
    public func process(
        _ input: UnsafeBufferPointer<Float>, into output: UnsafeMutableBufferPointer<Float>
    ) -> (framesConsumed: Int, framesProduced: Int) {
        let inputFrames = input.count / channels
        let room = output.count / channels
        guard let target = output.baseAddress else { return (0, 0) }
        guard let state else { return passThrough(input, into: target, room: room) }

        var consumed = 0
        var produced = 0
        while true {
            produced += emitStaged(into: target + produced * channels, room: room - produced)
            var progressed = false
            if stagedInputFrames < blockFrames && consumed < inputFrames, let source = input.baseAddress {
                let taken = min(blockFrames - stagedInputFrames, inputFrames - consumed)
                (stagedInput + stagedInputFrames * channels).update(
                    from: source + consumed * channels, count: taken * channels)
                stagedInputFrames += taken
                consumed += taken
                inputFramesConsumed += taken
                progressed = true
            }
            let blockReady = stagedInputFrames == blockFrames || (endOfInput && !flushed)
            if blockReady && stagedOutputFrames <= callCapacity {
                convert(state)
                progressed = true
            }
            if !progressed || produced == room { break }
        }
        return (consumed, produced)
    }

    /// Takes a marker whose position the input has reached and emits it restamped. The end of
    /// the stream starts the flush.
    public func receive(_ marker: Marker, emitting batch: inout MarkerBatch) {
        if case .endOfStream = marker.event { endOfInput = true }
        batch.append(marker.moved(to: outputPosition(forInputPosition: marker.position)))
    }

    /// Forgets the stream and its filter history.
    public func reset() {
        if let state { src_reset(state) }
        endOfInput = false
        flushed = false
        inputFramesConsumed = 0
        outputFramesProduced = 0
        converterFramesConsumed = 0
        stagedInputFrames = 0
        stagedOutputStart = 0
        stagedOutputFrames = 0
    }

    private var finalOutputFrames: Int { outputPosition(forInputPosition: inputFramesConsumed) }

    /// One libsamplerate call: the staged block in, up to `callCapacity` frames out.
    private func convert(_ state: OpaquePointer) {
        if stagedOutputStart > 0 {
            stagedOutput.update(
                from: stagedOutput + stagedOutputStart * channels, count: stagedOutputFrames * channels)
            stagedOutputStart = 0
        }
        var data = SRC_DATA()
        data.data_in = UnsafePointer(stagedInput)
        data.input_frames = stagedInputFrames
        data.data_out = stagedOutput + stagedOutputFrames * channels
        data.output_frames = callCapacity
        data.src_ratio = ratio
        data.end_of_input = endOfInput ? 1 : 0
        let status = src_process(state, &data)
        // src_process fails only on invalid arguments, which `init` rules out.
        precondition(status == 0, "src_process failed with status \(status)")
        let used = data.input_frames_used
        if used < stagedInputFrames {
            stagedInput.update(from: stagedInput + used * channels, count: (stagedInputFrames - used) * channels)
        }
        stagedInputFrames -= used
        converterFramesConsumed += used
        stagedOutputFrames += data.output_frames_gen
        if endOfInput && used == 0 && data.output_frames_gen == 0 {
            flushed = true
            // libsamplerate may stop a fraction of a frame short: pad to the exact total.
            let missing = finalOutputFrames - outputFramesProduced - stagedOutputFrames
            if missing > 0 {
                (stagedOutput + stagedOutputFrames * channels).update(repeating: 0, count: missing * channels)
                stagedOutputFrames += missing
            }
        }
    }

    /// Hands staged output to the caller, never past the frame the input so far maps to.
    private func emitStaged(into target: UnsafeMutablePointer<Float>, room: Int) -> Int {
        let limit = endOfInput ? finalOutputFrames : outputPosition(forInputPosition: converterFramesConsumed)
        let frames = min(stagedOutputFrames, room, max(0, limit - outputFramesProduced))
        guard frames > 0 else { return 0 }
        target.update(from: stagedOutput + stagedOutputStart * channels, count: frames * channels)
        stagedOutputStart += frames
        stagedOutputFrames -= frames
        outputFramesProduced += frames
        if flushed && outputFramesProduced == finalOutputFrames {
            // Anything libsamplerate made past the exact total is dropped.
            stagedOutputStart = 0
            stagedOutputFrames = 0
        }
        return frames
    }

    /// Equal rates: a plain copy.
    private func passThrough(
        _ input: UnsafeBufferPointer<Float>, into target: UnsafeMutablePointer<Float>, room: Int
    ) -> (framesConsumed: Int, framesProduced: Int) {
        let frames = min(input.count / channels, room)
        if frames > 0, let source = input.baseAddress {
            target.update(from: source, count: frames * channels)
        }
        inputFramesConsumed += frames
        outputFramesProduced += frames
        return (frames, frames)
    }

    private static func makeState(quality: ResamplerQuality, channels: Int)
        throws(ResamplerError) -> OpaquePointer
    {
        var error: Int32 = 0
        guard let state = src_new(quality.converter, Int32(channels), &error) else {
            throw .libsamplerate(code: error, message: String(cString: src_strerror(error)))
        }
        return state
    }

    /// Feeds silence through a scratch converter and counts the output frames it keeps back.
    private static func measureLatency(quality: ResamplerQuality, channels: Int, ratio: Double)
        throws(ResamplerError) -> Int
    {
        let state = try makeState(quality: quality, channels: channels)
        defer { src_delete(state) }
        let inputFrames = 16_384
        let outputFrames = Int((Double(inputFrames) * ratio).rounded(.up)) + 16
        let input = [Float](repeating: 0, count: inputFrames * channels)
        var output = [Float](repeating: 0, count: outputFrames * channels)
        var generated = 0
        input.withUnsafeBufferPointer { source in
            output.withUnsafeMutableBufferPointer { target in
                var data = SRC_DATA()
                data.data_in = source.baseAddress
                data.input_frames = inputFrames
                data.data_out = target.baseAddress
                data.output_frames = outputFrames
                data.src_ratio = ratio
                _ = src_process(state, &data)
                generated = data.output_frames_gen
            }
        }
        return max(0, Int((Double(inputFrames) * ratio).rounded()) - generated)
    }
}
