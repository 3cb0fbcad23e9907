/// Decides each playhead's watermark from the playback strategy, and for `auto` from the
/// source's measured production rate. Runs off the real-time thread (the driver's or the
/// run's control loop); the playhead reads the watermark from an atomic.
///
/// The `auto` rule: a source producing `r` seconds of audio per second (measured from its
/// first output, once it has produced at least `measureSeconds` of audio: time before that —
/// a speech source waiting for text — says nothing of its speed) and a stream
/// expected to hold `L` more seconds will not run dry if playback starts with
/// `W = L·(1 − r)` seconds buffered: by the time the last frame must play, the source has
/// produced it. Sluice adds one period as margin, clamps to [one period, max-buffered], and
/// re-estimates `W` with the latest `r` and the remaining length whenever the playhead is
/// buffering (before the start and after an underrun). An unknown length counts as longer
/// than the sink can hold, so `W` becomes max-buffered when `r < 1`.
struct FlowController {
    let strategy: PlaybackStrategy
    let rate: Int
    let periodFrames: Int
    let watermarkSeconds: Double
    let capacityFrames: Int
    /// Audio a measurement needs before `auto` trusts it.
    static let measureSeconds = 0.25

    /// The watermark a playhead starts with.
    var initialWatermark: Int {
        switch strategy {
        case .stream: periodFrames
        case .buffered: max(periodFrames, framesCeil(watermarkSeconds))
        case .generateFirst, .auto: Int.max
        }
    }

    /// The `auto` watermark now, or nil while the measurement is not ready.
    ///
    /// - Parameters:
    ///   - producedSeconds: audio the primary source has produced.
    ///   - sourceFinished: whether it has produced everything.
    ///   - elapsed: graph-clock seconds since the run started.
    ///   - expectedDuration: the stream's length in seconds, when known.
    ///   - playedSeconds: audio already played.
    func autoWatermark(
        producedSeconds: Double, sourceFinished: Bool, elapsed: Double,
        expectedDuration: Double?, playedSeconds: Double
    ) -> Int? {
        if sourceFinished { return periodFrames }
        let window = min(Self.measureSeconds, expectedDuration ?? Self.measureSeconds)
        guard producedSeconds >= window, producedSeconds > 0 else { return nil }
        let productionRate = elapsed > 0 ? producedSeconds / elapsed : .infinity
        guard productionRate < 1 else { return periodFrames }
        let seconds: Double
        if let expectedDuration {
            seconds = max(0, expectedDuration - playedSeconds) * (1 - productionRate)
        } else {
            seconds = Double(capacityFrames) / Double(rate)
        }
        let frames = framesCeil(seconds) + periodFrames
        return min(max(frames, periodFrames), capacityFrames)
    }

    private func framesCeil(_ seconds: Double) -> Int {
        Int((seconds * Double(rate)).rounded(.up))
    }
}
