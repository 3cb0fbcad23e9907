import SluiceAudio
import SluiceRT

/// What a playhead tells the rest of the graph, through a ring read off the real-time thread.
/// Device frames count every frame the device rendered, silence included; stream frames count
/// the audio taken from the sink's edge.
public struct DrainEvent: Sendable, Hashable, BitwiseCopyable {
    public enum Kind: UInt8, Sendable, BitwiseCopyable {
        /// Playback started (the watermark was reached or the stream had ended).
        case started
        /// The edge ran dry while playing: what was left faded out, silence follows.
        case underrunStart
        /// Audio came back after an underrun (faded in).
        case underrunEnd
        /// A marker's position was played.
        case marker
        /// The end of the stream was played.
        case finished
        /// A cancel faded the audio out.
        case cancelled
    }

    public var kind: Kind
    /// The device frame at which it happened.
    public var deviceFrame: Int
    /// The stream frame (position on the sink's edge) at which it happened.
    public var streamFrame: Int
    /// The device's own clock at that frame: JACK's frame time (`jack_last_frame_time` of the
    /// cycle plus the offset into it), so events line up with other JACK clients' timings.
    /// Devices without a clock of their own (files, the offline driver) count `deviceFrame`.
    public var deviceTime: UInt64
    /// The marker, for `.marker` events.
    public var marker: Marker?

    public init(kind: Kind, deviceFrame: Int, streamFrame: Int, deviceTime: UInt64? = nil, marker: Marker? = nil) {
        self.kind = kind
        self.deviceFrame = deviceFrame
        self.streamFrame = streamFrame
        self.deviceTime = deviceTime ?? UInt64(max(0, deviceFrame))
        self.marker = marker
    }
}

/// The control side's end of a playhead's event ring: one reader thread.
public final class DrainEventReader: @unchecked Sendable {
    private var ring: RingConsumer<DrainEvent>

    init(_ ring: consuming RingConsumer<DrainEvent>) {
        self.ring = ring
    }

    /// The next event, or nil when none is waiting.
    public func next() -> DrainEvent? { ring.pop() }
}
