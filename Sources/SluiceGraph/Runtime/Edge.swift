import SluiceAudio
import SluiceRT
import Synchronization

/// The writing end of an edge: an audio ring plus a marker ring, used by one thread (the
/// upstream node's). Positions count units (frames, or bytes on byte edges) from the start of
/// the stream. Subclasses hold the typed audio ring. SPI for SluiceTestKit's bench.
@_spi(TestKit)
public class EdgeWriter {
    public let format: StreamFormat
    private var markerRing: RingProducer<Marker>
    /// Units committed so far; read from other threads for the buffered-audio figures.
    public let writtenUnits = Atomic<Int>(0)
    /// Who sleeps waiting for this edge's data (the worker, or a playhead's device).
    let readerWake: WakeSignal?

    init(format: StreamFormat, markers: consuming RingProducer<Marker>, readerWake: WakeSignal?) {
        self.format = format
        markerRing = markers
        self.readerWake = readerWake
    }

    /// The first contiguous stretch of free room.
    public func writableRegion() -> (base: UnsafeMutableRawPointer?, units: Int) { fatalError("abstract") }
    /// All free room, in units.
    public func freeUnits() -> Int { fatalError("abstract") }
    /// Units the edge holds when full.
    public var capacityUnits: Int { fatalError("abstract") }
    func commitAudio(_ units: Int) { fatalError("abstract") }
    /// Markers that fit now.
    public func markerRoom() -> Int { markerRing.availableSlots() }
    public func push(_ marker: Marker) {
        let pushed = markerRing.push(marker)
        precondition(pushed, "marker ring full: check markerRoom first")
    }

    /// Makes `units` written units visible to the reader.
    public func commit(_ units: Int) {
        guard units > 0 else { return }
        commitAudio(units)
        writtenUnits.add(units, ordering: .releasing)
    }

    func wakeReader() { readerWake?.post() }
}

// Frame and byte edges get a concrete class each, not one generic class: a generic class's
// overrides run unspecialized generic ring code on every call (measured: ~6 % of an offline
// render went to generic metadata lookups).

/// An edge writer over a ring of Float samples: a unit is a frame of `channels` samples.
final class FrameEdgeWriter: EdgeWriter {
    private var audio: RingProducer<Float>
    private let channels: Int
    /// Whether each commit notes how full the ring is (`takeFillPeak`): a live sink's edge,
    /// whose fill a run reports as its peak buffered audio.
    var tracksFill = false
    /// The most frames the ring held at a commit since `takeFillPeak` last took it.
    private let fillPeak = Atomic<Int>(0)

    init(format: StreamFormat, audio: consuming RingProducer<Float>, markers: consuming RingProducer<Marker>, readerWake: WakeSignal?) {
        self.audio = audio
        channels = format.channels
        super.init(format: format, markers: markers, readerWake: readerWake)
    }

    /// [any-thread] The most frames the edge held since the last call, and starts again from
    /// zero. The edge is fullest just after a commit, so this is the exact peak, where a look
    /// now and then would find the playhead has already taken some of it.
    func takeFillPeak() -> Int { fillPeak.exchange(0, ordering: .relaxed) }

    override public func writableRegion() -> (base: UnsafeMutableRawPointer?, units: Int) {
        let first = audio.writableRegions().first
        return (UnsafeMutableRawPointer(first.baseAddress), first.count / channels)
    }

    override func commitAudio(_ units: Int) {
        audio.commit(units * channels)
        guard tracksFill else { return }
        // One writer: a load and a store. A `takeFillPeak` in between loses nothing it has
        // not already reported, or a smaller fill than it reported.
        let held = (audio.capacity - audio.availableSlots()) / channels
        if held > fillPeak.load(ordering: .relaxed) { fillPeak.store(held, ordering: .relaxed) }
    }
    override public func freeUnits() -> Int { audio.availableSlots() / channels }
    override public var capacityUnits: Int { audio.capacity / channels }

    /// [audio-thread] Room for exactly `samples` samples as up to two stretches (the ring
    /// wraps), or nil when there is less. Write both, then `commit` the frames.
    func writableSamples(_ samples: Int) -> (first: UnsafeMutableBufferPointer<Float>, second: UnsafeMutableBufferPointer<Float>)? {
        let regions = audio.writableRegions(maximum: samples)
        guard regions.count == samples else { return nil }
        return (regions.first, regions.second)
    }
}

/// An edge writer over a ring of bytes: a unit is a byte.
final class ByteEdgeWriter: EdgeWriter {
    private var audio: RingProducer<UInt8>

    init(format: StreamFormat, audio: consuming RingProducer<UInt8>, markers: consuming RingProducer<Marker>, readerWake: WakeSignal?) {
        self.audio = audio
        super.init(format: format, markers: markers, readerWake: readerWake)
    }

    override public func writableRegion() -> (base: UnsafeMutableRawPointer?, units: Int) {
        let first = audio.writableRegions().first
        return (UnsafeMutableRawPointer(first.baseAddress), first.count)
    }

    override func commitAudio(_ units: Int) { audio.commit(units) }
    override public func freeUnits() -> Int { audio.availableSlots() }
    override public var capacityUnits: Int { audio.capacity }
}

/// The reading end of an edge, used by one thread (the worker). SPI for SluiceTestKit's bench.
@_spi(TestKit)
public class EdgeReader {
    public let format: StreamFormat
    private var markerRing: RingConsumer<Marker>
    /// Units released so far: the reader's position on the edge.
    public private(set) var position = 0
    private var peeked: Marker?
    /// Whether the end-of-stream marker has been taken.
    private(set) var hasEnded = false
    /// Who sleeps waiting for room on this edge (a source thread), or nil for the worker.
    let writerWake: WakeSignal?

    init(format: StreamFormat, markers: consuming RingConsumer<Marker>, writerWake: WakeSignal?) {
        self.format = format
        markerRing = markers
        self.writerWake = writerWake
    }

    public func readableRegion() -> (base: UnsafeRawPointer?, units: Int) { fatalError("abstract") }
    func releaseAudio(_ units: Int) { fatalError("abstract") }

    /// The next marker, without taking it.
    public func nextMarker() -> Marker? {
        if peeked == nil { peeked = markerRing.pop() }
        return peeked
    }

    /// The next marker, whatever its position (a bench collecting what a node emitted).
    public func takeNextMarker() -> Marker? {
        guard let marker = nextMarker() else { return nil }
        peeked = nil
        if case .endOfStream = marker.event { hasEnded = true }
        return marker
    }

    /// The next marker if the reader has reached its position.
    public func takeReachedMarker() -> Marker? {
        guard let marker = nextMarker(), marker.position <= position else { return nil }
        peeked = nil
        if case .endOfStream = marker.event { hasEnded = true }
        return marker
    }

    /// Readable units, clamped so a read never passes the next marker.
    func readableUnits() -> (base: UnsafeRawPointer?, units: Int) {
        var region = readableRegion()
        if let marker = nextMarker() { region.units = min(region.units, max(0, marker.position - position)) }
        return region
    }

    public func release(_ units: Int) {
        guard units > 0 else { return }
        releaseAudio(units)
        position += units
        writerWake?.post()
    }
}

/// An edge reader over a ring of Float samples: a unit is a frame of `channels` samples.
final class FrameEdgeReader: EdgeReader {
    private var audio: RingConsumer<Float>
    private let channels: Int

    init(format: StreamFormat, audio: consuming RingConsumer<Float>, markers: consuming RingConsumer<Marker>, writerWake: WakeSignal?) {
        self.audio = audio
        channels = format.channels
        super.init(format: format, markers: markers, writerWake: writerWake)
    }

    override public func readableRegion() -> (base: UnsafeRawPointer?, units: Int) {
        let first = audio.readableRegions().first
        return (UnsafeRawPointer(first.baseAddress), first.count / channels)
    }

    override func releaseAudio(_ units: Int) { audio.release(units * channels) }
}

/// An edge reader over a ring of bytes: a unit is a byte.
final class ByteEdgeReader: EdgeReader {
    private var audio: RingConsumer<UInt8>

    init(format: StreamFormat, audio: consuming RingConsumer<UInt8>, markers: consuming RingConsumer<Marker>, writerWake: WakeSignal?) {
        self.audio = audio
        super.init(format: format, markers: markers, writerWake: writerWake)
    }

    override public func readableRegion() -> (base: UnsafeRawPointer?, units: Int) {
        let first = audio.readableRegions().first
        return (UnsafeRawPointer(first.baseAddress), first.count)
    }

    override func releaseAudio(_ units: Int) { audio.release(units) }
}

/// Markers an edge holds at most. Nodes emit a few per call; the playhead keeps its own
/// list of markers still ahead of the play position.
let edgeMarkerCapacity = 256

/// Builds an edge between two graph threads.
@_spi(TestKit)
public func makeEdge(format: StreamFormat, capacityUnits: Int, readerWake: WakeSignal?, writerWake: WakeSignal?) -> (EdgeWriter, EdgeReader) {
    let markers = makeRing(of: Marker.self, capacity: edgeMarkerCapacity)
    let markerProducer = markers.producer
    let markerConsumer = markers.consumer
    switch format {
    case .frames(_, let channels):
        let ring = makeRing(of: Float.self, capacity: capacityUnits * channels)
        let producer = ring.producer
        let consumer = ring.consumer
        return (
            FrameEdgeWriter(format: format, audio: producer, markers: markerProducer, readerWake: readerWake),
            FrameEdgeReader(format: format, audio: consumer, markers: markerConsumer, writerWake: writerWake))
    case .bytes:
        let ring = makeRing(of: UInt8.self, capacity: capacityUnits)
        let producer = ring.producer
        let consumer = ring.consumer
        return (
            ByteEdgeWriter(format: format, audio: producer, markers: markerProducer, readerWake: readerWake),
            ByteEdgeReader(format: format, audio: consumer, markers: markerConsumer, writerWake: writerWake))
    }
}

/// Builds the edge into a sink: its reading end is the sink's playhead.
func makeSinkEdge(
    rate: Int, channels: Int, capacityFrames: Int, fadeFrames: Int, watermarkFrames: Int,
    eventCapacity: Int, workerWake: WakeSignal?, eventWake: WakeSignal? = nil, prerollFrames: Int = 0
) -> (FrameEdgeWriter, Playhead, DrainEventReader) {
    let format = StreamFormat.frames(rate: rate, channels: channels)
    let audio = makeRing(of: Float.self, capacity: capacityFrames * channels)
    let markers = makeRing(of: Marker.self, capacity: edgeMarkerCapacity)
    let events = makeRing(of: DrainEvent.self, capacity: eventCapacity)
    let audioProducer = audio.producer
    let audioConsumer = audio.consumer
    let markerProducer = markers.producer
    let markerConsumer = markers.consumer
    let eventProducer = events.producer
    let eventConsumer = events.consumer
    let playhead = Playhead(
        sampleRate: rate, channels: channels, fadeFrames: fadeFrames, capacityFrames: capacityFrames,
        watermarkFrames: watermarkFrames, audio: audioConsumer, markers: markerConsumer,
        events: eventProducer, wake: workerWake, eventWake: eventWake, prerollFrames: prerollFrames)
    let writer = FrameEdgeWriter(format: format, audio: audioProducer, markers: markerProducer, readerWake: playhead.dataArrived)
    return (writer, playhead, DrainEventReader(eventConsumer))
}
