/// Identifies one utterance (a sentence or clause a provider synthesises) within a stream.
public struct UtteranceID: RawRepresentable, Hashable, Sendable, BitwiseCopyable,
    CustomStringConvertible
{
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public init(_ rawValue: UInt32) { self.rawValue = rawValue }
    public var description: String { "#\(rawValue)" }
}

/// Which part of the input text some audio speaks: UTF-8 byte offsets `start ..< end` into the
/// text the stream was given (offsets, not `String.Index`, so the record stays plain data).
public struct TextSpan: Hashable, Sendable, BitwiseCopyable {
    public var utterance: UtteranceID
    public var start: Int32
    public var end: Int32

    public init(utterance: UtteranceID, start: Int32, end: Int32) {
        precondition(start <= end, "a text span cannot end before it starts")
        self.utterance = utterance
        self.start = start
        self.end = end
    }
}

/// What a marker announces.
public enum MarkerEvent: Hashable, Sendable, BitwiseCopyable {
    /// The audio of an utterance begins here.
    case utteranceStart(UtteranceID)
    /// The audio of an utterance ends here.
    case utteranceEnd(UtteranceID)
    /// The signal jumps here (a gap, a seek, a provider failure): faders fade across it and
    /// crossfaders do not blend over it.
    case discontinuity
    /// The audio from here on speaks this part of the text.
    case textSpan(TextSpan)
    /// The audio of one word begins here (from providers that report word timing): the span
    /// is the word's bytes in the text, in its utterance.
    case word(TextSpan)
    /// Nothing follows: nodes flush what they hold.
    case endOfStream
}

/// An in-band event travelling beside the audio on an edge.
///
/// `position` is where the event applies, counted in the edge's elements from the start of the
/// stream: a byte offset on byte edges (before the aligner), a frame offset on frame edges.
/// Markers on one edge are in non-decreasing position order. A node receives a marker once its
/// input has reached the marker's position, and stamps what it emits with positions in its own
/// output, so markers stay exact through nodes that delay, stretch or overlap audio.
public struct Marker: Hashable, Sendable, BitwiseCopyable, CustomStringConvertible {
    public var position: Int
    public var event: MarkerEvent
    /// Set on utterance boundaries that are not a continuation of the audio before them (for
    /// example audio cut short by a provider failure): faders fade across them.
    public var isDiscontinuous: Bool

    public init(position: Int, event: MarkerEvent, isDiscontinuous: Bool = false) {
        self.position = position
        self.event = event
        self.isDiscontinuous = isDiscontinuous
    }

    /// True for markers across which the signal is not continuous.
    @inlinable
    public var breaksContinuity: Bool {
        switch event {
        case .discontinuity, .endOfStream: true
        case .utteranceStart, .utteranceEnd, .textSpan, .word: isDiscontinuous
        }
    }

    /// The same marker at another position.
    @inlinable
    public func moved(to position: Int) -> Marker {
        var copy = self
        copy.position = position
        return copy
    }

    public var description: String {
        let flag = isDiscontinuous ? " (discontinuous)" : ""
        return "\(event) @\(position)\(flag)"
    }
}

/// Up to four markers a node emits in answer to one marker it receives. A fixed-size value,
/// so handling markers on the worker thread never allocates.
public struct MarkerBatch: Sendable {
    public static let capacity = 4
    @usableFromInline var storage: InlineArray<4, Marker>
    public private(set) var count = 0

    public init() {
        storage = InlineArray(repeating: Marker(position: 0, event: .discontinuity))
    }

    @inlinable
    public var isEmpty: Bool { count == 0 }

    public mutating func append(_ marker: Marker) {
        precondition(count < Self.capacity, "a node emitted more markers than a batch holds")
        storage[count] = marker
        count += 1
    }

    public mutating func removeAll() { count = 0 }

    public subscript(index: Int) -> Marker {
        precondition(index >= 0 && index < count, "marker index out of range")
        return storage[index]
    }
}
