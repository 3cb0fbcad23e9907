import CSampleRate
import CSoxr
import CSpeexDSP
import SluiceAudio

/// The resampler's converters, by the names graph files use, from three engines
/// (docs/resampling.md has each one's latency, CPU and rejection, measured):
/// - libsamplerate's five: real-time safe, slow (`sinc-fastest` costs ~4 ms per second of
///   audio at 2:1);
/// - libsoxr's four: the fastest and cleanest (`soxr-hq` ~0.15 ms per second, ~130 dB), but it
///   allocates inside libsoxr and holds back 15–33 ms, so it is for offline rendering;
/// - speexdsp's eleven levels (`speex-0` … `speex-10`, as PulseAudio names them): real-time
///   safe, 1–5 ms of delay, `speex-6` ~0.6 ms per second with a flat band to 87 % of Nyquist
///   at 2:1, but ~3.4 ms from espeak-ng's 22 050 Hz, where speexdsp interpolates its filter.
///
/// A graph that names no quality gets `ResamplerQuality.automatic(live:)`: `soxr-hq` for
/// renders, `speex-6` when a device drives the graph.
public enum ResamplerQuality: String, CaseIterable, Sendable {
    case sincBest = "sinc-best"
    case sincMedium = "sinc-medium"
    case sincFastest = "sinc-fastest"
    case zeroOrderHold = "zero-order-hold"
    case linear
    case soxrVeryHigh = "soxr-vhq"
    case soxrHigh = "soxr-hq"
    case soxrMedium = "soxr-mq"
    case soxrLow = "soxr-lq"
    case speex0 = "speex-0"
    case speex1 = "speex-1"
    case speex2 = "speex-2"
    case speex3 = "speex-3"
    case speex4 = "speex-4"
    case speex5 = "speex-5"
    case speex6 = "speex-6"
    case speex7 = "speex-7"
    case speex8 = "speex-8"
    case speex9 = "speex-9"
    case speex10 = "speex-10"

    /// The library that implements the converter.
    public enum Engine: String, Sendable {
        case libsamplerate
        case soxr
        case speexdsp
    }

    public var engine: Engine {
        switch self {
        case .sincBest, .sincMedium, .sincFastest, .zeroOrderHold, .linear: .libsamplerate
        case .soxrVeryHigh, .soxrHigh, .soxrMedium, .soxrLow: .soxr
        default: .speexdsp
        }
    }

    /// The converter a graph gets when it names none: in a render, libsoxr's `soxr-hq` (the
    /// fastest and cleanest, and latency does not matter); in a graph a device drives,
    /// `speex-6`, which is real-time safe, holds back about 2 ms instead of 27, and keeps a
    /// flat band to 87 % of Nyquist (docs/resampling.md).
    public static func automatic(live: Bool) -> ResamplerQuality { live ? .speex6 : .soxrHigh }

    /// True when the converter never allocates while processing, so it may run on the
    /// real-time path. libsoxr allocates inside `soxr_process` and `soxr_clear`.
    public var isRealtimeSafe: Bool { engine != .soxr }

    /// libsamplerate's converters.
    public static var libsamplerate: [ResamplerQuality] { allCases.filter { $0.engine == .libsamplerate } }

    /// libsoxr's qualities.
    public static var soxr: [ResamplerQuality] { allCases.filter { $0.engine == .soxr } }

    /// speexdsp's levels, 0 to 10.
    public static var speex: [ResamplerQuality] { allCases.filter { $0.engine == .speexdsp } }

    /// speexdsp's quality number (0–10); 0 for other engines.
    var speexLevel: Int32 { Int32(Self.speex.firstIndex(of: self) ?? 0) }

    var libsamplerateConverter: Int32 {
        switch self {
        case .sincBest: Int32(SRC_SINC_BEST_QUALITY)
        case .sincMedium: Int32(SRC_SINC_MEDIUM_QUALITY)
        case .zeroOrderHold: Int32(SRC_ZERO_ORDER_HOLD)
        case .linear: Int32(SRC_LINEAR)
        default: Int32(SRC_SINC_FASTEST)
        }
    }

    var soxrRecipe: UInt {
        switch self {
        case .soxrVeryHigh: UInt(SOXR_VHQ)
        case .soxrMedium: UInt(SOXR_MQ)
        case .soxrLow: UInt(SOXR_LQ)
        default: UInt(SOXR_HQ)
        }
    }
}

/// Why a resampler could not be made.
public enum ResamplerError: Error, Equatable, Sendable, CustomStringConvertible {
    case unsupportedRate(Int)
    case unsupportedChannels(Int)
    case libsamplerate(code: Int32, message: String)
    case soxr(message: String)
    case speexdsp(code: Int32, message: String)

    public var description: String {
        switch self {
        case .unsupportedRate(let rate):
            "sample rate \(rate) Hz is outside 1...\(Resampler.maximumRate) Hz"
        case .unsupportedChannels(let channels):
            "\(channels) channels: the resampler takes 1...\(Resampler.maximumChannels)"
        case .libsamplerate(let code, let message):
            "libsamplerate error \(code): \(message)"
        case .soxr(let message):
            "libsoxr error: \(message)"
        case .speexdsp(let code, let message):
            "speexdsp error \(code): \(message)"
        }
    }
}

/// Converts Float32 frames from one sample rate to another, streaming, with libsamplerate,
/// libsoxr or speexdsp.
///
/// - Output is time-aligned with input: input frame `p` corresponds to output frame
///   `round(p × outputRate / inputRate)`; markers are restamped by that rule.
/// - At the end of the stream the converter is flushed, and the total output is exactly
///   `round(inputFrames × ratio)` frames — no lost tail, no padding beyond it.
/// - The output is bit-identical whatever the block split: the converter is always called
///   with exactly `blockFrames` input frames (the last call of a stream excepted) and the same
///   output capacity, so the caller's block sizes never reach it. While a stream is live, up
///   to `blockFrames - 1` input frames may wait for a block to fill.
/// - Equal rates pass audio through untouched.
///
/// Threading: one thread at a time (the graph worker). `process` and `receive` never
/// allocate: the converter's state and the staging buffers are allocated in `init`.
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
    /// Input frames handed to the converter per call.
    public let blockFrames: Int
    /// How many output frames the converter itself holds back: the filter delay between a
    /// frame entering and the frame it becomes leaving. Measured from the converter when the
    /// node is made. Block staging may add up to `blockFrames - 1` input frames while live.
    public let latencyFrames: Int

    /// Input frames taken from callers since the stream began.
    public private(set) var inputFramesConsumed = 0
    /// Output frames handed to callers since the stream began.
    public private(set) var outputFramesProduced = 0
    /// True once the end of the stream has been received and every output frame emitted.
    public var isFinished: Bool {
        endOfInput && !segmentEnding && (state == nil || flushed) && outputFramesProduced >= finalOutputFrames
    }

    /// Where the current segment began. A discontinuity ends a segment: the converter is
    /// flushed to the segment's exact length (as at the end of the stream), so nothing of it
    /// waits in the filter for audio that may come much later (the next reply), and the next
    /// segment starts with a fresh converter.
    private var segmentInputStart = 0
    private var segmentOutputStart = 0
    /// A discontinuity was received: no input is taken until the segment is flushed.
    private var segmentEnding = false

    private let state: Converter?
    private var endOfInput = false
    /// The converter has returned everything after the end of input.
    private var flushed = false
    /// Input frames the converter has taken.
    private var converterFramesConsumed = 0

    private let stagedInput: UnsafeMutablePointer<Float>
    private var stagedInputFrames = 0
    /// Output capacity offered to the converter on every call.
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
                let converter = try Converter(quality: quality, channels: channels, inputRate: inputRate, outputRate: outputRate)
                latencyFrames = Self.measureLatency(of: converter, channels: channels, ratio: ratio)
                converter.reset()
                state = converter
            } catch {
                stagedInput.deallocate()
                stagedOutput.deallocate()
                throw error
            }
        }
    }

    deinit {
        stagedInput.deallocate()
        stagedOutput.deallocate()
    }

    /// The output frame that input frame `position` (of the current segment, or later)
    /// becomes.
    public func outputPosition(forInputPosition position: Int) -> Int {
        // Integer arithmetic: round-half-up of the segment's frames × outputRate / inputRate.
        segmentOutputStart + ((position - segmentInputStart) * outputRate * 2 + inputRate) / (inputRate * 2)
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
            if segmentEnding && flushed && outputFramesProduced >= finalOutputFrames {
                startNextSegment(state)
                progressed = true
            }
            if !endOfInput && stagedInputFrames < blockFrames && consumed < inputFrames, let source = input.baseAddress {
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
        switch marker.event {
        case .endOfStream:
            endOfInput = true
            segmentEnding = false
        case .discontinuity where state != nil && !endOfInput:
            endOfInput = true
            segmentEnding = true
        default:
            break
        }
        batch.append(marker.moved(to: outputPosition(forInputPosition: marker.position)))
    }

    /// After a discontinuity's flush: the next segment starts where this one ended, with the
    /// converter's history cleared.
    private func startNextSegment(_ state: Converter) {
        state.reset()
        segmentInputStart = inputFramesConsumed
        segmentOutputStart = outputFramesProduced
        endOfInput = false
        flushed = false
        segmentEnding = false
        // What the converter made past the segment's exact length is dropped, as at the end.
        stagedOutputStart = 0
        stagedOutputFrames = 0
    }

    /// Forgets the stream and its filter history.
    public func reset() {
        state?.reset()
        endOfInput = false
        flushed = false
        segmentEnding = false
        segmentInputStart = 0
        segmentOutputStart = 0
        inputFramesConsumed = 0
        outputFramesProduced = 0
        converterFramesConsumed = 0
        stagedInputFrames = 0
        stagedOutputStart = 0
        stagedOutputFrames = 0
    }

    private var finalOutputFrames: Int { outputPosition(forInputPosition: inputFramesConsumed) }

    /// One converter call: the staged block in, up to `callCapacity` frames out.
    private func convert(_ state: Converter) {
        if stagedOutputStart > 0 {
            stagedOutput.update(
                from: stagedOutput + stagedOutputStart * channels, count: stagedOutputFrames * channels)
            stagedOutputStart = 0
        }
        let (used, generated) = state.process(
            stagedInput, frames: stagedInputFrames, into: stagedOutput + stagedOutputFrames * channels,
            capacity: callCapacity, endOfInput: endOfInput)
        if used < stagedInputFrames {
            stagedInput.update(from: stagedInput + used * channels, count: (stagedInputFrames - used) * channels)
        }
        stagedInputFrames -= used
        converterFramesConsumed += used
        stagedOutputFrames += generated
        if endOfInput && used == 0 && generated == 0 {
            flushed = true
            // The converter may stop a fraction of a frame short: pad to the exact total.
            // Never more than the staging buffer holds: a converter that stopped far short
            // leaves the output short, which the frame-accounting tests catch.
            let room = 2 * callCapacity - stagedOutputStart - stagedOutputFrames
            let missing = min(finalOutputFrames - outputFramesProduced - stagedOutputFrames, room)
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
            // Anything the converter made past the exact total is dropped.
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

    /// Feeds silence through the new converter and counts the output frames it keeps back.
    /// The caller resets the converter afterwards.
    private static func measureLatency(of converter: Converter, channels: Int, ratio: Double) -> Int {
        let inputFrames = 16_384
        let outputFrames = Int((Double(inputFrames) * ratio).rounded(.up)) + 16
        let input = [Float](repeating: 0, count: inputFrames * channels)
        var output = [Float](repeating: 0, count: outputFrames * channels)
        let generated = input.withUnsafeBufferPointer { source in
            output.withUnsafeMutableBufferPointer { target in
                converter.process(
                    source.baseAddress!, frames: inputFrames, into: target.baseAddress!, capacity: outputFrames,
                    endOfInput: false
                ).generated
            }
        }
        return max(0, Int((Double(inputFrames) * ratio).rounded()) - generated)
    }
}

/// One converter instance of either engine, behind the one call the resampler makes.
private final class Converter {
    private enum Handle {
        case libsamplerate(OpaquePointer, ratio: Double)
        case soxr(OpaquePointer)
        case speexdsp(OpaquePointer, tailFrames: Int)
    }

    private let handle: Handle
    /// speexdsp has no flush: its tail is pushed out with `tailFrames` of silence; how many
    /// of those have gone in.
    private var tailPushed = 0
    /// The silence that pushes speexdsp's tail out (empty for the other engines).
    private let silence: [Float]

    init(quality: ResamplerQuality, channels: Int, inputRate: Int, outputRate: Int) throws(ResamplerError) {
        switch quality.engine {
        case .libsamplerate:
            var error: Int32 = 0
            guard let state = src_new(quality.libsamplerateConverter, Int32(channels), &error) else {
                throw .libsamplerate(code: error, message: String(cString: src_strerror(error)))
            }
            handle = .libsamplerate(state, ratio: Double(outputRate) / Double(inputRate))
            silence = []
        case .soxr:
            var error: soxr_error_t? = nil
            var spec = soxr_quality_spec(quality.soxrRecipe, 0)
            var io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I)
            // One worker thread: soxr must not start threads of its own inside a graph.
            var runtime = soxr_runtime_spec(1)
            guard let state = soxr_create(Double(inputRate), Double(outputRate), UInt32(channels), &error, &io, &spec, &runtime),
                error == nil
            else {
                throw .soxr(message: error.map { String(cString: $0) } ?? "soxr_create failed")
            }
            handle = .soxr(state)
            silence = []
        case .speexdsp:
            var error: Int32 = 0
            guard let state = speex_resampler_init(
                UInt32(channels), UInt32(inputRate), UInt32(outputRate), quality.speexLevel, &error)
            else {
                throw .speexdsp(code: error, message: String(cString: speex_resampler_strerror(error)))
            }
            // Without this the output starts with the filter's delay as silence; with it the
            // output is time-aligned with the input, as libsamplerate's and libsoxr's are.
            speex_resampler_skip_zeros(state)
            let tail = Int(speex_resampler_get_input_latency(state)) + 1
            silence = [Float](repeating: 0, count: tail * channels)
            handle = .speexdsp(state, tailFrames: tail)
        }
    }

    deinit {
        switch handle {
        case .libsamplerate(let state, _): src_delete(state)
        case .soxr(let state): soxr_delete(state)
        case .speexdsp(let state, _): speex_resampler_destroy(state)
        }
    }

    /// Converts up to `frames` input frames into at most `capacity` output frames. With
    /// `endOfInput`, the converter is flushed once the input is used up.
    func process(
        _ input: UnsafePointer<Float>, frames: Int, into output: UnsafeMutablePointer<Float>, capacity: Int,
        endOfInput: Bool
    ) -> (used: Int, generated: Int) {
        switch handle {
        case .libsamplerate(let state, let ratio):
            var data = SRC_DATA()
            data.data_in = input
            data.input_frames = frames
            data.data_out = output
            data.output_frames = capacity
            data.src_ratio = ratio
            data.end_of_input = endOfInput ? 1 : 0
            let status = src_process(state, &data)
            // src_process fails only on invalid arguments, which `init` rules out.
            precondition(status == 0, "src_process failed with status \(status)")
            return (data.input_frames_used, data.output_frames_gen)
        case .soxr(let state):
            var used = 0
            var generated = 0
            // soxr is flushed by a call with no input at all.
            let flushing = endOfInput && frames == 0
            let error = soxr_process(
                state, flushing ? nil : UnsafeRawPointer(input), flushing ? 0 : frames, &used,
                UnsafeMutableRawPointer(output), capacity, &generated)
            precondition(error == nil, "soxr_process failed")
            return (used, generated)
        case .speexdsp(let state, let tailFrames):
            if endOfInput && frames == 0 {
                // The flush: `tailFrames` of silence through the filter bring out the frames it
                // holds back, over as many calls as the output room needs; the resampler drops
                // what lies past the stream's exact length.
                let pending = tailFrames - tailPushed
                guard pending > 0 else { return (0, 0) }
                var taken = UInt32(pending)
                var made = UInt32(capacity)
                silence.withUnsafeBufferPointer { zeros in
                    // SAFETY: `zeros` holds tailFrames × channels samples, `pending` of them
                    // from its start; `output` has room for `capacity` frames.
                    _ = speex_resampler_process_interleaved_float(state, zeros.baseAddress, &taken, output, &made)
                }
                tailPushed += Int(taken)
                if taken == 0 && made == 0 { tailPushed = tailFrames }  // no progress: done
                return (0, Int(made))
            }
            var taken = UInt32(frames)
            var made = UInt32(capacity)
            // SAFETY: `input` holds `frames` frames and `output` room for `capacity` frames.
            let status = speex_resampler_process_interleaved_float(state, input, &taken, output, &made)
            // It fails only on invalid arguments, which `init` rules out.
            precondition(status == 0, "speex_resampler_process_interleaved_float failed with status \(status)")
            return (Int(taken), Int(made))
        }
    }

    func reset() {
        switch handle {
        case .libsamplerate(let state, _): src_reset(state)
        case .soxr(let state): soxr_clear(state)
        case .speexdsp(let state, _):
            speex_resampler_reset_mem(state)
            speex_resampler_skip_zeros(state)
            tailPushed = 0
        }
    }
}
