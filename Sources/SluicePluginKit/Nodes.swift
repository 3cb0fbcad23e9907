import SluicePluginABI

/// A processor written in Swift: the Swift side of `sluice_processor_vtable_t`. The thread
/// tags are those of `sluice/common.h`.
public protocol Processor: AnyObject {
    /// [control-thread & !active] The only place that may allocate.
    func activate(sampleRate: Int, maximumFrames: Int, channels: Int) throws(PluginError)
    /// [audio-thread & active] Writes `block.frames` frames to every output from the same
    /// frames of every input, applying `block.events` (live parameter changes, markers) each
    /// from its offset. Returns false on failure (the host writes silence). No allocation,
    /// locks, I/O or logging. `block.frames` is 0 in a call that carries only events.
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

/// One `process` call's audio and events: a view of the host's `sluice_process_t`, valid
/// during the call.
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

    /// [audio-thread] The live parameter changes and markers this call carries, in order of
    /// offset.
    public var events: ProcessEvents {
        // `events` came with version 2, and a host loads only plugins of its version or
        // older, so every host that runs this kit's plugins has it: no `size` check needed
        // (fields added later will need one, SLUICE_HAS_FIELD in common.h).
        guard raw.pointee.event_count > 0, let list = raw.pointee.events else {
            return ProcessEvents(list: nil, count: 0)
        }
        return ProcessEvents(list: list, count: Int(raw.pointee.event_count))
    }
}

/// The events of one `process` call (events.h): a view of the host's list, valid during the
/// call. Reading an event allocates nothing; index them (`for i in 0..<events.count`) on the
/// audio thread.
public struct ProcessEvents: RandomAccessCollection {
    let list: UnsafePointer<UnsafePointer<sluice_event_header_t>?>?
    public let count: Int

    public var startIndex: Int { 0 }
    public var endIndex: Int { count }

    /// [audio-thread] Event `index`, read from the host's struct; allocates nothing.
    public subscript(index: Int) -> ProcessEvent {
        precondition(index >= 0 && index < count, "no event \(index)")
        // SAFETY: the host gives `event_count` pointers to events that start with a header
        // whose `size` covers the whole event; a field is read only when `size` reaches it.
        let header = list![index]!
        let raw = UnsafeRawPointer(header)
        let offset = Int(header.pointee.offset)
        let size = Int(header.pointee.size)
        switch Int(header.pointee.kind) {
        case SLUICE_EVENT_PARAM where size >= MemoryLayout<sluice_param_event_t>.offset(of: \.param_name)!:
            let event = raw.assumingMemoryBound(to: sluice_param_event_t.self).pointee
            return .parameter(index: Int(event.param_index), value: event.value, offset: offset)
        case SLUICE_EVENT_MARKER where size >= MemoryLayout<sluice_marker_event_t>.size:
            let event = raw.assumingMemoryBound(to: sluice_marker_event_t.self).pointee
            let marker: PluginMarker.Event
            switch Int(event.marker) {
            case SLUICE_MARKER_UTTERANCE_START: marker = .utteranceStart(utterance: event.utterance)
            case SLUICE_MARKER_UTTERANCE_END: marker = .utteranceEnd(utterance: event.utterance)
            case SLUICE_MARKER_DISCONTINUITY: marker = .discontinuity
            case SLUICE_MARKER_TEXT_SPAN:
                marker = .textSpan(utterance: event.utterance, start: Int(event.text_start), end: Int(event.text_end))
            case SLUICE_MARKER_WORD:
                marker = .word(utterance: event.utterance, start: Int(event.text_start), end: Int(event.text_end))
            case SLUICE_MARKER_END_OF_STREAM: marker = .endOfStream
            default: marker = .unknown(event.marker)
            }
            let discontinuous = event.flags & UInt32(SLUICE_MARKER_DISCONTINUOUS) != 0
            return .marker(PluginMarker(event: marker, input: Int(event.input), isDiscontinuous: discontinuous), offset: offset)
        default:
            return .unknown(kind: header.pointee.kind, offset: offset)
        }
    }
}

extension ProcessEvents {
    /// [control-thread] Reads one event of each kind from a list of its own, so what Swift's
    /// runtime sets up on a path's first use (the event structs' metadata) happens in
    /// `activate`, not in the first `process` that carries an event.
    static func rehearse() {
        var change = sluice_param_event_t()
        change.header = sluice_event_header_t(
            size: UInt32(MemoryLayout<sluice_param_event_t>.size), kind: sluice_event_kind_t(SLUICE_EVENT_PARAM), offset: 0,
            reserved: 0)
        var marker = sluice_marker_event_t()
        marker.header = sluice_event_header_t(
            size: UInt32(MemoryLayout<sluice_marker_event_t>.size), kind: sluice_event_kind_t(SLUICE_EVENT_MARKER), offset: 0,
            reserved: 0)
        withUnsafePointer(to: &change) { change in
            withUnsafePointer(to: &marker) { marker in
                // SAFETY: both events live for this closure; each starts with its header.
                let list: [UnsafePointer<sluice_event_header_t>?] = [
                    UnsafeRawPointer(change).assumingMemoryBound(to: sluice_event_header_t.self),
                    UnsafeRawPointer(marker).assumingMemoryBound(to: sluice_event_header_t.self),
                ]
                list.withUnsafeBufferPointer { list in
                    let events = ProcessEvents(list: list.baseAddress, count: list.count)
                    for index in 0..<events.count { _ = events[index].offset }
                }
            }
        }
    }
}

/// One event of a `process` call.
public enum ProcessEvent: Sendable, Hashable {
    /// Live parameter `index` (in the node description's `parameters`) takes `value` from
    /// frame `offset` of the block on.
    case parameter(index: Int, value: Double, offset: Int)
    /// A marker an input reached, applying from frame `offset` of the block. The host passes
    /// every marker downstream itself.
    case marker(PluginMarker, offset: Int)
    /// An event of a kind this kit does not know (a newer host): skip it.
    case unknown(kind: UInt32, offset: Int)

    /// The frame of the block from which the event applies.
    public var offset: Int {
        switch self {
        case .parameter(_, _, let offset), .marker(_, let offset), .unknown(_, let offset): offset
        }
    }
}

/// A marker of the stream, as a processor hears of it.
public struct PluginMarker: Sendable, Hashable {
    public enum Event: Sendable, Hashable {
        /// The audio of an utterance begins here.
        case utteranceStart(utterance: UInt32)
        /// The audio of an utterance ends here.
        case utteranceEnd(utterance: UInt32)
        /// The signal jumps here.
        case discontinuity
        /// The audio from here speaks UTF-8 bytes `start..<end` of the stream's text.
        case textSpan(utterance: UInt32, start: Int, end: Int)
        /// A word's audio begins here (its bytes in the stream's text).
        case word(utterance: UInt32, start: Int, end: Int)
        /// The input's stream has ended: it arrives as silence from here.
        case endOfStream
        /// A marker kind this kit does not know.
        case unknown(UInt32)
    }

    public var event: Event
    /// The input it arrived on.
    public var input: Int
    /// The signal does not continue across it (an utterance cut short).
    public var isDiscontinuous: Bool

    public init(event: Event, input: Int, isDiscontinuous: Bool = false) {
        self.event = event
        self.input = input
        self.isDiscontinuous = isDiscontinuous
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
    /// [any-thread] Whether `takeWordMarks` reports where words begin
    /// (`SLUICE_PROVIDER_WORD_TIMING`). False by default.
    var reportsWordTiming: Bool { get }
    /// [source-thread] The word marks of the current utterance (the one the latest `read`
    /// returned data of) not taken yet, in audio order; at most `limit`. A mark must be
    /// takeable by the `read` that returns the byte at its `audioOffset`. None by default.
    func takeWordMarks(limit: Int) -> [WordMark]
}

extension Provider {
    public var counters: [Counter] { [] }
    public var acceptsIncrementalText: Bool { false }
    public var reportsWordTiming: Bool { false }
    public func takeWordMarks(limit: Int) -> [WordMark] { [] }
}

/// Where a word's audio begins, within the current utterance (`sluice_word_mark_t`).
public struct WordMark: Sendable, Hashable {
    /// The word's UTF-8 bytes in the utterance's text, counted from its first pushed byte.
    public var text: Range<Int>
    /// The byte of the utterance's audio (counted from its first byte read) where it begins.
    public var audioOffset: Int

    public init(text: Range<Int>, audioOffset: Int) {
        self.text = text
        self.audioOffset = audioOffset
    }
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
