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

/// What plays a compiled speech graph: a live run into JACK, or an offline render into a
/// file. The controller starts it, follows it on its own thread with `wait`, and may cancel it
/// from any thread.
protocol SpeechPlayback: AnyObject, Sendable {
    /// The first sink's rate.
    var sampleRate: Int { get }
    /// [control-thread] Sets the observers: each drain event of the first sink, and every few
    /// milliseconds a look at the buffers. Both are called on the thread in `wait`.
    func observe(events: @escaping (DrainEvent) -> Void, ticks: @escaping (PlaybackObservation) -> Void)
    /// [control-thread] Starts playing (opens the device or the file).
    func start() throws(SpeechError)
    /// Plays to the end (or the cancel) and returns the run's report.
    func wait() throws -> RunReport
    /// [any-thread] Fades out and ends the run.
    func cancel()
    /// [any-thread] Monotonic wall seconds when the first sample left the device callback (live only).
    var firstAudioWallTime: Double? { get }
}

/// Into JACK: a `LiveRun`.
final class LivePlayback: SpeechPlayback, @unchecked Sendable {
    // SAFETY (@unchecked Sendable): `run` is thread-safe for `cancel` and `playheads`; the
    // observers are set before `start` and only called on the thread in `wait`.
    private let run: LiveRun
    let sampleRate: Int

    init(graph: CompiledGraph) throws(SpeechError) {
        do {
            run = try LiveRun(graph: graph)
        } catch {
            throw .graph("\(error)")
        }
        sampleRate = run.playheads.first?.sampleRate ?? 48_000
    }

    func observe(events: @escaping (DrainEvent) -> Void, ticks: @escaping (PlaybackObservation) -> Void) {
        run.eventObserver = events
        run.tickObserver = { [unowned run] in
            let status = run.status
            let rate = Double(run.playheads.first?.sampleRate ?? 48_000)
            ticks(PlaybackObservation(
                scheduledFrames: Int((status.scheduledSeconds * rate).rounded()),
                playedFrames: run.playheads.first?.playedFrames ?? 0,
                secondsToBuffer: status.secondsToBuffer))
        }
    }

    func start() throws(SpeechError) {
        do {
            try run.start()
        } catch {
            throw .jack(message: "\(error)", result: nil)
        }
    }

    func wait() throws -> RunReport { try run.wait() }
    func cancel() { run.cancel() }
    var firstAudioWallTime: Double? { run.playheads.first?.firstAudioWallTime }
}

/// Into a sound file: an `OfflineRenderer` writing the first sink's audio.
final class FilePlayback: SpeechPlayback, @unchecked Sendable {
    // SAFETY (@unchecked Sendable): `renderer.cancel` is thread-safe; `file` and the
    // observers are touched by `start` before `wait`, then only on the thread in `wait`.
    private let renderer: OfflineRenderer
    private let path: String
    private let channels: Int
    let sampleRate: Int
    private var file: SoundFileWriter?

    init(graph: CompiledGraph, path: String) throws(SpeechError) {
        guard case .frames(let rate, let channels)? = graph.sinks.first?.inputFormats.first else {
            throw .graph("graph '\(graph.description.name)' has no sink to render")
        }
        do {
            renderer = try OfflineRenderer(graph: graph)
        } catch {
            throw .graph("\(error)")
        }
        self.path = path
        self.channels = channels
        sampleRate = rate
    }

    func observe(events: @escaping (DrainEvent) -> Void, ticks: @escaping (PlaybackObservation) -> Void) {
        renderer.eventObserver = events
        renderer.observer = { tick in
            ticks(PlaybackObservation(
                scheduledFrames: tick.scheduledFrames, playedFrames: tick.playedFrames,
                secondsToBuffer: tick.state == .buffering ? nil : 0))
        }
    }

    func start() throws(SpeechError) {
        do {
            let flac = path.lowercased().hasSuffix(".flac")
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

    func wait() throws -> RunReport {
        defer { file = nil }
        return try renderer.run()
    }

    func cancel() { renderer.cancel() }
    var firstAudioWallTime: Double? { nil }
}
