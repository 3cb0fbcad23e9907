import Foundation
import SluiceAudio
import SluiceGraph
import SluiceNodes
import SluiceTestSupport
import Testing

@Suite("wav.source")
struct WavSourceTests {
    /// Writes `samples` (interleaved) with `SoundFileWriter`.
    static func write(_ samples: [Float], to path: String, rate: Int, channels: Int, format: SampleFormat = .f32le) throws {
        let writer = try SoundFileWriter(path: path, sampleRate: rate, channels: channels, sampleFormat: format)
        // SAFETY: the array holds `count / channels` whole frames.
        try samples.withUnsafeBufferPointer { try writer.write($0.baseAddress!, frames: $0.count / channels) }
        try writer.close()
    }

    @Test("a float WAV comes back sample for sample, at its rate and channels")
    func floatRoundTrip() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let samples = Signals.noise(count: 2 * 5_001, amplitude: 0.9, seed: 11)
        try Self.write(samples, to: folder.file("noise.wav"), rate: 44_100, channels: 2)

        let harness = try SourceHarness(WavSource.type, ["path": .string(folder.file("noise.wav"))])
        #expect(harness.format == .frames(rate: 44_100, channels: 2))
        #expect(harness.node.expectedDuration == 5_001.0 / 44_100)
        #expect(harness.runToEnd(rooms: 1...900, seed: 5).isFinished)
        #expect(firstDifference(harness.samples, samples) == nil)
        // After the end, only .finished.
        #expect(harness.step(room: 10).isFinished)

        // reset starts again from the first frame.
        harness.node.reset()
        let before = harness.frames
        harness.step(room: 3)
        #expect(Array(harness.samples[(before * 2)...]) == Array(samples[0..<6]))
    }

    @Test("integer files are scaled to full scale ±1: a 16-bit code c reads as c / 32768")
    func integerScaling() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let codes: [Int] = [0, 1, -1, 32_767, -32_768, 12_345, -20_000]
        try Self.write(codes.map { Float($0) / 32_768 }, to: folder.file("codes.wav"), rate: 8_000, channels: 1, format: .s16le)
        let harness = try SourceHarness(WavSource.type, ["path": .string(folder.file("codes.wav"))])
        harness.runToEnd()
        #expect(harness.samples == codes.map { Float($0) / 32_768 })
    }

    @Test("relative paths start at the graph file's folder")
    func relativePath() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        try Self.write([0.25, -0.25], to: folder.file("two.wav"), rate: 16_000, channels: 1)
        let node = try makeIONode(WavSource.type, ["path": .string("two.wav")], baseDirectory: folder.path)
        #expect((node as? WavSource)?.path == folder.file("two.wav"))
    }

    @Test("a file that cannot be read fails at creation, naming the path parameter")
    func unreadable() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let missing = folder.file("missing.wav")
        do {
            _ = try makeIONode(WavSource.type, ["path": .string(missing)])
            Issue.record("a missing file was accepted")
        } catch let error as NodeCreationError {
            #expect(error.parameter == "path")
            #expect(error.message.contains(missing))
        }
        try Data("not a sound file".utf8).write(to: URL(fileURLWithPath: folder.file("text.wav")))
        #expect(throws: NodeCreationError.self) { try makeIONode(WavSource.type, ["path": .string(folder.file("text.wav"))]) }
    }

    @Test("pace limits a file like a tone")
    func pacing() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        try Self.write([Float](repeating: 0.1, count: 48_000), to: folder.file("one.wav"), rate: 48_000, channels: 1)
        let harness = try SourceHarness(WavSource.type, ["path": .string(folder.file("one.wav")), "pace": .number(2)])
        #expect(harness.step(room: 100_000, at: 0).waitingUntil == 1.0 / 96_000)
        let status = harness.step(room: 100_000, at: 0.25)
        #expect(harness.frames == 24_000)
        #expect(status.waitingUntil != nil)
        #expect(harness.step(room: 100_000, at: 0.5).isFinished)
        #expect(harness.frames == 48_000)
    }

    @Test("SoundFileReader reports a stored format and reads raw bytes in it")
    func readerRawBytes() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        try Self.write([0.5, -0.5, 0.25], to: folder.file("s24.wav"), rate: 22_050, channels: 1, format: .s24le)
        let reader = try SoundFileReader(path: folder.file("s24.wav"))
        #expect(reader.format == PCMFormat(.s24le, channels: 1, sampleRate: 22_050))
        #expect(reader.frames == 3)
        var bytes = [UInt8](repeating: 0, count: 9)
        #expect(bytes.withUnsafeMutableBytes { reader.read(into: $0) } == 9)
        #expect(bytes == [0x00, 0x00, 0x40, 0x00, 0x00, 0xC0, 0x00, 0x00, 0x20])
    }
}
