import ArgumentParser
import Foundation
import SluiceAudio
import SluiceNodes

struct ConvertCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "convert",
        abstract: "Run a sound file through the aligner, resampler, fader and channel map.",
        discussion: """
            Reads any file libsndfile reads, hands its bytes to the aligner in the file's own \
            sample format, resamples with libsamplerate, fades the edges, maps channels, and \
            writes WAV (or FLAC when OUTPUT ends in .flac).
            """
    )

    static let qualityNames = ResamplerQuality.allCases.map(\.rawValue).joined(separator: ", ")

    @Argument(help: "The sound file to read.")
    var input: String

    @Argument(help: "The file to write (.wav or .flac).")
    var output: String

    @Option(name: .long, help: "Output sample rate in Hz (default: the input's).")
    var rate: Int?

    @Option(name: .long, help: "Output channels (default: the input's).")
    var channels: Int?

    @Option(name: .long, help: "Resampler converter: \(Self.qualityNames).")
    var quality: String = ResamplerQuality.sincMedium.rawValue

    @Option(name: .long, help: "Edge fade length in frames.")
    var fade: Int = Fader.defaultFadeLength

    @Option(name: .long, help: "Output sample format: s16le, s24le, s32le or f32le.")
    var format: String = "s16le"

    func validate() throws {
        if let rate, !(1...Resampler.maximumRate).contains(rate) {
            throw ValidationError("--rate \(rate) is outside 1...\(Resampler.maximumRate) Hz")
        }
        if let channels, !(1...Resampler.maximumChannels).contains(channels) {
            throw ValidationError("--channels \(channels) is outside 1...\(Resampler.maximumChannels)")
        }
        if ResamplerQuality(rawValue: quality) == nil {
            throw ValidationError("unknown --quality '\(quality)'; choose one of \(Self.qualityNames)")
        }
        if SampleFormat(name: format) == nil {
            throw ValidationError("unknown --format '\(format)'; choose s16le, s24le, s32le or f32le")
        }
        if fade < 0 {
            throw ValidationError("--fade cannot be negative")
        }
    }

    func run() throws {
        let started = ContinuousClock.now
        let sampleFormat = SampleFormat(name: format)!
        // ArgumentParser prints a thrown error's description and exits with status 1.
        let reader = try SoundFileReader(path: input)
        var settings = FileChain.Settings()
        settings.outputRate = rate
        settings.outputChannels = channels
        settings.quality = ResamplerQuality(rawValue: quality)!
        settings.fadeLength = fade
        let report = try FileChain(settings: settings).run(from: reader) { rate, channels in
            try SoundFileWriter(path: output, sampleRate: rate, channels: channels, sampleFormat: sampleFormat)
        }
        let elapsed = started.duration(to: .now)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
        let audio = Double(report.inputFrames) / Double(report.inputFormat.sampleRate)
        print("""
            \(input): \(report.inputFormat), \(String(format: "%.3f", audio)) s
            \(output): \(sampleFormat) \(report.outputRate) Hz, \(report.outputChannels) ch, \(report.outputFrames) frames
            chain: aligner → resampler (\(quality)) → fader (\(fade) frames) → channel map
            dropped partial frames: \(report.droppedPartialFrames)
            time: \(String(format: "%.3f", seconds)) s (\(String(format: "%.0f", audio / max(seconds, 1e-9)))× real time)
            """)
    }
}
