import Foundation
import SluiceAudio
import SluiceGraph
import SluiceNodes
import SluiceTestKit
import SluiceTestSupport
import Testing

/// The `meter` node against signals whose levels are known: a 997 Hz sine at −6 dBFS, a
/// quarter-rate sine whose samples miss its peaks, and the EBU Tech 3341 minimum
/// requirements' synthetic signals (1 kHz stereo sines at stated levels), read to the
/// tolerance that document gives (±0.1 LU).
@Suite struct MeterNodeTests {
    static let rate = 48_000

    /// Runs `seconds` of `signal(frame, channel)` through a prepared meter as the JACK cycle
    /// does (its frame kernel, 256 frames a period), taking readings every second as a
    /// served graph's control thread does; every reading.
    func measure(
        channels: Int, seconds: Double, meter: MeterNode = MeterNode(), signal: (Int, Int) -> Float
    ) throws -> [MeterReading] {
        try meter.prepare(PrepareContext(
            inputFormats: [.frames(rate: Self.rate, channels: channels)], outputFormats: [.frames(rate: Self.rate, channels: channels)],
            maximumUnits: 4096, blockFrames: 256))
        defer { meter.deactivate() }
        let kernel = try #require(meter.frameKernel)
        let total = Int(seconds * Double(Self.rate))
        var period = [Float](repeating: 0, count: 256 * channels)
        var readings: [MeterReading] = []
        var frame = 0
        while frame < total {
            let frames = min(256, total - frame)
            for index in 0..<frames {
                for channel in 0..<channels { period[index * channels + channel] = signal(frame + index, channel) }
            }
            let copy = period
            _ = period.withUnsafeMutableBufferPointer { kernel.function(kernel.context, $0.baseAddress!, $0.baseAddress!, frames * channels) }
            #expect(period == copy, "the meter changed the audio")
            frame += frames
            if frame % Self.rate < 256 { readings += meter.takeReadings() }
        }
        readings += meter.takeReadings()
        #expect(meter.droppedFrames == 0)
        return readings
    }

    static func sine(_ frequency: Double, dBFS: Double, phase: Double = 0) -> (Int, Int) -> Float {
        let amplitude = pow(10, dBFS / 20)
        return { frame, _ in Float(amplitude * sin(2 * .pi * frequency * Double(frame) / Double(rate) + phase)) }
    }

    static func dB(_ linear: Double) -> Double { 20 * log10(linear) }

    @Test("a 997 Hz sine at −6 dBFS reads −6.0 dB peak and −9.0 dB RMS on every channel, a reading every interval")
    func sineLevels() throws {
        let readings = try measure(channels: 2, seconds: 1, signal: Self.sine(997, dBFS: -6))
        #expect(readings.count == 10)
        #expect(readings.map(\.frame) == (1...10).map { $0 * 4_800 })
        for reading in readings {
            for channel in reading.channels {
                #expect(abs(Self.dB(channel.peak) - -6.0) <= 0.05, "peak \(Self.dB(channel.peak))")
                #expect(abs(Self.dB(channel.rms) - -9.0) <= 0.05, "rms \(Self.dB(channel.rms))")
                #expect(abs(Self.dB(try #require(channel.truePeak)) - -6.0) <= 0.05)
            }
        }
    }

    @Test("a sine at a quarter of the rate sampled 45° off its peaks: sample peak 3 dB under, true peak at the sine's")
    func truePeakBetweenSamples() throws {
        let readings = try measure(channels: 1, seconds: 0.5, signal: Self.sine(Double(Self.rate) / 4, dBFS: -6, phase: .pi / 4))
        let last = try #require(readings.last?.channels.first)
        #expect(abs(Self.dB(last.peak) - (-6 - 3.01)) <= 0.05, "sample peak \(Self.dB(last.peak))")
        #expect(abs(Self.dB(try #require(last.truePeak)) - -6.0) <= 0.2, "true peak \(Self.dB(last.truePeak ?? 0))")
    }

    /// EBU Tech 3341 (V4), table 1: stereo 1 kHz sines in segments of (dBFS, seconds); the
    /// expected integrated loudness, and whether momentary and short-term must read it too.
    static let tech3341: [(case: Int, segments: [(Double, Double)], integrated: Double, constant: Bool)] = [
        (1, [(-23, 20)], -23, true),
        (2, [(-33, 20)], -33, true),
        (3, [(-36, 10), (-23, 60), (-36, 10)], -23, false),
        (4, [(-72, 10), (-36, 10), (-23, 60), (-36, 10), (-72, 10)], -23, false),
        (5, [(-26, 20), (-20, 20.1), (-26, 20)], -23, false),
    ]

    @Test("EBU Tech 3341 cases 1–5: loudness within ±0.1 LU", arguments: tech3341.map(\.case))
    func tech3341Loudness(_ number: Int) throws {
        let test = try #require(Self.tech3341.first { $0.case == number })
        var bounds: [(end: Int, amplitude: Double)] = []
        var end = 0
        for (level, seconds) in test.segments {
            end += Int((seconds * Double(Self.rate)).rounded())
            bounds.append((end, pow(10, level / 20)))
        }
        let readings = try measure(channels: 2, seconds: Double(end) / Double(Self.rate), meter: MeterNode(interval: 1, truePeak: false)) { frame, _ in
            let amplitude = bounds.first { frame < $0.end }?.amplitude ?? 0
            return Float(amplitude * sin(2 * .pi * 1_000 * Double(frame) / Double(Self.rate)))
        }
        let last = try #require(readings.last)
        let integrated = try #require(last.integrated)
        #expect(abs(integrated - test.integrated) <= 0.1, "case \(number): integrated \(integrated)")
        if test.constant {
            #expect(abs(try #require(last.momentary) - test.integrated) <= 0.1)
            #expect(abs(try #require(last.shortTerm) - test.integrated) <= 0.1)
        }
    }

    @Test("silence reads no loudness and zero levels")
    func silence() throws {
        let readings = try measure(channels: 1, seconds: 0.5) { _, _ in 0 }
        let last = try #require(readings.last)
        #expect(last.momentary == nil && last.shortTerm == nil && last.integrated == nil)
        #expect(last.channels.first?.peak == 0 && last.channels.first?.rms == 0)
    }

    @Test("through the engine's own slot, with random splits: the audio passes untouched")
    func passesThrough() throws {
        let bench = try NodeTestBench(MeterNode(), inputs: [.frames(rate: Self.rate, channels: 2)])
        let input = Signals.noise(count: 2 * 9_001, amplitude: 0.7, seed: 5)
        bench.feed(input, markers: [Marker(position: 9_001, event: .endOfStream)])
        bench.run()
        #expect(bench.violations.isEmpty)
        #expect(bench.output() == input)
        #expect((bench.node as? MeterNode)?.takeReadings().count == 1)
    }

    @Test("the cycle's part allocates nothing: periods through the frame kernel, readings posted")
    func kernelAllocatesNothing() throws {
        let meter = MeterNode(interval: 0.01)
        try meter.prepare(PrepareContext(
            inputFormats: [.frames(rate: Self.rate, channels: 2)], outputFormats: [.frames(rate: Self.rate, channels: 2)],
            maximumUnits: 4096, blockFrames: 256))
        defer { meter.deactivate() }
        let kernel = try #require(meter.frameKernel)
        var period = Signals.noise(count: 2 * 256, amplitude: 0.5, seed: 9)
        func run(_ periods: Int) {
            for _ in 0..<periods {
                _ = period.withUnsafeMutableBufferPointer { kernel.function(kernel.context, $0.baseAddress!, $0.baseAddress!, 2 * 256) }
            }
        }
        run(4)  // a window posted once before counting: the first use of a generic path may set it up
        let allocations = AllocationCounter.count { run(40) }  // about 21 windows of 480 frames
        if AllocationCounter.testsEnabled { #expect(allocations == 0) }
        #expect(meter.takeReadings().count >= 20)
    }
}
