import SluicePluginABI

/// A processor written in Swift: the Swift side of `sluice_processor_vtable_t`. The thread
/// tags are those of `sluice/common.h`.
public protocol Processor: AnyObject {
    /// [control-thread & !active] The only place that may allocate.
    func activate(sampleRate: Int, maximumFrames: Int, channels: Int) throws(PluginError)
    /// [audio-thread & active] Writes `block.frames` frames to every output from the same
    /// frames of every input. Returns false on failure (the host writes silence). No
    /// allocation, locks, I/O or logging.
    func process(_ block: ProcessBlock) -> Bool
    /// [control-thread & active] Forgets the stream. Must not allocate.
    func reset()
    /// [control-thread & active] Frees what `activate` allocated.
    func deactivate()
}

extension Processor {
    public func reset() {}
    public func deactivate() {}
}

/// One `process` call's audio: a view of the host's `sluice_process_t`, valid during the call.
public struct ProcessBlock {
    let raw: UnsafePointer<sluice_process_t>

    /// Index of the first frame since `activate` or `reset`.
    public var position: UInt64 { raw.pointee.position }
    public var frames: Int { Int(raw.pointee.frames) }
    public var channels: Int { Int(raw.pointee.channels) }
    public var inputCount: Int { Int(raw.pointee.input_count) }
    public var outputCount: Int { Int(raw.pointee.output_count) }

    /// Input `port`'s `frames × channels` interleaved samples.
    public func input(_ port: Int) -> UnsafeBufferPointer<Float> {
        precondition(port < inputCount, "no input \(port)")
        // SAFETY: the ABI gives `input_count` pointers, each to `frames × channels` samples.
        return UnsafeBufferPointer(start: raw.pointee.inputs[port], count: frames * channels)
    }

    /// Output `port`'s room for `frames × channels` interleaved samples.
    public func output(_ port: Int) -> UnsafeMutableBufferPointer<Float> {
        precondition(port < outputCount, "no output \(port)")
        // SAFETY: the ABI gives `output_count` pointers, each to room for `frames × channels`.
        return UnsafeMutableBufferPointer(start: raw.pointee.outputs[port], count: frames * channels)
    }
}

/// A provider written in Swift: the Swift side of `sluice_provider_vtable_t`. The text
/// functions run on the control thread while `read` runs on the worker thread: synchronise
/// them (a `Mutex` around the provider's queue). `cancel` may come from any thread.
public protocol Provider: AnyObject, Sendable {
    /// [control-thread] The format `read` delivers; it never changes.
    var format: PCMFormat { get }
    /// [control-thread] Starts an utterance.
    func beginUtterance() throws(PluginError)
    /// [control-thread] Appends text to the current utterance.
    func push(text: String) throws(PluginError)
    /// [control-thread] The current utterance's text is complete.
    func endUtterance() throws(PluginError)
    /// [control-thread] No further utterance will begin.
    func endText()
    /// [source-thread] Fills (part of) `buffer`; should not block for long.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> ReadResult
    /// [any-thread] Stop soon: later reads return `.end`.
    func cancel()
    /// [any-thread] Counters for `--stats json` ("peak-buffered-bytes", "retries"); names
    /// follow the parameter-name rules. None by default.
    var counters: [Counter] { get }
    /// [any-thread] Whether speech of an utterance may begin before `endUtterance`
    /// (`SLUICE_PROVIDER_INCREMENTAL_TEXT`): hosts then push tokens as they arrive. False by
    /// default: hosts hand over whole sentences.
    var acceptsIncrementalText: Bool { get }
}

extension Provider {
    public var counters: [Counter] { [] }
    public var acceptsIncrementalText: Bool { false }
}

/// A named count a provider keeps about its own work.
public struct Counter: Sendable, Hashable {
    public var name: String
    public var value: Int64

    public init(_ name: String, _ value: Int64) {
        self.name = name
        self.value = value
    }
}

/// What `Provider.read` returned.
public enum ReadResult: Sendable, Hashable {
    /// This many bytes (more than zero) were written.
    case data(Int)
    /// The current utterance's audio is complete.
    case utteranceEnd
    /// The stream is complete.
    case end
    /// Nothing ready yet.
    case wouldBlock
    case failed(PluginError)
}

/// One node type a plugin provides, with the factory that creates it.
public enum PluginNode: Sendable {
    case provider(NodeDescription, make: @Sendable (Parameters) throws(PluginError) -> any Provider)
    case processor(NodeDescription, make: @Sendable (Parameters) throws(PluginError) -> any Processor)

    public var description: NodeDescription {
        switch self {
        case .provider(let description, _), .processor(let description, _): description
        }
    }
}
