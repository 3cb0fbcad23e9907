import CSndFile
import Foundation
import SluiceTestSupport
import Testing

@Suite("sluice convert")
struct ConvertCommandTests {
    private let folder: URL = {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("sluice-convert-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }()

    /// Writes mono 16-bit samples to a WAV file with libsndfile.
    private func writeWAV(_ samples: [Float], rate: Int, to url: URL) throws {
        var info = SF_INFO()
        info.samplerate = Int32(rate)
        info.channels = 1
        info.format = Int32(SF_FORMAT_WAV) | Int32(SF_FORMAT_PCM_16)
        let handle = try #require(sf_open(url.path, Int32(SFM_WRITE), &info))
        defer { sf_close(handle) }
        #expect(sf_writef_float(handle, samples, sf_count_t(samples.count)) == samples.count)
    }

    private func readWAV(_ url: URL) throws -> (samples: [Float], rate: Int, channels: Int) {
        var info = SF_INFO()
        let handle = try #require(sf_open(url.path, Int32(SFM_READ), &info))
        defer { sf_close(handle) }
        var samples = [Float](repeating: 0, count: Int(info.frames) * Int(info.channels))
        _ = sf_readf_float(handle, &samples, info.frames)
        return (samples, Int(info.samplerate), Int(info.channels))
    }

    @Test("a 24 kHz mono sine becomes 48 kHz stereo with the exact length, faded edges and a clean spectrum")
    func convertsSine() throws {
        let input = folder.appendingPathComponent("sine.wav")
        let output = folder.appendingPathComponent("out.wav")
        try writeWAV(Signals.sine(frequency: 1_000, sampleRate: 24_000, frames: 24_000), rate: 24_000, to: input)

        let outcome = try CommandRunner.run("sluice", ["convert", input.path, "-o", output.path, "--rate", "48000", "--channels", "2", "--quality", "sinc-best"])
        #expect(outcome.status == 0, "\(outcome.standardError)")
        // The summary goes to standard error, as every command's; nothing is data here.
        #expect(outcome.standardError.contains("S16LE 48000 Hz, 2 ch, 48000 frames"), "\(outcome.standardError)")
        #expect(outcome.standardOutput == "")

        let (samples, rate, channels) = try readWAV(output)
        #expect(rate == 48_000 && channels == 2)
        #expect(samples.count == 2 * 48_000)
        let left = stride(from: 0, to: samples.count, by: 2).map { samples[$0] }
        let right = stride(from: 1, to: samples.count, by: 2).map { samples[$0] }
        #expect(left == right)
        #expect(abs(left.first!) < 0.001 && abs(left.last!) < 0.01)
        // Away from the faded edges the sine is intact to 16-bit precision.
        let ideal = Signals.sine(frequency: 1_000, sampleRate: 48_000, frames: 48_000)
        let range = 1_000..<47_000
        let snr = Signals.snr(measured: Array(left[range]), reference: Array(ideal[range]))
        #expect(snr >= 80, "SNR \(snr) dB")
    }

    @Test("the output as a second argument, the older form, still works and writes the same file")
    func positionalOutput() throws {
        let input = folder.appendingPathComponent("old-sine.wav")
        try writeWAV(Signals.sine(frequency: 500, sampleRate: 24_000, frames: 2_400), rate: 24_000, to: input)
        let option = folder.appendingPathComponent("option.wav"), positional = folder.appendingPathComponent("positional.wav")
        #expect(try CommandRunner.run("sluice", ["convert", input.path, "--output", option.path, "--rate", "48000"]).status == 0)
        #expect(try CommandRunner.run("sluice", ["convert", input.path, positional.path, "--rate", "48000"]).status == 0)
        #expect(try Data(contentsOf: option) == Data(contentsOf: positional))
    }

    @Test("the output given twice, or not at all, or with an extension Sluice does not write: a usage error")
    func outputRefusals() throws {
        let twice = try CommandRunner.run("sluice", ["convert", "a.wav", "b.wav", "-o", "c.wav"])
        #expect(twice.status == 2)
        #expect(twice.standardError.contains("give the file to write once: -o/--output FILE"), "\(twice.standardError)")
        let none = try CommandRunner.run("sluice", ["convert", "a.wav"])
        #expect(none.status == 2)
        #expect(none.standardError.contains("name the file to write: -o/--output FILE"), "\(none.standardError)")
        let mp3 = folder.appendingPathComponent("x.mp3")
        let refused = try CommandRunner.run("sluice", ["convert", "a.wav", "-o", mp3.path])
        #expect(refused.status == 2)
        #expect(refused.standardError.contains("Sluice writes .wav (WAV) or .flac (FLAC), not .mp3"), "\(refused.standardError)")
        #expect(!FileManager.default.fileExists(atPath: mp3.path))
    }

    @Test("a missing input is an error naming the file")
    func missingInput() throws {
        let outcome = try CommandRunner.run("sluice", ["convert", "/nonexistent/in.wav", folder.appendingPathComponent("x.wav").path])
        #expect(outcome.status == 1)
        #expect(outcome.standardError.contains("cannot open '/nonexistent/in.wav'"))
    }

    @Test("bad options are refused before anything runs")
    func badOptions() throws {
        let rate = try CommandRunner.run("sluice", ["convert", "a.wav", "b.wav", "--rate", "400000"])
        #expect(rate.status == 2)
        #expect(rate.standardError.contains("--rate 400000 is outside 1...192000 Hz"))
        let quality = try CommandRunner.run("sluice", ["convert", "a.wav", "b.wav", "--quality", "fast"])
        #expect(quality.status == 2)
        #expect(quality.standardError.contains("unknown --quality 'fast'; choose one of auto, sinc-best, sinc-medium, sinc-fastest, zero-order-hold, linear, soxr-vhq, soxr-hq, soxr-mq, soxr-lq, speex-0,"))
    }
}
