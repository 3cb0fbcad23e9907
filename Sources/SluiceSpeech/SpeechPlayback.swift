import SluiceAudio
import SluiceGraph
import SluiceJACK
import SluiceNodes

/// Where playback stands, as the controller's progress and state read it.
struct PlaybackObservation {
    var scheduledFrames: Int
    var playedFrames: Int
    var secondsToBuffer: Double?
}

/// What plays a compiled speech graph: the graph's `GraphDriver` — a `LiveRun` into JACK, or
/// an `OfflineRenderer` into a file — and, for a file, the writer its first sink's audio goes
/// to. The controller starts it, follows it on its own thread with `wait`, and may cancel it
/// from any thread; both drivers report drain events and status the same way.
final class SpeechPlayback: @unchecked Sendable {
    // SAFETY (@unchecked Sendable): the driver is thread-safe for `cancel`; `file` and the
    // observers are set by `start` before `wait`, then only touched on the thread in `wait`.
    private let driver: any GraphDriver
    private let isLive: Bool
    private let path: String?
    private let channels: Int
    /// The first sink's rate.
    let sampleRate: Int
    private var file: SoundFileWriter?

    /// Into JACK: a `LiveRun`.
    static func live(graph: CompiledGraph) throws(SpeechError) -> SpeechPlayback {
        do {
            let run = try LiveRun(graph: graph)
            return SpeechPlayback(driver: run, isLive: true, path: nil, channels: 0, sampleRate: run.primaryPlayhead?.sampleRate ?? 48_000)
        } catch {
            throw .graph("\(error)")
        }
    }

    /// Into a sound file: an `OfflineRenderer` writing the first sink's audio.
    static func file(graph: CompiledGraph, path: String) throws(SpeechError) -> SpeechPlayback {
        guard case .frames(let rate, let channels)? = graph.sinks.first?.inputFormats.first else {
            throw .graph("graph '\(graph.description.name)' has no sink to render")
        }
        do {
            return SpeechPlayback(driver: try OfflineRenderer(graph: graph), isLive: false, path: path, channels: channels, sampleRate: rate)
        } catch {
            throw .graph("\(error)")
        }
    }

    private init(driver: any GraphDriver, isLive: Bool, path: String?, channels: Int, sampleRate: Int) {
        self.driver = driver
        self.isLive = isLive
        self.path = path
        self.channels = channels
        self.sampleRate = sampleRate
    }

    /// [control-thread] Sets the observers: each drain event of the first sink, and every few
    /// milliseconds (each period offline) a look at the buffers. Both are called on the thread
    /// in `wait`.
    func observe(events: @escaping (DrainEvent) -> Void, ticks: @escaping (PlaybackObservation) -> Void) {
        driver.eventObserver = events
        let rate = Double(sampleRate)
        driver.statusObserver = { [unowned driver] status in
            ticks(PlaybackObservation(
                scheduledFrames: Int((status.scheduledSeconds * rate).rounded()),
                playedFrames: driver.primaryPlayhead?.playedFrames ?? 0,
                secondsToBuffer: status.secondsToBuffer))
        }
    }

    /// [control-thread] Asks the driver for the run's timeline in its report. Before `start`.
    func recordTimeline() {
        driver.recordsTimeline = true
    }

    /// [control-thread] Starts playing: opens the device, or the file.
    func start() throws(SpeechError) {
        if let path, let renderer = driver as? OfflineRenderer {
            do {
                let flac = SoundFileContainer(forPath: path) == .flac
                file = try SoundFileWriter(path: path, sampleRate: sampleRate, channels: channels, sampleFormat: flac ? .s24le : .f32le)
            } catch {
                throw .output("\(error)")
            }
            let channels = channels
            renderer.output = { [unowned self] index, samples in
                guard index == 0, let file else { return }
                try file.write(samples.baseAddress!, frames: samples.count / channels)
            }
        }
        do {
            try driver.start()
        } catch {
            throw isLive ? .jack(message: "\(error)", result: nil) : .graph("\(error)")
        }
    }

    /// Plays to the end (or the cancel) and returns the run's report.
    func wait() throws -> RunReport {
        defer { file = nil }
        return try driver.wait()
    }

    /// [any-thread] Fades out and ends the run.
    func cancel() { driver.cancel() }

    /// [any-thread] Monotonic wall seconds when the first sample left the device callback (live
    /// only: offline, wall time says nothing of the render).
    var firstAudioWallTime: Double? { isLive ? driver.primaryPlayhead?.firstAudioWallTime : nil }
}
