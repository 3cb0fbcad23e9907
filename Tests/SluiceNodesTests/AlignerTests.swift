import SluiceAudio
import SluiceNodes
import SluiceTestSupport
import Testing

@Suite("Aligner")
struct AlignerTests {
    static let formats: [PCMFormat] = [
        PCMFormat(.s16le, channels: 1, sampleRate: 24_000),
        PCMFormat(.s16le, channels: 2, sampleRate: 48_000),
        PCMFormat(.s24le, channels: 2, sampleRate: 48_000),
        PCMFormat(.s32le, channels: 3, sampleRate: 44_100),
        PCMFormat(.f32le, channels: 1, sampleRate: 16_000),
    ]

    /// Feeds `bytes` cut at `cuts` into a fresh aligner, with output room of `room` frames.
    private func align(_ bytes: [UInt8], format: PCMFormat, chunkSizes: [Int], room: Int) -> (frames: [Float], aligner: Aligner) {
        let aligner = Aligner(inputFormat: format)
        var frames: [Float] = []
        var output = [Float](repeating: 0, count: room * format.channels)
        var offset = 0
        var chunk = 0
        while offset < bytes.count {
            let size = min(chunkSizes[chunk % chunkSizes.count], bytes.count - offset)
            chunk += 1
            var taken = 0
            while taken < size {
                let (consumed, produced) = bytes.withUnsafeBytes { raw in
                    output.withUnsafeMutableBufferPointer { out in
                        aligner.process(UnsafeRawBufferPointer(rebasing: raw[(offset + taken)..<(offset + size)]), into: out)
                    }
                }
                frames += output[0..<(produced * format.channels)]
                taken += consumed
            }
            offset += size
        }
        return (frames, aligner)
    }

    @Test("every way of splitting a random byte stream yields identical frames", arguments: formats)
    func splitIndependence(format: PCMFormat) {
        var generator = SeededGenerator(seed: UInt64(format.bytesPerFrame))
        let frameCount = 3_001
        var bytes = (0..<(frameCount * format.bytesPerFrame)).map { _ in UInt8.random(in: 0...255, using: &generator) }
        if format.sampleFormat == .f32le {
            // Keep floats finite so equality is meaningful (NaN != NaN).
            for index in stride(from: 3, to: bytes.count, by: 4) { bytes[index] &= 0x3F }
        }
        var reference = [Float](repeating: 0, count: frameCount * format.channels)
        bytes.withUnsafeBytes { raw in
            reference.withUnsafeMutableBufferPointer {
                SampleConversion.decode(raw.baseAddress!, format: format.sampleFormat, samples: frameCount * format.channels, into: $0.baseAddress!)
            }
        }
        let splits: [[Int]] = [
            [1], [2], [3], [5], [7], [format.bytesPerFrame - 1], [format.bytesPerFrame + 1], [4096], [bytes.count],
            (0..<64).map { _ in Int.random(in: 1...97, using: &generator) },
        ]
        for split in splits {
            for room in [1, 3, 1024] {
                let (frames, aligner) = align(bytes, format: format, chunkSizes: split, room: room)
                #expect(firstDifference(frames, reference) == nil, "split \(split.prefix(4)) room \(room)")
                #expect(aligner.framesProduced == frameCount)
            }
        }
    }

    @Test("a trailing partial frame is dropped and counted at the end of the stream")
    func trailingPartialFrame() {
        let format = PCMFormat(.s16le, channels: 2, sampleRate: 24_000)
        let bytes: [UInt8] = [0x00, 0x40, 0x00, 0xC0, /* partial: */ 0xFF, 0x7F, 0x01]
        let (frames, aligner) = align(bytes, format: format, chunkSizes: [1], room: 8)
        #expect(frames == [0.5, -0.5])
        var batch = MarkerBatch()
        aligner.receive(Marker(position: bytes.count, event: .endOfStream), emitting: &batch)
        #expect(aligner.droppedPartialFrames == 1)
        #expect(aligner.droppedBytes == 3)
        #expect(batch[0] == Marker(position: 1, event: .endOfStream))
    }

    @Test("an utterance boundary realigns a stream after an odd byte")
    func realignsAtBoundary() {
        let format = PCMFormat(.s16le, channels: 1, sampleRate: 24_000)
        let aligner = Aligner(inputFormat: format)
        var output = [Float](repeating: 0, count: 8)
        let first: [UInt8] = [0x00, 0x40, 0x55]  // one frame and a stray byte
        let second: [UInt8] = [0x00, 0xC0]
        let a = first.withUnsafeBytes { raw in output.withUnsafeMutableBufferPointer { aligner.process(raw, into: $0) } }
        #expect(a.bytesConsumed == 3 && a.framesProduced == 1)
        var batch = MarkerBatch()
        aligner.receive(Marker(position: 3, event: .utteranceEnd(UtteranceID(1))), emitting: &batch)
        let b = second.withUnsafeBytes { raw in output.withUnsafeMutableBufferPointer { aligner.process(raw, into: $0) } }
        #expect(b.framesProduced == 1)
        #expect(output[0] == -0.5)
        #expect(aligner.droppedPartialFrames == 1)
        #expect(batch[0].position == 1)
    }
}
