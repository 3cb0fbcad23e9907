import CSampleRate
import CSoxr
import CSpeexDSP
import Foundation
import SluiceAudio
import SluiceNodes

/// Sluice's `Resampler` node against the raw library it wraps, 24 kHz → 48 kHz mono: each of
/// libsamplerate's five converters, and the two `auto` picks, libsoxr's `soxr-hq` (renders)
/// and speexdsp's `speex-6` (live graphs).
///
/// Both sides convert the same 30 s signal in the same 256-frame input blocks with the same
/// converter, and end the stream with the library's flush. The node is built with
/// `blockFrames: 256`, so it calls the library exactly as often as the reference does; what
/// remains is the node's own cost: staging, frame accounting and marker handling.
enum ResamplerSuite {
    static let inputRate = 24_000
    static let outputRate = 48_000
    static let blockFrames = 256
    static let signalSeconds = 30
    static var inputFrames: Int { signalSeconds * inputRate }
    /// Room for every output frame of a pass, with slack for libsamplerate's rounding.
    static var outputCapacity: Int { inputFrames * outputRate / inputRate + 4 * blockFrames }

    static func run(runs: Int) {
        let input = makeSignal(frames: inputFrames)
        let sluiceOutput = UnsafeMutablePointer<Float>.allocate(capacity: outputCapacity)
        let referenceOutput = UnsafeMutablePointer<Float>.allocate(capacity: outputCapacity)
        sluiceOutput.initialize(repeating: 0, count: outputCapacity)
        referenceOutput.initialize(repeating: 0, count: outputCapacity)
        defer {
            input.deallocate()
            sluiceOutput.deallocate()
            referenceOutput.deallocate()
        }

        for quality in ResamplerQuality.libsamplerate + [.soxrHigh, .speex6] {
            let bench = "resampler.\(quality.rawValue)"
            let node: Resampler
            do {
                node = try Resampler(
                    channels: 1, inputRate: inputRate, outputRate: outputRate, quality: quality,
                    blockFrames: blockFrames)
            } catch {
                fail("\(bench): cannot make the Resampler node: \(error)")
            }
            let reference = Reference(quality)

            // Check once, untimed, that both sides do the same work: the frame counts agree (the
            // node pads or trims the flush to exactly 2 × input; speexdsp's flush, silence
            // pushed through, runs a filter length past it) and so do the samples.
            let sluiceFrames = sluicePass(node, input: input, output: sluiceOutput)
            let referenceFrames = reference.pass(input, referenceOutput)
            guard (-1...(reference.extraTail + 1)).contains(referenceFrames - sluiceFrames) else {
                fail("\(bench): the node made \(sluiceFrames) frames, \(reference.name) \(referenceFrames)")
            }
            var largestDifference: Float = 0
            // SAFETY: both passes wrote at least this many frames into their buffers.
            for index in 0..<min(sluiceFrames, referenceFrames) {
                largestDifference = max(largestDifference, abs(sluiceOutput[index] - referenceOutput[index]))
            }
            note("\(bench): \(inputFrames) frames in; out: sluice \(sluiceFrames), reference \(referenceFrames), largest sample difference \(largestDifference)")

            let medians = comparePasses(
                label: bench, runs: runs, unitsPerPass: inputFrames,
                sluicePass: {
                    let frames = sluicePass(node, input: input, output: sluiceOutput)
                    if frames != sluiceFrames { fail("\(bench): the node made \(frames) frames, not \(sluiceFrames) as before") }
                },
                referencePass: {
                    let frames = reference.pass(input, referenceOutput)
                    if frames != referenceFrames { fail("\(bench): \(reference.name) made \(frames) frames, not \(referenceFrames) as before") }
                })
            Figure(
                bench: bench, metric: "throughput", sluice: medians.sluice,
                reference: medians.reference, unit: "frames/s", referenceName: reference.name,
                runs: runs, goal: ">= 0.95",
                extras: [("sluice_realtime_factor", medians.sluice / Double(inputRate))]
            ).emit()
        }
    }

    /// The raw library call for one quality: its name in the figures, one whole pass (which
    /// leaves the converter ready for the next), and how many frames its flush may run past
    /// the node's exact total.
    struct Reference {
        var name: String
        var extraTail = 0
        var pass: (UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>) -> Int

        init(_ quality: ResamplerQuality) {
            switch quality.engine {
            case .libsamplerate:
                let converter = converterID(quality)
                let state = makeConverter(converter)
                name = "libsamplerate src_process (\(String(cString: src_get_name(converter))))"
                pass = { referencePass(state, input: $0, output: $1) }
            case .soxr:
                var error: soxr_error_t? = nil
                var spec = soxr_quality_spec(UInt(SOXR_HQ), 0)
                var io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I)
                var runtime = soxr_runtime_spec(1)
                guard quality == .soxrHigh,
                    let state = soxr_create(Double(inputRate), Double(outputRate), 1, &error, &io, &spec, &runtime), error == nil
                else { fail("soxr_create failed for \(quality.rawValue)") }
                name = "libsoxr soxr_process (SOXR_HQ)"
                pass = { soxrPass(state, input: $0, output: $1) }
            case .speexdsp:
                var error: Int32 = 0
                guard quality == .speex6, let state = speex_resampler_init(1, UInt32(inputRate), UInt32(outputRate), 6, &error) else {
                    fail("speex_resampler_init failed for \(quality.rawValue)")
                }
                speex_resampler_skip_zeros(state)
                name = "speexdsp speex_resampler_process_float (quality 6)"
                extraTail = 2 * Int(speex_resampler_get_output_latency(state)) + 4
                pass = { speexPass(state, input: $0, output: $1) }
            }
        }
    }

    /// libsamplerate's converter constant for one of its qualities (the node keeps its own
    /// mapping internal).
    static func converterID(_ quality: ResamplerQuality) -> Int32 {
        switch quality {
        case .sincBest: Int32(SRC_SINC_BEST_QUALITY)
        case .sincMedium: Int32(SRC_SINC_MEDIUM_QUALITY)
        case .sincFastest: Int32(SRC_SINC_FASTEST)
        case .zeroOrderHold: Int32(SRC_ZERO_ORDER_HOLD)
        case .linear: Int32(SRC_LINEAR)
        default: fail("\(quality.rawValue) is not a libsamplerate converter")
        }
    }

    static func makeConverter(_ converter: Int32) -> OpaquePointer {
        var error: Int32 = 0
        guard let state = src_new(converter, 1, &error) else {
            fail("src_new failed: \(String(cString: src_strerror(error)))")
        }
        return state
    }

    /// A tone with some noise, so the sinc filters see a broadband signal.
    private static func makeSignal(frames: Int) -> UnsafeMutablePointer<Float> {
        let signal = UnsafeMutablePointer<Float>.allocate(capacity: frames)
        var noise = NoiseGenerator()
        for index in 0..<frames {
            let tone = Float(sin(2 * Double.pi * 440 * Double(index) / Double(inputRate)))
            // SAFETY: index < frames, the allocation's size; each slot is initialised once.
            (signal + index).initialize(to: 0.4 * tone + 0.1 * noise.next())
        }
        return signal
    }

    // MARK: One pass each

    /// Streams the whole input through the node in 256-frame blocks, ends the stream, drains
    /// the tail, then resets the node for the next pass. Returns the output frames.
    private static func sluicePass(
        _ node: Resampler, input: UnsafeMutablePointer<Float>, output: UnsafeMutablePointer<Float>
    ) -> Int {
        // SAFETY: offset <= inputFrames and produced <= outputCapacity throughout, so every
        // buffer below lies inside `input` or `output`.
        var produced = 0
        var offset = 0
        while offset < inputFrames {
            let end = min(offset + blockFrames, inputFrames)
            while offset < end {
                let step = node.process(
                    UnsafeBufferPointer(start: input + offset, count: end - offset),
                    into: UnsafeMutableBufferPointer(start: output + produced, count: outputCapacity - produced))
                if step == (0, 0) { fail("the Resampler node stalled at input frame \(offset)") }
                offset += step.framesConsumed
                produced += step.framesProduced
            }
        }
        var batch = MarkerBatch()
        node.receive(Marker(position: inputFrames, event: .endOfStream), emitting: &batch)
        while !node.isFinished {
            let step = node.process(
                UnsafeBufferPointer(start: input, count: 0),
                into: UnsafeMutableBufferPointer(start: output + produced, count: outputCapacity - produced))
            if step.framesProduced == 0 && !node.isFinished { fail("the Resampler node stalled while flushing") }
            produced += step.framesProduced
        }
        node.reset()
        return produced
    }

    /// The same stream straight through `src_process`: 256-frame blocks with
    /// `end_of_input = 0`, then empty calls with `end_of_input = 1` until nothing more comes.
    static func referencePass(
        _ state: OpaquePointer, input: UnsafeMutablePointer<Float>, output: UnsafeMutablePointer<Float>
    ) -> Int {
        // SAFETY: offset <= inputFrames and produced <= outputCapacity throughout, and each
        // call is told exactly how much room is left, so libsamplerate stays inside the buffers.
        var data = SRC_DATA()
        data.src_ratio = Double(outputRate) / Double(inputRate)
        var produced = 0
        var offset = 0
        while offset < inputFrames {
            let end = min(offset + blockFrames, inputFrames)
            while offset < end {
                data.data_in = UnsafePointer(input + offset)
                data.input_frames = end - offset
                data.data_out = output + produced
                data.output_frames = outputCapacity - produced
                data.end_of_input = 0
                let status = src_process(state, &data)
                if status != 0 { fail("src_process: \(String(cString: src_strerror(status)))") }
                if data.input_frames_used == 0 && data.output_frames_gen == 0 {
                    fail("src_process stalled at input frame \(offset)")
                }
                offset += data.input_frames_used
                produced += data.output_frames_gen
            }
        }
        repeat {
            // A valid (empty) input pointer: some libsamplerate versions reject NULL.
            data.data_in = UnsafePointer(input)
            data.input_frames = 0
            data.data_out = output + produced
            data.output_frames = outputCapacity - produced
            data.end_of_input = 1
            let status = src_process(state, &data)
            if status != 0 { fail("src_process (flush): \(String(cString: src_strerror(status)))") }
            produced += data.output_frames_gen
        } while data.output_frames_gen > 0
        src_reset(state)
        return produced
    }

    /// The stream through `soxr_process`: 256-frame blocks, then calls with no input (the
    /// flush) until nothing more comes; `soxr_clear` for the next pass.
    static func soxrPass(_ state: OpaquePointer, input: UnsafeMutablePointer<Float>, output: UnsafeMutablePointer<Float>) -> Int {
        // SAFETY: as referencePass: every call is told exactly how much room is left.
        var produced = 0
        var offset = 0
        while offset < inputFrames {
            var used = 0
            var generated = 0
            let failure = soxr_process(
                state, input + offset, min(blockFrames, inputFrames - offset), &used, output + produced,
                outputCapacity - produced, &generated)
            if failure != nil { fail("soxr_process failed") }
            offset += used
            produced += generated
        }
        var generated = 0
        repeat {
            if soxr_process(state, nil, 0, nil, output + produced, outputCapacity - produced, &generated) != nil {
                fail("soxr_process (flush) failed")
            }
            produced += generated
        } while generated > 0
        soxr_clear(state)
        return produced
    }

    /// The stream through `speex_resampler_process_float`: 256-frame blocks, then its input
    /// latency in silence (speexdsp has no flush); `reset_mem` and `skip_zeros` for the next
    /// pass, as the node does.
    static func speexPass(_ state: OpaquePointer, input: UnsafeMutablePointer<Float>, output: UnsafeMutablePointer<Float>) -> Int {
        // SAFETY: as referencePass: every call is told exactly how much room is left.
        var produced = 0
        var offset = 0
        while offset < inputFrames {
            var taken = UInt32(min(blockFrames, inputFrames - offset))
            var made = UInt32(outputCapacity - produced)
            _ = speex_resampler_process_float(state, 0, input + offset, &taken, output + produced, &made)
            offset += Int(taken)
            produced += Int(made)
        }
        let tail = Int(speex_resampler_get_input_latency(state)) + 1
        let silence = [Float](repeating: 0, count: tail)
        var taken = UInt32(tail)
        var made = UInt32(outputCapacity - produced)
        silence.withUnsafeBufferPointer { _ = speex_resampler_process_float(state, 0, $0.baseAddress, &taken, output + produced, &made) }
        produced += Int(made)
        speex_resampler_reset_mem(state)
        speex_resampler_skip_zeros(state)
        return produced
    }
}

/// Deterministic white noise in -1 ..< 1 (a 64-bit LCG), so every run sees the same signal.
struct NoiseGenerator {
    private var state: UInt64 = 0x853C_49E6_748F_EA9B

    mutating func next() -> Float {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return Float(Int32(truncatingIfNeeded: state >> 32)) / 2_147_483_648
    }
}
