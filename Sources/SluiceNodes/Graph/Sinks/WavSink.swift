import SluiceAudio
import SluiceGraph

/// The `wav.sink` node: writes what the graph plays to a sound file — WAV (32-bit float by
/// default, so nothing is lost) or FLAC (24-bit by default; FLAC cannot store floats).
///
/// The file is created in `prepare`, when the rate and channel count are known, so an
/// unwritable path fails before anything runs; audio is appended by `write` and the file is
/// finished (header sizes, FLAC's last block) by `finish`. In live runs a `ClockThread` in
/// `.free` pace pulls from the playhead and calls `write`: the file gets every played frame and
/// no silence before the start, as fast as the graph produces.
public final class WavSink: SinkNode {
    public static let type = NodeType(
        NodeDescriptor(
            typeName: "wav.sink", kind: .sink,
            summary: "Writes what plays to a WAV (32-bit float) or FLAC (24-bit) file.",
            inputs: [PortDescriptor("in", .frames, summary: "Float32 frames")],
            parameters: [
                ParameterDescriptor(
                    "path", .path, default: nil, required: true,
                    summary: "The file to write; relative paths start at the graph file's folder."),
                ParameterDescriptor(
                    "format", .choice(["auto", "wav", "flac"]), default: .string("auto"),
                    summary: "Container; auto is FLAC for paths ending in .flac, WAV for .wav or no extension (any other is refused)."),
                ParameterDescriptor(
                    "sample-format", .choice(["auto", "f32", "s16", "s24", "s32"]), default: .string("auto"),
                    summary: "How samples are stored; auto is f32 for WAV and s24 for FLAC (which cannot store floats)."),
                ParameterDescriptor(
                    "rate", .rate(1_000...384_000), default: .auto, unit: "Hz",
                    summary: "The file's rate; auto takes the input's. A set rate is what auto rates upstream follow."),
                ParameterDescriptor(
                    "channels", .integer(1...64), default: nil,
                    summary: "Channels the input must have; absent takes the input's."),
                ParameterDescriptor("title", .string, default: nil, summary: "Title stored in the file."),
                ParameterDescriptor("artist", .string, default: nil, summary: "Artist stored in the file."),
            ])
    ) { parameters in
        guard let path = parameters.path("path") else {
            throw NodeCreationError("'wav.sink' needs a path", parameter: "path")
        }
        let container: SoundFileContainer
        switch parameters.string("format") {
        case "wav": container = .wav
        case "flac": container = .flac
        default:
            guard let named = SoundFileContainer(forPath: path) else {
                throw NodeCreationError(
                    SoundFileContainer.refusal(for: path),
                    fix: "name the file .wav or .flac, or set `format: wav` or `format: flac`", parameter: "path")
            }
            container = named
        }
        let sampleFormat: SampleFormat =
            switch parameters.string("sample-format") {
            case "f32": .f32le
            case "s16": .s16le
            case "s24": .s24le
            case "s32": .s32le
            default: container == .flac ? .s24le : .f32le
            }
        guard container.canStore(sampleFormat) else {
            throw NodeCreationError(
                "FLAC cannot store \(sampleFormat) samples", fix: "use sample-format s16 or s24, or write WAV",
                parameter: "sample-format")
        }
        var strings: [SoundFileString: String] = [:]
        strings[.title] = parameters.string("title")
        strings[.artist] = parameters.string("artist")
        return WavSink(
            path: path, container: container, sampleFormat: sampleFormat, rate: parameters.rate("rate"),
            channels: SinkFormats.channels(parameters), strings: strings)
    }

    public let path: String
    public let container: SoundFileContainer
    public let sampleFormat: SampleFormat
    /// The rate asked for, or nil for `auto`.
    public let rate: Int?
    /// The channel count asked for, or nil to take the input's.
    public let channels: Int?
    public let strings: [SoundFileString: String]

    private var writer: SoundFileWriter?
    private var inputChannels = 1
    private var periodFrames = 1_024
    private var clock: ClockThread?
    /// What the clock thread's `write` threw, kept for `finish` (`stop` cannot throw).
    private var clockFailure: (any Error)?

    public init(
        path: String, container: SoundFileContainer? = nil, sampleFormat: SampleFormat? = nil, rate: Int? = nil,
        channels: Int? = nil, strings: [SoundFileString: String] = [:]
    ) {
        // A name Sluice does not write (`.mp3`) is refused by the node type's factory; made in
        // code, it is written as WAV.
        let container = container ?? SoundFileContainer(forPath: path) ?? .wav
        self.path = path
        self.container = container
        self.sampleFormat = sampleFormat ?? (container == .flac ? .s24le : .f32le)
        self.rate = rate
        self.channels = channels
        self.strings = strings
    }

    public var decidedRate: Int? { rate }

    public func outputFormats(for inputs: [StreamFormat], context: FormatContext) throws(FormatMismatch) -> [StreamFormat] {
        _ = try SinkFormats.check(inputs, rate: rate, channels: channels)
        return []
    }

    /// Creates the file. Throws a `SoundFileError` naming the path when it cannot.
    public func prepare(_ context: PrepareContext) throws {
        guard let input = context.inputFormats.first, case .frames(let inputRate, let channels) = input else {
            throw SinkFormats.unprepared(Self.type.descriptor.typeName, context.inputFormats)
        }
        inputChannels = channels
        periodFrames = max(1, context.blockFrames)
        clockFailure = nil
        try writer?.close()
        writer = try SoundFileWriter(
            path: path, sampleRate: inputRate, channels: channels, sampleFormat: sampleFormat,
            container: container, strings: strings)
    }

    public func start(_ playhead: Playhead) throws {
        precondition(clock == nil, "a wav.sink starts once")
        // SAFETY: unowned: the clock thread ends before `stop` returns, so it never outlives `self`.
        let clock = ClockThread(playhead: playhead, periodFrames: periodFrames, pace: .free) { [unowned self] samples in
            try self.write(samples)
        }
        self.clock = clock
        clock.start()
    }

    public func stop() {
        do {
            try clock?.stop()
        } catch {
            clockFailure = error
        }
        clock = nil
    }

    public func write(_ samples: UnsafeBufferPointer<Float>) throws {
        guard let writer else { throw SoundFileError("cannot write '\(path)': the file is not open") }
        guard let base = samples.baseAddress, samples.count >= inputChannels else { return }
        // SAFETY: whole frames only: `count / channels` frames lie within `samples`.
        try writer.write(base, frames: samples.count / inputChannels)
    }

    /// Finishes and closes the file; rethrows what a live run's writes threw.
    public func finish() throws {
        let writer = self.writer
        self.writer = nil
        if let failure = clockFailure {
            clockFailure = nil
            try? writer?.close()
            throw failure
        }
        try writer?.close()
    }

    /// Closes a file a run left unfinished (it holds what was written).
    public func deactivate() {
        try? writer?.close()
        writer = nil
    }
}
