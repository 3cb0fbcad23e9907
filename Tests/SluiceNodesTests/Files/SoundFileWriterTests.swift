import Foundation
import SluiceAudio
import SluiceNodes
import SluiceTestSupport
import Testing

@Suite("SoundFileWriter")
struct SoundFileWriterTests {
    /// Writes `samples` in the given frame counts (cycled), closes, and reads the file back.
    private func roundTrip(_ samples: [Float], channels: Int, writes: [Int], in folder: TemporaryFolder) throws -> [Float] {
        let path = folder.file("out-\(writes.first ?? 0).wav")
        let writer = try SoundFileWriter(path: path, sampleRate: 48_000, channels: channels, sampleFormat: .f32le)
        let frames = samples.count / channels
        var done = 0
        var index = 0
        try samples.withUnsafeBufferPointer { buffer in
            while done < frames {
                let count = min(writes[index % writes.count], frames - done)
                // SAFETY: frames done..<done + count lie within `samples`.
                try writer.write(buffer.baseAddress! + done * channels, frames: count)
                done += count
                index += 1
            }
        }
        try writer.close()
        let reader = try SoundFileReader(path: path)
        #expect(reader.frames == frames)
        var back = [Float](repeating: 0, count: samples.count)
        let read = try back.withUnsafeMutableBufferPointer { try reader.readFrames(into: $0) }
        #expect(read == frames)
        return back
    }

    @Test("the file holds every frame in order, whatever the write sizes around the gathering buffer")
    func writeSizes() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let channels = 2
        let bufferFrames = SoundFileWriter.bufferSamples / channels
        let samples = Signals.noise(count: channels * (3 * bufferFrames + 1_234), amplitude: 0.9, seed: 21)
        for writes in [[1], [256], [bufferFrames - 1, 2], [bufferFrames], [3 * bufferFrames + 1_234], [7, 2 * bufferFrames + 5]] {
            let back = try roundTrip(samples, channels: channels, writes: writes, in: folder)
            #expect(firstDifference(back, samples) == nil, "writes of \(writes) frames")
        }
    }
}

/// The containers Sluice writes, told from the file name; any other extension refused.
@Suite struct SoundFileContainerTests {
    @Test("the container a name asks for", arguments: [
        ("a.wav", SoundFileContainer.wav), ("b.WAV", .wav), ("c.wave", .wav), ("d.flac", .flac), ("e.FLAC", .flac),
        ("noextension", .wav), ("/tmp/dir.d/file", .wav), (".hidden", .wav),
    ])
    func named(_ path: String, _ container: SoundFileContainer) {
        #expect(SoundFileContainer(forPath: path) == container)
    }

    @Test("any other extension: nil, and the refusal names what Sluice writes", arguments: ["a.mp3", "b.ogg", "c.aiff", "d.wav.txt"])
    func refused(_ path: String) {
        #expect(SoundFileContainer(forPath: path) == nil)
        #expect(SoundFileContainer.refusal(for: path).hasPrefix("cannot write '\(path)': Sluice writes .wav (WAV) or .flac (FLAC), not ."))
    }

    @Test("SoundFileWriter refuses a name it would not write, and creates no file")
    func writerRefuses() throws {
        let folder = try TemporaryFolder()
        let path = folder.file("speech.mp3")
        #expect(throws: SoundFileError(SoundFileContainer.refusal(for: path))) {
            _ = try SoundFileWriter(path: path, sampleRate: 48_000, channels: 1, sampleFormat: .f32le)
        }
        #expect(!FileManager.default.fileExists(atPath: path))
        // Named outright, the container is written under any name.
        let writer = try SoundFileWriter(path: path, sampleRate: 48_000, channels: 1, sampleFormat: .f32le, container: .wav)
        try writer.close()
        #expect(FileManager.default.fileExists(atPath: path))
    }
}
