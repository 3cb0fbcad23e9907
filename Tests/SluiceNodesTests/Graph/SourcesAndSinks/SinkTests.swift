import CSndFile
import Foundation
import SluiceAudio
import SluiceGraph
import SluiceNodes
import SluiceTestSupport
import Testing

/// Reads a sound file back with libsndfile directly, not through the code under test.
struct ReadBack {
    var rate: Int
    var channels: Int
    var format: Int32
    var samples: [Float]
    var title: String?
    var artist: String?

    init(_ path: String) throws {
        var info = SF_INFO()
        let handle = try #require(sf_open(path, Int32(SFM_READ), &info), "cannot open \(path)")
        defer { sf_close(handle) }
        rate = Int(info.samplerate)
        channels = Int(info.channels)
        format = info.format
        samples = [Float](repeating: 0, count: Int(info.frames) * channels)
        // SAFETY: `samples` was sized for `info.frames` frames of `channels` samples.
        let read = samples.withUnsafeMutableBufferPointer { sf_readf_float(handle, $0.baseAddress!, info.frames) }
        try #require(read == info.frames)
        title = sf_get_string(handle, Int32(SF_STR_TITLE)).map { String(cString: $0) }
        artist = sf_get_string(handle, Int32(SF_STR_ARTIST)).map { String(cString: $0) }
    }
}

/// Plays the offline driver's part for a sink: formats, prepare, writes in blocks, finish.
func drive(_ sink: any SinkNode, _ samples: [Float], rate: Int, channels: Int, blocks: ClosedRange<Int> = 1...700) throws {
    let outputs = try sink.outputFormats(for: [.frames(rate: rate, channels: channels)], context: FormatContext(downstreamRate: sink.decidedRate, blockFrames: 256, isLive: false))
    #expect(outputs.isEmpty)
    try sink.prepare(PrepareContext(inputFormats: [.frames(rate: rate, channels: channels)], outputFormats: [], maximumUnits: 4096, blockFrames: 256))
    var generator = SeededGenerator(seed: 6)
    var offset = 0
    let frames = samples.count / channels
    while offset < frames {
        let count = min(Int.random(in: blocks, using: &generator), frames - offset)
        // SAFETY: the slice is inside the array, and only used during the call.
        try samples.withUnsafeBufferPointer {
            try sink.write(UnsafeBufferPointer(rebasing: $0[(offset * channels)..<((offset + count) * channels)]))
        }
        offset += count
    }
    try sink.finish()
}

func makeSink(_ type: NodeType, _ values: [String: ParameterValue] = [:]) throws -> any SinkNode {
    try #require(try makeIONode(type, values) as? any SinkNode, "not a sink")
}

@Suite("wav.sink")
struct WavSinkTests {
    @Test("a float WAV holds exactly what was written, with its title and artist")
    func floatWAV() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let path = folder.file("out.wav")
        let sink = try makeSink(WavSink.type, ["path": .string(path), "title": .string("Hello wörld"), "artist": .string("Sluice")])
        #expect(sink.decidedRate == nil)
        let samples = Signals.noise(count: 2 * 10_007, amplitude: 1.5, seed: 21)  // beyond ±1 too: floats do not clip
        try drive(sink, samples, rate: 44_100, channels: 2)
        let file = try ReadBack(path)
        #expect(file.rate == 44_100)
        #expect(file.channels == 2)
        #expect(file.format == Int32(SF_FORMAT_WAV) | Int32(SF_FORMAT_FLOAT))
        #expect(firstDifference(file.samples, samples) == nil)
        #expect(file.title == "Hello wörld")
        #expect(file.artist == "Sluice")
    }

    @Test("a .flac path writes 24-bit FLAC, within half a 24-bit step, with its tags")
    func flac() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let path = folder.file("out.FLAC")
        let sink = try makeSink(WavSink.type, ["path": .string(path), "title": .string("Tone"), "artist": .string("Nobody")])
        let samples = Signals.sine(frequency: 440, sampleRate: 48_000, frames: 9_000, amplitude: 0.9)
        try drive(sink, samples, rate: 48_000, channels: 1)
        let file = try ReadBack(path)
        #expect(file.format == Int32(SF_FORMAT_FLAC) | Int32(SF_FORMAT_PCM_24))
        #expect(file.samples.count == samples.count)
        let error = zip(file.samples, samples).map { abs(Double($0) - Double($1)) }.max() ?? 1
        #expect(error <= 1.0 / 8_388_608)
        #expect(error > 0)  // it really went through 24 bits
        #expect(file.title == "Tone")
        #expect(file.artist == "Nobody")
    }

    @Test("format and sample-format choose the container and encoding")
    func encodings() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let cases: [(String, [String: ParameterValue], Int32)] = [
            ("a.wav", ["sample-format": .string("s16")], Int32(SF_FORMAT_WAV) | Int32(SF_FORMAT_PCM_16)),
            ("b.wav", ["sample-format": .string("s24")], Int32(SF_FORMAT_WAV) | Int32(SF_FORMAT_PCM_24)),
            ("c.audio", ["format": .string("flac"), "sample-format": .string("s16")], Int32(SF_FORMAT_FLAC) | Int32(SF_FORMAT_PCM_16)),
            ("d.flac", ["format": .string("wav")], Int32(SF_FORMAT_WAV) | Int32(SF_FORMAT_FLOAT)),
        ]
        for (name, values, expected) in cases {
            var all = values
            all["path"] = .string(folder.file(name))
            try drive(try makeSink(WavSink.type, all), [0, 0.5, -0.5, 0.25], rate: 8_000, channels: 1)
            let file = try ReadBack(folder.file(name))
            #expect(file.format == expected, "\(name)")
            #expect(file.samples == [0, 0.5, -0.5, 0.25], "\(name)")
        }
    }

    @Test("FLAC cannot store floats: refused at creation")
    func flacFloat() throws {
        do {
            _ = try makeSink(WavSink.type, ["path": .string("x.flac"), "sample-format": .string("f32")])
            Issue.record("FLAC with f32 was accepted")
        } catch let error as NodeCreationError {
            #expect(error.parameter == "sample-format")
        }
    }

    @Test("a set rate is decided and enforced; frames only; a set channel count is enforced")
    func formatChecks() throws {
        let sink = try makeSink(WavSink.type, ["path": .string("x.wav"), "rate": .integer(48_000), "channels": .integer(2)])
        #expect(sink.decidedRate == 48_000)
        let context = FormatContext(downstreamRate: 48_000, blockFrames: 256, isLive: false)
        #expect(throws: FormatMismatch(input: 0, required: .sampleRate(48_000))) {
            try sink.outputFormats(for: [.frames(rate: 44_100, channels: 2)], context: context)
        }
        #expect(throws: FormatMismatch(input: 0, required: .channels(2))) {
            try sink.outputFormats(for: [.frames(rate: 48_000, channels: 1)], context: context)
        }
        #expect(throws: FormatMismatch(input: 0, required: .medium(.frames))) {
            try sink.outputFormats(for: [.bytes(PCMFormat(.s16le, channels: 2, sampleRate: 48_000))], context: context)
        }
        #expect(try sink.outputFormats(for: [.frames(rate: 48_000, channels: 2)], context: context).isEmpty)
    }

    @Test("a file that cannot be created fails in prepare, naming the path")
    func unwritable() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let path = folder.file("no/such/folder/out.wav")
        let sink = try makeSink(WavSink.type, ["path": .string(path)])
        #expect {
            try sink.prepare(PrepareContext(inputFormats: [.frames(rate: 8_000, channels: 1)], outputFormats: [], maximumUnits: 16, blockFrames: 16))
        } throws: { error in
            "\(error)".contains(path)
        }
        #expect(throws: SoundFileError.self) { try [Float(0)].withUnsafeBufferPointer { try sink.write($0) } }
    }

    @Test("relative paths start at the graph file's folder")
    func relativePath() throws {
        let node = try makeIONode(WavSink.type, ["path": .string("out/x.wav")], baseDirectory: "/tmp/graphs")
        #expect((node as? WavSink)?.path == "/tmp/graphs/out/x.wav")
    }
}

@Suite("null.sink")
struct NullSinkTests {
    @Test("write counts and discards")
    func discards() throws {
        let sink = try makeSink(NullSink.type, [:])
        let null = try #require(sink as? NullSink)
        try drive(sink, Signals.noise(count: 3 * 1_000, seed: 1), rate: 22_050, channels: 3)
        #expect(null.framesWritten == 1_000)
        var report = NodeReport()
        sink.report(into: &report)
        #expect(report.counters["frames-discarded"] == 1_000)
    }

    @Test("speed sets the clock's pace: 0 is free, anything else real time × speed")
    func pace() throws {
        #expect(try #require(try makeSink(NullSink.type, [:]) as? NullSink).pace == .realtime(speed: 1))
        #expect(try #require(try makeSink(NullSink.type, ["speed": .number(0)]) as? NullSink).pace == .free)
        #expect(try #require(try makeSink(NullSink.type, ["speed": .number(8)]) as? NullSink).pace == .realtime(speed: 8))
    }

    @Test("a set rate is decided and enforced")
    func rate() throws {
        let sink = try makeSink(NullSink.type, ["rate": .integer(24_000)])
        #expect(sink.decidedRate == 24_000)
        #expect(throws: FormatMismatch(input: 0, required: .sampleRate(24_000))) {
            try sink.outputFormats(for: [.frames(rate: 48_000, channels: 1)], context: FormatContext(downstreamRate: 24_000, blockFrames: 256, isLive: false))
        }
        #expect(try makeSink(NullSink.type, [:]).decidedRate == nil)
    }
}
