import Foundation
import SluiceSpeech
import SluiceTestSupport
import Testing

/// The synthesis cache in use: a controller with a cache synthesises each utterance once per
/// provider and settings, plays stored audio bit-exactly, and never plays a corrupt entry.
/// Through the real espeak provider, rendered into files.
@Suite(.serialized) struct ProviderCacheTests {
    static let text = "The cache keeps this sentence. And this one too."

    static func speak(_ folder: TemporaryFolder, _ cache: SynthesisCache, into name: String, voice: String = "en") throws -> (SpeechResult, [Float]) {
        let result = try SpeechController(Speech.file(folder.path(name)) { configuration in
            configuration.cache = cache
            configuration.voice = voice
            configuration.strategy = .generateFirst
        }).speak(Self.text)
        return (result, try Speech.samples(folder.path(name)))
    }

    static func synthesised(_ result: SpeechResult) -> Int? { result.report.counters["voice.utterances-synthesised"] }

    @Test("hit: the second speech plays the stored audio, bit-exact, synthesising nothing; another voice misses")
    func hitAndMiss() throws {
        let folder = TemporaryFolder()
        let cache = try SynthesisCache(directory: URL(fileURLWithPath: folder.path("cache")))
        let (first, firstSamples) = try Self.speak(folder, cache, into: "first.wav")
        #expect(Self.synthesised(first) == 2)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path("cache")).count == 2)
        let (second, secondSamples) = try Self.speak(folder, cache, into: "second.wav")
        #expect(Self.synthesised(second) == 0)
        #expect(secondSamples == firstSamples)
        #expect(second.utterances.map(\.text) == first.utterances.map(\.text))
        let (other, _) = try Self.speak(folder, cache, into: "other.wav", voice: "en-us")
        #expect(Self.synthesised(other) == 2)
    }

    @Test("a corrupt or truncated entry is discarded and synthesised again, never played")
    func corrupt() throws {
        let folder = TemporaryFolder()
        let cache = try SynthesisCache(directory: URL(fileURLWithPath: folder.path("cache")))
        let (_, firstSamples) = try Self.speak(folder, cache, into: "first.wav")
        let entries = try FileManager.default.contentsOfDirectory(atPath: folder.path("cache")).map { folder.path("cache/\($0)") }
        #expect(entries.count == 2)
        // One truncated mid-audio, one with a flipped byte in its audio.
        let truncated = try Data(contentsOf: URL(fileURLWithPath: entries[0]))
        try truncated.prefix(truncated.count / 2).write(to: URL(fileURLWithPath: entries[0]))
        var flipped = try Data(contentsOf: URL(fileURLWithPath: entries[1]))
        flipped[flipped.count - 10] ^= 0xFF
        try flipped.write(to: URL(fileURLWithPath: entries[1]))
        let (again, againSamples) = try Self.speak(folder, cache, into: "again.wav")
        #expect(Self.synthesised(again) == 2)
        // espeak-ng's state carries across syntheses in a process, so a new synthesis differs
        // slightly in length (EspeakProviderTests): within 3 %, nowhere near half an entry.
        #expect(abs(againSamples.count - firstSamples.count) <= firstSamples.count * 3 / 100)
        let (third, thirdSamples) = try Self.speak(folder, cache, into: "third.wav")
        #expect(Self.synthesised(third) == 0)
        #expect(thirdSamples == againSamples)
    }
}
