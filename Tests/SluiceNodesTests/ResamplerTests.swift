import Foundation
import SluiceAudio
import SluiceNodes
import SluiceTestSupport
import Testing

@Suite("Resampler")
struct ResamplerTests {
    /// Runs `input` through a resampler with random block sizes and an end-of-stream marker.
    private func resample(
        _ input: [Float], channels: Int = 1, from inputRate: Int, to outputRate: Int,
        quality: ResamplerQuality, seed: UInt64 = 1, blocks: ClosedRange<Int> = 1...700,
        extraMarkers: [Marker] = []
    ) throws -> NodeDriver.Result {
        let resampler = try Resampler(channels: channels, inputRate: inputRate, outputRate: outputRate, quality: quality)
        let driver = NodeDriver(channels: channels, inputBlocks: blocks, outputBlocks: blocks, seed: seed)
        let end = Marker(position: input.count / channels, event: .endOfStream)
        return driver.run(
            input: input, markers: extraMarkers + [end],
            process: { input, output, _ in resampler.process(input, into: output) },
            receive: { resampler.receive($0, emitting: &$1) })
    }

    static let ratePairs: [(Int, Int)] = [(24_000, 48_000), (22_050, 48_000), (44_100, 48_000), (48_000, 44_100), (22_050, 16_000), (8_000, 192_000), (192_000, 8_000), (44_100, 192_000)]

    @Test("exact frame accounting over 500 random blocks", arguments: ResamplerQuality.allCases)
    func frameAccounting(quality: ResamplerQuality) throws {
        var generator = SeededGenerator(seed: 500)
        for (inputRate, outputRate) in Self.ratePairs {
            let blocks = (0..<500).map { _ in Int.random(in: 1...300, using: &generator) }
            let total = blocks.reduce(0, +)
            let input = Signals.noise(count: total, seed: 3)
            let result = try resample(input, from: inputRate, to: outputRate, quality: quality, blocks: 1...300)
            let expected = (Double(total) * Double(outputRate) / Double(inputRate)).rounded()
            #expect(result.output.count == Int(expected), "\(inputRate) → \(outputRate): \(total) frames in")
            #expect(result.markers.last == Marker(position: Int(expected), event: .endOfStream))
        }
    }

    @Test("output is identical whatever the block split", arguments: ResamplerQuality.allCases)
    func splitIndependence(quality: ResamplerQuality) throws {
        let input = Signals.noise(count: 20_011, seed: 9)
        let whole = try resample(input, from: 24_000, to: 48_000, quality: quality, blocks: 20_011...20_011)
        for seed in 1...3 as ClosedRange<UInt64> {
            let split = try resample(input, from: 24_000, to: 48_000, quality: quality, seed: seed, blocks: 1...257)
            #expect(firstDifference(split.output, whole.output) == nil, "seed \(seed)")
        }
        let single = try resample(input, from: 24_000, to: 48_000, quality: quality, blocks: 1...1)
        #expect(firstDifference(single.output, whole.output) == nil)
    }

    /// Each converter's stated quality, in dB of SNR against the ideal sine, 24 kHz → 48 kHz
    /// and 44.1 kHz → 48 kHz: at 1 kHz, and at 85 % of the input's Nyquist frequency (10.2
    /// kHz at 24 kHz), which tells whose pass band reaches that far. nil: not stated (the
    /// band ends below it, or its roll-off starts). The floors are a few dB under what this
    /// machine measured; docs/resampling.md has the measured figures.
    static let statedQuality: [ResamplerQuality: (oneKilohertz: Double, bandEdge: Double?)] = [
        .sincBest: (140, 130), .sincMedium: (135, 55), .sincFastest: (100, nil), .zeroOrderHold: (5, nil), .linear: (8, nil),
        .soxrVeryHigh: (140, 65), .soxrHigh: (125, 60), .soxrMedium: (100, 30), .soxrLow: (105, nil),
        .speex0: (55, nil), .speex1: (70, nil), .speex2: (70, nil), .speex3: (88, nil), .speex4: (98, nil),
        .speex5: (100, nil), .speex6: (100, 95), .speex7: (100, 90), .speex8: (110, 90), .speex9: (120, 115),
        .speex10: (125, 112),
    ]

    /// SNR of a sine resampled against the ideal sine at the output rate, away from the first
    /// and last 20 ms where the stream's edges ring.
    private func sineSNR(_ frequency: Double, _ quality: ResamplerQuality, from inputRate: Int, to outputRate: Int) throws -> Double {
        let input = Signals.sine(frequency: frequency, sampleRate: inputRate, frames: inputRate)
        let result = try resample(input, from: inputRate, to: outputRate, quality: quality)
        let ideal = Signals.sine(frequency: frequency, sampleRate: outputRate, frames: result.output.count)
        let margin = outputRate / 50
        let range = margin..<(result.output.count - margin)
        return Signals.snr(measured: Array(result.output[range]), reference: Array(ideal[range]))
    }

    @Test("every converter keeps its stated SNR at 1 kHz and, where stated, at 85 % of Nyquist", arguments: ResamplerQuality.allCases)
    func statedSNR(quality: ResamplerQuality) throws {
        let stated = try #require(Self.statedQuality[quality])
        for (inputRate, outputRate) in [(24_000, 48_000), (44_100, 48_000)] {
            let low = try sineSNR(1_000, quality, from: inputRate, to: outputRate)
            print("resampler SNR \(quality.rawValue) \(inputRate)→\(outputRate) 1 kHz: \(String(format: "%.1f", low)) dB")
            #expect(low >= stated.oneKilohertz, "\(quality.rawValue) \(inputRate) → \(outputRate) at 1 kHz: \(low) dB")
            guard let edge = stated.bandEdge else { continue }
            let frequency = 0.85 * Double(inputRate) / 2
            let high = try sineSNR(frequency, quality, from: inputRate, to: outputRate)
            print("resampler SNR \(quality.rawValue) \(inputRate)→\(outputRate) \(Int(frequency)) Hz: \(String(format: "%.1f", high)) dB")
            #expect(high >= edge, "\(quality.rawValue) \(inputRate) → \(outputRate) at \(frequency) Hz: \(high) dB")
        }
    }

    @Test("each channel of a multichannel stream equals that channel resampled alone")
    func multichannel() throws {
        let left = Signals.sine(frequency: 440, sampleRate: 44_100, frames: 9_000)
        let right = Signals.noise(count: 9_000, seed: 4)
        let stereo = try resample(interleave([left, right]), channels: 2, from: 44_100, to: 48_000, quality: .sincFastest)
        let monoLeft = try resample(left, from: 44_100, to: 48_000, quality: .sincFastest)
        let monoRight = try resample(right, from: 44_100, to: 48_000, quality: .sincFastest)
        // libsamplerate's mono and multichannel paths may end their flush a fraction of a frame
        // apart; the node then pads the final frame with silence. Everything before it matches.
        #expect(stereo.output.count == 2 * monoLeft.output.count)
        #expect(firstDifference(Array(channel(0, of: stereo.output, channels: 2).dropLast()), Array(monoLeft.output.dropLast())) == nil)
        #expect(firstDifference(Array(channel(1, of: stereo.output, channels: 2).dropLast()), Array(monoRight.output.dropLast())) == nil)
    }

    @Test("equal rates pass audio through bit-identical")
    func passthrough() throws {
        let input = Signals.noise(count: 5_000, seed: 5)
        let resampler = try Resampler(channels: 1, inputRate: 48_000, outputRate: 48_000)
        #expect(resampler.latencyFrames == 0)
        let result = try resample(input, from: 48_000, to: 48_000, quality: .sincBest)
        #expect(firstDifference(result.output, input) == nil)
    }

    @Test("markers are restamped to output positions")
    func markers() throws {
        let input = Signals.noise(count: 24_000, seed: 6)
        let start = Marker(position: 0, event: .utteranceStart(UtteranceID(1)))
        let middle = Marker(position: 12_001, event: .discontinuity)
        let result = try resample(input, from: 24_000, to: 48_000, quality: .sincMedium, extraMarkers: [start, middle])
        #expect(result.markers.map(\.position) == [0, 24_002, 48_000])
    }

    @Test(
        "a discontinuity ends a segment: flushed to its exact length, the next resampled afresh, whatever the split",
        arguments: [ResamplerQuality.speex6, .soxrHigh, .sincFastest])
    func discontinuityFlushesTheSegment(quality: ResamplerQuality) throws {
        let first = Signals.noise(count: 7_001, seed: 21)
        let second = Signals.noise(count: 5_003, seed: 22)
        let alone1 = try resample(first, from: 22_050, to: 48_000, quality: quality, blocks: 7_001...7_001)
        let alone2 = try resample(second, from: 22_050, to: 48_000, quality: quality, blocks: 5_003...5_003)
        let gap = Marker(position: first.count, event: .discontinuity, isDiscontinuous: true)
        for seed in 1...3 as ClosedRange<UInt64> {
            let joined = try resample(
                first + second, from: 22_050, to: 48_000, quality: quality, seed: seed, blocks: 1...300, extraMarkers: [gap])
            // Nothing of the first segment waits for the second: it is all out by the marker.
            #expect(joined.markers.first?.position == alone1.output.count)
            #expect(firstDifference(joined.output, alone1.output + alone2.output) == nil, "seed \(seed)")
            #expect(joined.markers.last?.position == alone1.output.count + alone2.output.count)
        }
    }

    @Test("latency is measured and reported", arguments: ResamplerQuality.allCases)
    func latency(quality: ResamplerQuality) throws {
        let resampler = try Resampler(channels: 1, inputRate: 24_000, outputRate: 48_000, quality: quality)
        print("resampler latency \(quality.rawValue) 24k→48k: \(resampler.latencyFrames) frames")
        switch quality {
        case .sincBest, .sincMedium, .sincFastest: #expect(resampler.latencyFrames > 0)
        case .zeroOrderHold, .linear: #expect(resampler.latencyFrames <= 4)
        case .soxrVeryHigh, .soxrHigh, .soxrMedium, .soxrLow: #expect(resampler.latencyFrames > 0)
        default: #expect((1...300).contains(resampler.latencyFrames))  // speexdsp: its filter's half length
        }
    }

    @Test("bad rates and channel counts are refused with the reason")
    func errors() {
        #expect(throws: ResamplerError.unsupportedRate(384_000)) {
            try Resampler(channels: 1, inputRate: 384_000, outputRate: 48_000)
        }
        #expect(throws: ResamplerError.unsupportedRate(0)) {
            try Resampler(channels: 1, inputRate: 48_000, outputRate: 0)
        }
        #expect(throws: ResamplerError.unsupportedChannels(0)) {
            try Resampler(channels: 0, inputRate: 48_000, outputRate: 44_100)
        }
        #expect(ResamplerError.unsupportedRate(384_000).description == "sample rate 384000 Hz is outside 1...192000 Hz")
    }

    @Test("converter names are the graph-file names, and libsamplerate's come first")
    func names() {
        #expect(ResamplerQuality.libsamplerate.map(\.rawValue) == ["sinc-best", "sinc-medium", "sinc-fastest", "zero-order-hold", "linear"])
        #expect(ResamplerQuality.soxr.map(\.rawValue) == ["soxr-vhq", "soxr-hq", "soxr-mq", "soxr-lq"])
        #expect(ResamplerQuality.speex.map(\.rawValue) == (0...10).map { "speex-\($0)" })
        #expect(ResamplerQuality.automatic(live: false) == .soxrHigh)
        #expect(ResamplerQuality.automatic(live: true) == .speex6)
        #expect(ResamplerQuality.automatic(live: true).isRealtimeSafe)
        #expect(ResamplerQuality.allCases.prefix(5).allSatisfy { $0.engine == .libsamplerate })
    }
}
