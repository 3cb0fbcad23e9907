import Foundation
import SluiceAudio
import SluiceNodes

/// Frames per second through the aligner, crossfader and fader, each against `memcpy` of the
/// same data in the same block size: the most any node that reads and writes its data once
/// could do. The ratio is below 1 by nature; it shows how much work a node adds to the copy.
///
/// Every pass streams 10 s of 48 kHz stereo noise in 256-frame blocks, with a marker every 2 s
/// (an utterance boundary for the crossfader, a discontinuity for the fader) and the end of
/// the stream, so the blending and fading paths run, not only the pass-through.
enum NodesSuite {
    static let sampleRate = 48_000
    static let channels = 2
    static let blockFrames = 256
    static let streamFrames = 10 * sampleRate
    static let markerInterval = 2 * sampleRate
    static let crossfadeFrames = 4_800
    /// Stream positions of the markers: every 2 s, not at the end.
    static let markerPositions = Array(stride(from: markerInterval, to: streamFrames, by: markerInterval))

    static func run(runs: Int) {
        precondition(streamFrames % blockFrames == 0 && markerInterval % blockFrames == 0)
        let floatInput = makeFloatNoise(samples: streamFrames * channels)
        let floatOutput = UnsafeMutablePointer<Float>.allocate(capacity: streamFrames * channels)
        floatOutput.initialize(repeating: 0, count: streamFrames * channels)
        defer {
            floatInput.deallocate()
            floatOutput.deallocate()
        }
        aligner(runs: runs)
        crossfader(runs: runs, input: floatInput, output: floatOutput)
        fader(runs: runs, input: floatInput, output: floatOutput)
    }

    // MARK: Aligner

    private static func aligner(runs: Int) {
        let format = PCMFormat(.s16le, channels: channels, sampleRate: sampleRate)
        let blockBytes = blockFrames * format.bytesPerFrame
        let inputBytes = streamFrames * format.bytesPerFrame
        let input = UnsafeMutableRawPointer.allocate(byteCount: inputBytes, alignment: 64)
        let copyOutput = UnsafeMutableRawPointer.allocate(byteCount: inputBytes, alignment: 64)
        let output = UnsafeMutablePointer<Float>.allocate(capacity: streamFrames * channels)
        output.initialize(repeating: 0, count: streamFrames * channels)
        copyOutput.initializeMemory(as: UInt8.self, repeating: 0, count: inputBytes)
        defer {
            input.deallocate()
            copyOutput.deallocate()
            output.deallocate()
        }
        var noise = NoiseGenerator()
        for sample in 0..<(streamFrames * channels) {
            // SAFETY: sample * 2 + 2 <= inputBytes, the allocation's size.
            input.storeBytes(
                of: Int16(noise.next() * 16_000).littleEndian, toByteOffset: sample * 2, as: Int16.self)
        }
        let node = Aligner(inputFormat: format)

        let medians = comparePasses(
            label: "nodes.aligner", runs: runs, unitsPerPass: streamFrames,
            sluicePass: {
                // SAFETY: offset < inputBytes and produced < streamFrames inside the loop, so
                // every buffer lies inside `input` or `output`.
                var offset = 0
                var produced = 0
                while offset < inputBytes {
                    let end = offset + blockBytes
                    while offset < end {
                        let step = node.process(
                            UnsafeRawBufferPointer(start: input + offset, count: end - offset),
                            into: UnsafeMutableBufferPointer(
                                start: output + produced * channels,
                                count: (streamFrames - produced) * channels))
                        if step == (0, 0) { fail("the Aligner stalled at byte \(offset)") }
                        offset += step.bytesConsumed
                        produced += step.framesProduced
                    }
                }
                if produced != streamFrames { fail("the Aligner made \(produced) of \(streamFrames) frames") }
                node.reset()
            },
            referencePass: { copyInBlocks(from: input, to: copyOutput, byteCount: inputBytes, blockBytes: blockBytes) })
        // Spot-check the conversion, so a broken node cannot report a speed.
        // SAFETY: the passes filled `output` and `input` holds at least one sample.
        let firstCode = Int16(littleEndian: input.loadUnaligned(as: Int16.self))
        if output[0] != Float(firstCode) / 32_768 { fail("the Aligner's output does not match its input") }
        emitAgainstMemcpy("nodes.aligner", medians, reference: "memcpy of the same S16LE stereo bytes, \(blockBytes)-byte blocks", runs: runs)
    }

    // MARK: Crossfader

    private static func crossfader(
        runs: Int, input: UnsafeMutablePointer<Float>, output: UnsafeMutablePointer<Float>
    ) {
        let node = Crossfader(channels: channels, durationFrames: crossfadeFrames)
        // Each crossfade overlaps the held tail with the next utterance's start.
        let expectedFrames = streamFrames - markerPositions.count * crossfadeFrames

        let medians = comparePasses(
            label: "nodes.crossfader", runs: runs, unitsPerPass: streamFrames,
            sluicePass: {
                var batch = MarkerBatch()
                var utterance: UInt32 = 0
                node.receive(Marker(position: 0, event: .utteranceStart(UtteranceID(utterance))), emitting: &batch)
                let produced = streamBlocks(
                    from: input, to: output,
                    atMarker: { position in
                        batch.removeAll()
                        node.receive(
                            Marker(position: position, event: .utteranceEnd(UtteranceID(utterance))),
                            emitting: &batch)
                        utterance += 1
                        node.receive(
                            Marker(position: position, event: .utteranceStart(UtteranceID(utterance))),
                            emitting: &batch)
                    },
                    process: { source, target in
                        batch.removeAll()
                        return node.process(source, into: target, emitting: &batch)
                    },
                    endStream: {
                        batch.removeAll()
                        node.receive(
                            Marker(position: streamFrames, event: .utteranceEnd(UtteranceID(utterance))),
                            emitting: &batch)
                        node.receive(Marker(position: streamFrames, event: .endOfStream), emitting: &batch)
                    })
                if produced != expectedFrames || node.crossfades != markerPositions.count {
                    fail("the Crossfader made \(produced) frames (expected \(expectedFrames)) and \(node.crossfades) crossfades")
                }
                node.reset()
            },
            referencePass: { copyFrames(from: input, to: output) })
        emitAgainstMemcpy("nodes.crossfader", medians, reference: "memcpy of the same Float32 stereo frames, \(blockFrames)-frame blocks", runs: runs)
    }

    // MARK: Fader

    private static func fader(
        runs: Int, input: UnsafeMutablePointer<Float>, output: UnsafeMutablePointer<Float>
    ) {
        let node = Fader(channels: channels)

        let medians = comparePasses(
            label: "nodes.fader", runs: runs, unitsPerPass: streamFrames,
            sluicePass: {
                var batch = MarkerBatch()
                let produced = streamBlocks(
                    from: input, to: output,
                    atMarker: { position in
                        batch.removeAll()
                        node.receive(Marker(position: position, event: .discontinuity), emitting: &batch)
                    },
                    process: { source, target in node.process(source, into: target) },
                    endStream: {
                        batch.removeAll()
                        node.receive(Marker(position: streamFrames, event: .endOfStream), emitting: &batch)
                    })
                if produced != streamFrames { fail("the Fader made \(produced) of \(streamFrames) frames") }
                node.reset()
            },
            referencePass: { copyFrames(from: input, to: output) })
        emitAgainstMemcpy("nodes.fader", medians, reference: "memcpy of the same Float32 stereo frames, \(blockFrames)-frame blocks", runs: runs)
    }

    // MARK: Streaming helpers

    /// Streams `streamFrames` frames through a node in `blockFrames`-frame blocks, calling
    /// `atMarker` at each of `markerPositions`, then `endStream`, then drains what the node
    /// still holds. Returns the output frames.
    @inline(__always)
    private static func streamBlocks(
        from input: UnsafeMutablePointer<Float>, to output: UnsafeMutablePointer<Float>,
        atMarker: (_ position: Int) -> Void,
        process: (UnsafeBufferPointer<Float>, UnsafeMutableBufferPointer<Float>) -> (framesConsumed: Int, framesProduced: Int),
        endStream: () -> Void
    ) -> Int {
        // SAFETY: consumed <= streamFrames and produced <= consumed (these nodes never make
        // more frames than they take), so every buffer lies inside `input` or `output`.
        var consumed = 0
        var produced = 0
        var nextMarker = 0
        while consumed < streamFrames {
            if nextMarker < markerPositions.count && markerPositions[nextMarker] == consumed {
                atMarker(consumed)
                nextMarker += 1
            }
            let end = consumed + blockFrames
            while consumed < end {
                let step = process(
                    UnsafeBufferPointer(start: input + consumed * channels, count: (end - consumed) * channels),
                    UnsafeMutableBufferPointer(
                        start: output + produced * channels, count: (streamFrames - produced) * channels))
                if step == (0, 0) { fail("a node stalled at frame \(consumed)") }
                consumed += step.framesConsumed
                produced += step.framesProduced
            }
        }
        endStream()
        while true {
            let step = process(
                UnsafeBufferPointer(start: input, count: 0),
                UnsafeMutableBufferPointer(
                    start: output + produced * channels, count: (streamFrames - produced) * channels))
            if step.framesProduced == 0 { break }
            produced += step.framesProduced
        }
        return produced
    }

    /// The reference for the frame nodes: the same frames, the same blocks, a plain copy.
    private static func copyFrames(from input: UnsafeMutablePointer<Float>, to output: UnsafeMutablePointer<Float>) {
        let bytesPerFrame = channels * MemoryLayout<Float>.size
        copyInBlocks(
            from: UnsafeRawPointer(input), to: UnsafeMutableRawPointer(output),
            byteCount: streamFrames * bytesPerFrame, blockBytes: blockFrames * bytesPerFrame)
    }

    private static func copyInBlocks(
        from source: UnsafeRawPointer, to target: UnsafeMutableRawPointer, byteCount: Int, blockBytes: Int
    ) {
        var offset = 0
        while offset < byteCount {
            let count = min(blockBytes, byteCount - offset)
            // SAFETY: offset + count <= byteCount, which both buffers hold; they do not overlap.
            memcpy(target + offset, source + offset, count)
            offset += count
        }
    }

    private static func makeFloatNoise(samples: Int) -> UnsafeMutablePointer<Float> {
        let buffer = UnsafeMutablePointer<Float>.allocate(capacity: samples)
        var noise = NoiseGenerator()
        for index in 0..<samples {
            // SAFETY: index < samples, the allocation's size; each slot is initialised once.
            (buffer + index).initialize(to: 0.5 * noise.next())
        }
        return buffer
    }

    /// Prints one node's figure against `memcpy` (no goal: the copy is the physical limit).
    private static func emitAgainstMemcpy(
        _ bench: String, _ medians: (sluice: Double, reference: Double), reference: String, runs: Int
    ) {
        Figure(
            bench: bench, metric: "throughput", sluice: medians.sluice,
            reference: medians.reference, unit: "frames/s", referenceName: reference,
            runs: runs, goal: nil
        ).emit()
    }
}
