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
        var aligned = [Float](repeating: 0, count: block * channels)
        var resampled = [Float](repeating: 0, count: outputBlock * channels)
        var faded = [Float](repeating: 0, count: outputBlock * channels)
        var mapped = [Float](repeating: 0, count: outputBlock * outputChannels)
        var report = Report(inputFormat: format, outputRate: outputRate, outputChannels: outputChannels)

        /// Fader → channel map → file, for one block of resampled frames (empty to drain).
        func fadeAndWrite(_ frames: Int) throws {
            var offset = 0
            repeat {
                let (consumed, produced) = resampled.withUnsafeBufferPointer { source in
                    faded.withUnsafeMutableBufferPointer { fader.process(UnsafeBufferPointer(rebasing: source[(offset * channels)..<(frames * channels)]), into: $0) }
                }
                offset += consumed
                if produced > 0 { try write(faded, frames: produced) }
                // The fader may take frames without giving any (it is filling its delay line);
                // stop only when it does neither.
                if consumed == 0 && produced == 0 { break }
            } while offset < frames || frames == 0
        }

        func write(_ samples: [Float], frames: Int) throws {
            if let channelMap {
                samples.withUnsafeBufferPointer { source in
                    mapped.withUnsafeMutableBufferPointer { channelMap.process(source.baseAddress!, frames: frames, into: $0.baseAddress!) }
                }
                try mapped.withUnsafeBufferPointer { try writer.write($0.baseAddress!, frames: frames) }
            } else {
                try samples.withUnsafeBufferPointer { try writer.write($0.baseAddress!, frames: frames) }
            }
            report.outputFrames += frames
        }

        /// Resampler → fader…, for one block of aligned frames (empty to drain).
        func resampleOnward(_ frames: Int) throws {
            var offset = 0
            repeat {
                let (consumed, produced) = aligned.withUnsafeBufferPointer { source in
                    resampled.withUnsafeMutableBufferPointer { resampler.process(UnsafeBufferPointer(rebasing: source[(offset * channels)..<(frames * channels)]), into: $0) }
                }
                offset += consumed
                try fadeAndWrite(produced)
                if consumed == 0 && produced == 0 { break }
            } while offset < frames || (frames == 0 && !resampler.isFinished)
        }

        while true {
            let count = bytes.withUnsafeMutableBytes { reader.read(into: $0) }
            guard count > 0 else { break }
            var offset = 0
            while offset < count {
                let (consumed, produced) = bytes.withUnsafeBytes { raw in
                    aligned.withUnsafeMutableBufferPointer { aligner.process(UnsafeRawBufferPointer(rebasing: raw[offset..<count]), into: $0) }
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
