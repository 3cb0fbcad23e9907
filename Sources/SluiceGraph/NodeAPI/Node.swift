import SluiceAudio

// Thread tags, one vocabulary for the Swift modules, the C plugin headers (common.h defines
// the same words) and the plugins, as the CLAP headers tag theirs:
//   [control-thread]       builds, starts and stops the graph; may allocate, block, do I/O
//   [audio-thread]         runs processors' process/receive/drain and the sinks' playheads:
//                          the JACK process callback for nodes in the cycle, the graph's
//                          worker for nodes before the boundary, the offline driver's thread
//                          offline. Real-time rules on all three (docs/realtime-rules.md)
//   [source-thread]        a source's own thread (or the offline driver's); may block on I/O
//   [notification-thread]  JACK's non-real-time callbacks (xrun, shutdown, latency, ports)
//   [any-thread]           any thread, concurrently with the others: atomics only
// `GraphThreadCheck` asserts the real-time ones in debug builds.

/// A node in a graph. Implement `ProcessorNode`, `SourceNode` or `SinkNode`; this protocol
/// holds what they share.
///
/// Lifecycle: created by its `NodeType`'s factory from checked parameters → formats decided
/// (`outputFormats`) → `prepare` (the only place that allocates) → `process`/`receive` many
/// times → `reset` (optional, back to a fresh stream) → `deactivate`.
public protocol Node: AnyObject {
    /// [control-thread] The format leaving each output, given the format arriving on each input.
    /// Throw a `FormatMismatch` naming the input and what it needed; the graph names the link
    /// and the node to insert.
    func outputFormats(
        for inputs: [StreamFormat], context: FormatContext
    ) throws(FormatMismatch) -> [StreamFormat]

    /// [control-thread] Allocates everything processing needs. Called once formats are known.
    func prepare(_ context: PrepareContext) throws

    /// [audio-thread] Takes a marker its input `port` has reached, acts on it, and emits it (or what
    /// it becomes) restamped to its own output positions with `io.emit`.
    func receive(_ marker: Marker, on port: Int, _ io: inout ProcessIO)

    /// [control-thread] Forgets the stream: held audio, counters, positions. Formats stay.
    func reset()

    /// [control-thread] Releases what `prepare` allocated.
    func deactivate()

    /// [control-thread] Adds the node's counters to a run's report (dropped partial frames, …).
    func report(into report: inout NodeReport)

    /// [control-thread] Frames, at the node's output rate, by which its output lags its input once
    /// prepared: what it holds back to look ahead (the fader's fade length, the crossfader's
    /// tail, a resampler's filter and staging). The runtime adds these along each path through
    /// the JACK cycle, for the latency it reports to JACK and for the silence a sink fed in
    /// the cycle plays before the delayed audio arrives. 0 by default.
    var latencyFrames: Int { get }

    /// [control-thread] What the node decided from its parameters and formats when the graph
    /// was compiled, in a few words for `sluice check --verbose` (a resampler's converter);
    /// nil by default.
    var compiledChoice: String? { get }
}

extension Node {
    /// By default a marker passes to every output at the same position: right for nodes
    /// whose output positions equal their input positions.
    public func receive(_ marker: Marker, on port: Int, _ io: inout ProcessIO) {
        for output in 0..<io.outputCount { io.emit(marker, on: output) }
    }
    public func prepare(_ context: PrepareContext) throws {}
    public func reset() {}
    public func deactivate() {}
    public func report(into report: inout NodeReport) {}
    public var latencyFrames: Int { 0 }
    public var compiledChoice: String? { nil }
}

/// A node that moves audio from inputs to outputs on the graph worker thread.
public protocol ProcessorNode: Node {
    /// [audio-thread] Moves as much audio as the views in `io` allow: read inputs, write outputs,
    /// then `io.consume` and `io.produce` what was used. Input left unconsumed is offered
    /// again. Called with empty inputs too, so a node can release what it holds (a
    /// resampler's tail after the end of the stream). Never allocates, locks or blocks.
    func process(_ io: inout ProcessIO)

    /// [audio-thread] The sink has run dry and nothing is waiting upstream: release audio held
    /// back waiting for more input (the crossfader's tail, the fader's look-ahead — which it
    /// fades out), so what was received plays. The default does nothing.
    func drain(_ io: inout ProcessIO)
    /// [control-thread] Whether, once prepared, the node works frame for frame: every `process`
    /// given the same number of frames on every input and as much room on every output
    /// consumes all of them and produces exactly as many, holds nothing back, emits no marker
    /// of its own and declares no `latencyFrames` — as a JACK client's callback or an LV2
    /// plugin's `run(n)` does. In the JACK cycle such nodes between `jack.source` and
    /// `jack.sink` run straight on the period's buffers, with no ring between them
    /// (docs/architecture.md, "Frame for frame"). False by default.
    var processesFrameForFrame: Bool { get }

    /// [control-thread] For a frame-for-frame node of one input and one output: its usual
    /// period as one plain function over the period's samples (`FrameKernel`), which the JACK
    /// cycle's direct section calls in place of `process` — no views, no `ProcessIO`, no
    /// marker bookkeeping. Asked once the node is prepared; nil (the default) keeps `process`.
    var frameKernel: FrameKernel? { get }
}

extension ProcessorNode {
    public func drain(_ io: inout ProcessIO) {}
    public var processesFrameForFrame: Bool { false }
    public var frameKernel: FrameKernel? { nil }
}

/// A frame-for-frame node's usual period as a C-style function and its context, as a CLAP or
/// LV2 host calls a plugin's `process`: `function(context, input, output, samples)` makes
/// `samples` samples (frames × channels, interleaved) of output from as many of input — the
/// two may be the same buffer — and returns true; or it changes nothing and returns false, to
/// have the period go through `process` (a node not prepared, anything rare under way).
///
/// Why a function pointer rather than a protocol method: the JACK callback finds its code and
/// data cold each period and pays for every line it touches (CHANGELOG.md, Earlier
/// measurements, "jack: Fewer lines a period"); `process`'s views, `ProcessIO` and marker bookkeeping are lines a node that
/// multiplies or copies a buffer does not need.
///
/// Threading: `function` is [audio-thread] — it allocates nothing, takes no lock, does no
/// I/O — and runs where `process` would, never at the same time. `context` must stay valid
/// while the node is prepared (the node itself, unretained, is the usual choice).
public struct FrameKernel {
    public typealias Function = @convention(c) (
        _ context: UnsafeMutableRawPointer, _ input: UnsafePointer<Float>, _ output: UnsafeMutablePointer<Float>,
        _ samples: Int
    ) -> Bool

    public let context: UnsafeMutableRawPointer
    public let function: Function

    public init(context: UnsafeMutableRawPointer, function: Function) {
        self.context = context
        self.function = function
    }
}

/// A node that produces audio on its own thread: a provider, a file, a test signal.
public protocol SourceNode: Node {
    /// [source-thread] Writes into output 0 what is ready, up to the room `io` offers. May block on
    /// I/O, but must return soon after `cancel()`.
    ///
    /// - Parameter time: seconds on the graph's clock (the sink's device time; virtual time
    ///   offline). A source that paces itself returns `.waiting(until:)`.
    func produce(_ io: inout ProcessIO, at time: Double) -> SourceStatus

    /// [any-thread] Asks a blocked or future `produce` to return `.finished` soon.
    func cancel()

    /// [control-thread] Seconds of audio the whole stream will hold, when the source knows (a file, a
    /// tone's duration); the `auto` playback strategy sizes its watermark from it.
    var expectedDuration: Double? { get }
}

extension SourceNode {
    public var expectedDuration: Double? { nil }
}

/// What a source's `produce` reports.
public enum SourceStatus: Sendable {
    /// Call again (when the output has room).
    case more
    /// Nothing more until the graph clock reaches this time, in seconds.
    case waiting(until: Double)
    /// The stream is complete; the graph appends the end-of-stream marker.
    case finished
    /// The source failed. What it produced still plays out, faded; the run reports this.
    case failed(SourceFailure)
}

/// A source's failure, typed by the source (a provider's HTTP status, a file error) and told
/// in a sentence.
public struct SourceFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, machine-readable name ("file-unreadable", "http-401").
    public var code: String
    public var message: String

    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}

/// A source fed with text: `--text`, `--text-file` and standard input go to these.
public protocol TextDrivenSource: SourceNode {
    /// [control-thread] Queues a piece of text (a token, a sentence). Thread-safe against `produce`.
    func receive(text: String)
    /// [control-thread] Queues one utterance whose text starts at UTF-8 byte `offset` of the whole
    /// text the stream speaks, so the `textSpan` markers the source emits locate it in that
    /// text (a speech controller maps what was heard back to it). Defaults to
    /// `receive(text:)`, for sources that emit no spans.
    func receive(text: String, at offset: Int)
    /// [control-thread] No more text will come; the source finishes once it has spoken the rest.
    func finishText()
    /// [control-thread] Barge-in: drops the text not yet spoken and stops the utterance under
    /// way, and is ready for more text at once. Returns the id of the first utterance that
    /// will follow (every marker before its start belongs to the dropped text), or nil when
    /// the source cannot (the default).
    func interrupt() -> UtteranceID?
    /// [control-thread] An `interrupt` that also changes the source's parameters (checked by the
    /// caller against its descriptor) for the text that follows: a voice, a rate. Nil when
    /// the source cannot, or the values would change its output format.
    func interrupt(changing parameters: [String: ParameterValue]) -> UtteranceID?
    /// [source-thread] Whether every utterance received so far has been spoken to its end and no
    /// more text waits: the stream pauses here until more text comes, and a live run's source
    /// thread sleeps until `onTextArrival`'s wake (so a source that says true here calls it
    /// on new text, on the end of the text and on an interrupt). False by default.
    var hasSpokenAllText: Bool { get }
    /// [any-thread] Whether the source marks where each word's audio begins (`word` markers),
    /// so what was heard is known to the word. False by default.
    var reportsWordTiming: Bool { get }
    /// [control-thread] Before the run starts: `wake` is to be called whenever text arrives
    /// (or its end, or a barge-in), so a source thread idling between looks at a provider
    /// that had nothing wakes at once instead of at its next look. Ignored by default.
    func onTextArrival(_ wake: @escaping @Sendable () -> Void)
}

extension TextDrivenSource {
    public func receive(text: String, at offset: Int) { receive(text: text) }
    public var hasSpokenAllText: Bool { false }
    public var reportsWordTiming: Bool { false }
    public func onTextArrival(_ wake: @escaping @Sendable () -> Void) {}
    public func interrupt() -> UtteranceID? { interrupt(changing: [:]) }
    public func interrupt(changing parameters: [String: ParameterValue]) -> UtteranceID? { nil }
}

/// A text-driven source that takes an utterance piece by piece: `beginUtterance(at:)`, any
/// number of `push(text:)`, `endUtterance()`.
public protocol IncrementalTextSource: TextDrivenSource {
    /// [control-thread] Whether speech can begin before an utterance's text is complete. When false
    /// the source needs whole utterances, and a controller hands it sentences once each is
    /// complete instead of every token as it arrives.
    var acceptsIncrementalText: Bool { get }
    /// [control-thread] Starts an utterance whose text starts at UTF-8 byte `offset` of the whole text.
    func beginUtterance(at offset: Int)
    /// [control-thread] Appends text (a token, a word) to the current utterance.
    func push(text: String)
    /// [control-thread] The current utterance's text is complete.
    func endUtterance()
}

/// A node that ends the graph and plays what arrives, through a `Playhead`.
public protocol SinkNode: Node {
    /// [control-thread] The rate this sink plays at, which `auto` rates upstream follow; nil when it
    /// takes its input's rate.
    var decidedRate: Int? { get }

    /// [control-thread] The rate this sink plays at in a live run (`live`) or an offline one: a
    /// device sink asks its device only when live. Defaults to `decidedRate`.
    func decidedRate(live: Bool) -> Int?

    /// [control-thread] Why the sink's device stopped (its server went away), or nil. A live run
    /// polls this and ends with the error instead of waiting for a device that is gone.
    var deviceFailure: (any Error)? { get }

    /// [control-thread] Live runs: starts whatever pulls audio from `playhead` (a device callback,
    /// a clock thread). Returns at once.
    func start(_ playhead: Playhead) throws

    /// [control-thread] Stops pulling; returns once `playhead` is no longer called.
    func stop()

    /// [source-thread] Interleaved audio the playhead rendered, at the sink's format. Offline
    /// drivers and clock threads call this; file sinks write it.
    func write(_ samples: UnsafeBufferPointer<Float>) throws

    /// [control-thread] The stream has played out (or was cancelled): close files, flush.
    func finish() throws
}

extension SinkNode {
    public var decidedRate: Int? { nil }
    public func decidedRate(live: Bool) -> Int? { decidedRate }
    public var deviceFailure: (any Error)? { nil }
    public func write(_ samples: UnsafeBufferPointer<Float>) throws {}
    public func finish() throws {}
}

/// What `prepare` is told.
public struct PrepareContext: Sendable {
    public var inputFormats: [StreamFormat]
    public var outputFormats: [StreamFormat]
    /// The most units (frames, or bytes on byte edges) a single `process` call will see on any
    /// one port; size scratch buffers from it.
    public var maximumUnits: Int
    /// The graph block: frames a sink period holds.
    public var blockFrames: Int

    public init(inputFormats: [StreamFormat], outputFormats: [StreamFormat], maximumUnits: Int, blockFrames: Int) {
        self.inputFormats = inputFormats
        self.outputFormats = outputFormats
        self.maximumUnits = maximumUnits
        self.blockFrames = blockFrames
    }
}

/// Counters a node adds to a run's report.
public struct NodeReport: Sendable, Hashable {
    /// Unfinished frames dropped at utterance boundaries (aligners).
    public var droppedPartialFrames = 0
    /// Named counters for anything else, printed by `--stats json`.
    public var counters: [String: Int] = [:]

    public init() {}
}
