import CEbur128
import SluiceGraph
import SluiceRT
import Synchronization

/// One channel's measures over one window, as the cycle posts them.
struct MeterWindow: BitwiseCopyable {
    /// The frame (counted since the stream began) where the window ends.
    var frame: Int
    var peak: Float
    var meanSquare: Float
}

/// The `meter` node's measuring, in two halves. On the audio thread, `measure` keeps each
/// channel's peak and sum of squares, posts them at the end of every window through a
/// lock-free ring, and passes the samples on through another; on the control thread,
/// `readings` runs libebur128 over those samples (loudness, true peak) and pairs the result
/// with the windows. So the cycle pays a comparison and a multiply-add a sample and a copy;
/// the filters, the 4× oversampling and the 3-second sums run where time is not counted.
///
/// When the control thread falls behind by more than `backlogSeconds` of samples, the cycle
/// drops what does not fit (whole frames, counted in `droppedFrames`): loudness then misses
/// them, peak and RMS do not.
final class LevelMeter: @unchecked Sendable {
    // SAFETY (@unchecked Sendable): the audio-thread fields are touched only by `measure`,
    // the control-thread fields only by `readings`; the rings between them are SPSC.

    let channels: Int
    let rate: Int
    let windowFrames: Int
    let measuresLoudness: Bool
    let measuresTruePeak: Bool
    static let backlogSeconds = 2

    // Audio thread.
    private var windowsOut: RingProducer<MeterWindow>
    private var samplesOut: RingProducer<Float>
    private let peaks: UnsafeMutableBufferPointer<Float>
    private let squares: UnsafeMutableBufferPointer<Float>
    private var framesInWindow = 0
    private var framesMeasured = 0
    private let dropped = Atomic<Int>(0)

    // Control thread.
    private var windowsIn: RingConsumer<MeterWindow>
    private var samplesIn: RingConsumer<Float>
    private var analyser: UnsafeMutablePointer<ebur128_state>?
    private var analysedFrames = 0
    private var windowTruePeaks: [Double]
    private var scratch: [Float]
    private static let scratchFrames = 4096

    /// Frames the cycle could not pass on for loudness (the control thread fell behind).
    var droppedFrames: Int { dropped.load(ordering: .relaxed) }

    /// [control-thread] Allocates the rings and, when measuring loudness or true peak, the
    /// analyser. Throws when libebur128 refuses the format.
    init(channels: Int, rate: Int, windowFrames: Int, loudness: Bool, truePeak: Bool) throws {
        self.channels = channels
        self.rate = rate
        self.windowFrames = max(1, windowFrames)
        measuresLoudness = loudness
        measuresTruePeak = truePeak
        // Two seconds of windows, and of samples when they are analysed.
        let windowRing = makeRing(of: MeterWindow.self, capacity: channels * max(4, 2 * rate / self.windowFrames + 2))
        windowsOut = windowRing.producer
        windowsIn = windowRing.consumer
        let analyses = loudness || truePeak
        let sampleRing = makeRing(of: Float.self, capacity: analyses ? channels * rate * Self.backlogSeconds : 0)
        samplesOut = sampleRing.producer
        samplesIn = sampleRing.consumer
        peaks = .allocate(capacity: channels)
        peaks.initialize(repeating: 0)
        squares = .allocate(capacity: channels)
        squares.initialize(repeating: 0)
        windowTruePeaks = Array(repeating: 0, count: channels)
        scratch = Array(repeating: 0, count: analyses ? channels * Self.scratchFrames : 0)
        if analyses {
            // The histogram keeps the gated loudness in fixed memory (no block list to grow).
            var mode = Int32(EBUR128_MODE_HISTOGRAM.rawValue)
            if loudness { mode |= Int32(EBUR128_MODE_S.rawValue) | Int32(EBUR128_MODE_I.rawValue) }
            if truePeak { mode |= Int32(EBUR128_MODE_TRUE_PEAK.rawValue) }
            guard let state = ebur128_init(UInt32(channels), UInt(rate), mode) else {
                peaks.deallocate()
                squares.deallocate()
                throw NodeCreationError("the loudness meter (libebur128) cannot measure \(channels) channels at \(rate) Hz")
            }
            analyser = state
        }
    }

    deinit {
        peaks.deallocate()
        squares.deallocate()
        if analyser != nil { ebur128_destroy(&analyser) }
    }

    // MARK: Audio thread

    /// [audio-thread] Measures `frames` interleaved frames.
    func measure(_ samples: UnsafePointer<Float>, frames: Int) {
        if measuresLoudness || measuresTruePeak { passOn(samples, frames: frames) }
        var start = 0
        while start < frames {
            let count = min(frames - start, windowFrames - framesInWindow)
            for channel in 0..<channels {
                var peak = peaks[channel]
                var square = squares[channel]
                var sample = samples + start * channels + channel
                for _ in 0..<count {
                    let value = sample.pointee
                    peak = max(peak, abs(value))
                    square += value * value
                    sample += channels
                }
                peaks[channel] = peak
                squares[channel] = square
            }
            start += count
            framesInWindow += count
            framesMeasured += count
            if framesInWindow == windowFrames { post() }
        }
    }

    private func passOn(_ samples: UnsafePointer<Float>, frames: Int) {
        let room = samplesOut.availableSlots() / channels
        let passed = min(room, frames)
        if passed > 0 {
            _ = samplesOut.push(contentsOf: UnsafeBufferPointer(start: samples, count: passed * channels))
        }
        if passed < frames { dropped.add(frames - passed, ordering: .relaxed) }
    }

    /// Posts the window's measures (all channels, or none when the ring is full) and starts
    /// the next.
    private func post() {
        if windowsOut.availableSlots() >= channels {
            for channel in 0..<channels {
                _ = windowsOut.push(MeterWindow(
                    frame: framesMeasured, peak: peaks[channel], meanSquare: squares[channel] / Float(framesInWindow)))
            }
        }
        peaks.update(repeating: 0)
        squares.update(repeating: 0)
        framesInWindow = 0
    }

    /// [control-thread, between runs] Forgets the stream.
    func reset() {
        framesInWindow = 0
        framesMeasured = 0
        peaks.update(repeating: 0)
        squares.update(repeating: 0)
    }

    // MARK: Control thread

    /// [control-thread] Every window the cycle completed since the last call.
    func readings() -> [MeterReading] {
        var readings: [MeterReading] = []
        var windows: [MeterWindow] = []
        while windowsIn.availableElements() >= channels {
            windows.removeAll(keepingCapacity: true)
            for _ in 0..<channels { if let window = windowsIn.pop() { windows.append(window) } }
            guard let end = windows.first?.frame else { break }
            analyse(through: end)
            var reading = MeterReading(
                frame: end,
                channels: windows.enumerated().map { channel, window in
                    MeterReading.ChannelLevels(
                        peak: Double(window.peak), rms: Double(window.meanSquare).squareRoot(),
                        truePeak: measuresTruePeak ? windowTruePeaks[channel] : nil)
                })
            if measuresLoudness, let analyser {
                reading.momentary = Self.loudness { ebur128_loudness_momentary(analyser, $0) }
                reading.shortTerm = Self.loudness { ebur128_loudness_shortterm(analyser, $0) }
                reading.integrated = Self.loudness { ebur128_loudness_global(analyser, $0) }
            }
            windowTruePeaks = Array(repeating: 0, count: channels)
            readings.append(reading)
        }
        return readings
    }

    /// Feeds the analyser the samples of frames up to `end` that the cycle passed on.
    private func analyse(through end: Int) {
        guard let analyser else { return }
        while analysedFrames < end, samplesIn.availableElements() >= channels {
            // Whole frames through a scratch buffer: a frame may straddle the ring's end.
            let wanted = min(end - analysedFrames, samplesIn.availableElements() / channels, Self.scratchFrames)
            let frames = scratch.withUnsafeMutableBufferPointer { buffer in
                samplesIn.pop(into: UnsafeMutableBufferPointer(rebasing: buffer[..<(wanted * channels)])) / channels
            }
            guard frames > 0 else { break }
            scratch.withUnsafeBufferPointer { _ = ebur128_add_frames_float(analyser, $0.baseAddress!, frames) }
            analysedFrames += frames
            if measuresTruePeak {
                for channel in 0..<channels {
                    var peak = 0.0
                    if ebur128_prev_true_peak(analyser, UInt32(channel), &peak) == 0 {
                        windowTruePeaks[channel] = max(windowTruePeaks[channel], peak)
                    }
                }
            }
        }
        // What the cycle dropped is not in the ring: the frames it counts stand in for them.
        analysedFrames = max(analysedFrames, end)
    }

    /// A loudness from libebur128, nil for silence (−∞) or an error.
    private static func loudness(_ read: (UnsafeMutablePointer<Double>) -> Int32) -> Double? {
        var value = 0.0
        guard read(&value) == 0, value.isFinite else { return nil }
        return value
    }
}
