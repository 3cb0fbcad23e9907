import SluiceAudio
import SluiceNodes

/// Runs a sound file through the node chain a speech stream takes after its provider:
/// aligner → resampler → fader → channel map, block by block, and writes the result.
///
/// This is a fixed linear chain driven on one thread, the same way the graph's worker drives
/// nodes: bytes in whatever block sizes arrive, markers delivered when the input reaches them,
/// and a drain at the end of the stream.
struct FileChain {
    struct Settings {
        var outputRate: Int?
        var outputChannels: Int?
        var quality = ResamplerQuality.sincMedium
        var fadeLength = Fader.defaultFadeLength
        var blockFrames = 1_024
    }

    struct Report {
        var inputFormat: PCMFormat
        var outputRate: Int
        var outputChannels: Int
        var inputFrames = 0
        var outputFrames = 0
        var droppedPartialFrames = 0
    }

    let settings: Settings

    func run(from reader: SoundFileReader, to makeWriter: (_ rate: Int, _ channels: Int) throws -> SoundFileWriter) throws -> Report {
        let format = reader.format
        let channels = format.channels
        let outputRate = settings.outputRate ?? format.sampleRate
        let outputChannels = settings.outputChannels ?? channels
        let block = settings.blockFrames
        let outputBlock = Int((Double(block) * Double(outputRate) / Double(format.sampleRate)).rounded(.up)) + 1

        let aligner = Aligner(inputFormat: format)
        let resampler = try Resampler(channels: channels, inputRate: format.sampleRate, outputRate: outputRate, quality: settings.quality)
        let fader = Fader(channels: channels, fadeLength: settings.fadeLength)
        let channelMap = try Self.channelMap(from: channels, to: outputChannels)
        let writer = try makeWriter(outputRate, outputChannels)

        var bytes = [UInt8](repeating: 0, count: block * format.bytesPerFrame)
        let aligned = SampleBuffer(frames: block, channels: channels)
        let resampled = SampleBuffer(frames: outputBlock, channels: channels)
        let faded = SampleBuffer(frames: outputBlock, channels: channels)
        let mapped = SampleBuffer(frames: outputBlock, channels: outputChannels)
        var report = Report(inputFormat: format, outputRate: outputRate, outputChannels: outputChannels)

        func write(_ frames: Int) throws {
            var samples = faded.start
            if let channelMap {
                channelMap.process(faded.start, frames: frames, into: mapped.start)
                samples = mapped.start
            }
            try writer.write(samples, frames: frames)
            report.outputFrames += frames
        }

        /// Fader → channel map → file, for one block of resampled frames (0 to drain).
        func fadeAndWrite(_ frames: Int) throws {
            try pump({ fader.process($0, into: $1) }, resampled, frames: frames, into: faded, then: write)
        }

        /// Resampler → fader…, for one block of aligned frames (0 to drain).
        func resampleOnward(_ frames: Int) throws {
            try pump({ resampler.process($0, into: $1) }, aligned, frames: frames, into: resampled, then: fadeAndWrite)
        }

        while true {
            let count = bytes.withUnsafeMutableBytes { reader.read(into: $0) }
            guard count > 0 else { break }
            var offset = 0
            while offset < count {
                let (consumed, produced) = bytes.withUnsafeBytes { raw in
                    aligner.process(UnsafeRawBufferPointer(rebasing: raw[offset..<count]), into: aligned.all)
                }
                offset += consumed
                report.inputFrames += produced
                try resampleOnward(produced)
            }
        }

        // End of stream. A node receives the marker only once its input has reached the
        // marker's position, so each node's tail is drained into the next before the next
        // hears of the end.
        var batch = MarkerBatch()
        aligner.receive(Marker(position: report.inputFrames * format.bytesPerFrame, event: .endOfStream), emitting: &batch)
        resampler.receive(batch[0], emitting: &batch)
        try resampleOnward(0)
        fader.receive(batch[1], emitting: &batch)
        try fadeAndWrite(0)
        report.droppedPartialFrames = aligner.droppedPartialFrames
        return report
    }

    /// Feeds `frames` frames of `input` through one stage into `output`, handing each batch
    /// it produces to `next`; with `frames == 0`, drains the stage. A stage may take frames
    /// without giving any (a delay line filling), so it stops only when the stage does neither.
    private func pump(
        _ stage: (UnsafeBufferPointer<Float>, UnsafeMutableBufferPointer<Float>) -> (Int, Int),
        _ input: SampleBuffer, frames: Int, into output: SampleBuffer, then next: (Int) throws -> Void
    ) rethrows {
        var offset = 0
        repeat {
            let (consumed, produced) = stage(input.frames(offset..<frames), output.all)
            offset += consumed
            if produced > 0 { try next(produced) }
            if consumed == 0 && produced == 0 { break }
        } while offset < frames || frames == 0
    }

    private static func channelMap(from input: Int, to output: Int) throws -> ChannelMap? {
        switch (input, output) {
        case _ where input == output: nil
        case (1, 2): .monoToStereo()
        case (2, 1): .stereoToMono()
        default:
            // Any other pair: repeat the input channels cyclically.
            try ChannelMap(inputChannels: input, routing: (0..<output).map { $0 % input })
        }
    }
}

/// A block of interleaved samples the chain owns for the whole run.
private final class SampleBuffer {
    let channels: Int
    let all: UnsafeMutableBufferPointer<Float>
    var start: UnsafeMutablePointer<Float> { all.baseAddress! }

    init(frames: Int, channels: Int) {
        self.channels = channels
        all = .allocate(capacity: frames * channels)
        all.initialize(repeating: 0)
    }

    deinit {
        all.deallocate()
    }

    /// Frames `range` as read-only input.
    func frames(_ range: Range<Int>) -> UnsafeBufferPointer<Float> {
        UnsafeBufferPointer(rebasing: all[(range.lowerBound * channels)..<(range.upperBound * channels)])
    }
}
