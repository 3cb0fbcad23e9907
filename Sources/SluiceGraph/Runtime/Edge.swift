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
    /// Units the writer has made so far, in the writer's own count: those on the edge and
    /// those a full `drop-newest` or `drop-oldest` edge dropped (`droppedUnits`). Read from
    /// other threads for the buffered-audio figures (of sink edges, which never drop).
    public let writtenUnits = Atomic<Int>(0)
    /// Who sleeps waiting for this edge's data (the worker, or a playhead's device).
    let readerWake: WakeSignal?
    /// Units the writer dropped because the edge was full (its policy drops); the writer's
    /// thread only. Markers move back by this much: the reader never saw those units.
    private(set) var droppedUnits = 0
    /// Whether the region last handed out (`writableRegion`) is scratch whose units are
    /// dropped on `commit`, not the edge's room.
    var writesToScratch = false
    /// Units dropped on this edge by either end, for the run's counters.
    let drops = Atomic<Int>(0)
    /// What a dropping edge keeps (`setPolicy`): the reader of a `drop-oldest` edge skips the
    /// oldest down to it after each of its steps. Set before the graph runs.
    fileprivate(set) var keepUnits = Int.max

    init(format: StreamFormat, markers: consuming RingProducer<Marker>, readerWake: WakeSignal?) {
        self.format = format
        markerRing = markers
        self.readerWake = readerWake
    }

    /// The first contiguous stretch of free room.
    public func writableRegion() -> (base: UnsafeMutableRawPointer?, units: Int) { fatalError("abstract") }
    /// All free room, in units.
    public func freeUnits() -> Int { fatalError("abstract") }
    /// [any-thread] Units the edge holds when full.
    public var capacityUnits: Int { fatalError("abstract") }
    /// [any-thread] Units on the edge now (written, not yet read): a link's fill, as a page or a
    /// status shows it.
    public var heldUnits: Int { fatalError("abstract") }
    func commitAudio(_ units: Int) { fatalError("abstract") }
    /// Markers that fit now.
    public func markerRoom() -> Int { markerRing.availableSlots() }
    public func push(_ marker: Marker) {
        // In the reader's count: less what was dropped; a marker of audio being dropped goes
        // where the drop is, so it still reaches the reader (an end of stream above all).
        var marker = marker
        if droppedUnits > 0 || writesToScratch {
            let onEdge = writtenUnits.load(ordering: .relaxed) - droppedUnits
            marker = marker.moved(to: writesToScratch ? onEdge : marker.position - droppedUnits)
        }
        let pushed = markerRing.push(marker)
        precondition(pushed, "marker ring full: check markerRoom first")
    }

    /// Makes `units` written units visible to the reader; written to scratch, drops them.
    public func commit(_ units: Int) {
        guard units > 0 else { return }
        if writesToScratch {
            droppedUnits += units
            drops.add(units, ordering: .relaxed)
        } else {
            commitAudio(units)
        }
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

    private let audioGauge: RingGauge

    init(format: StreamFormat, audio: consuming RingProducer<Float>, markers: consuming RingProducer<Marker>, readerWake: WakeSignal?) {
        audioGauge = audio.gauge
        self.audio = audio
        channels = format.channels
        super.init(format: format, markers: markers, readerWake: readerWake)
    }

    /// [any-thread] The most frames the edge held since the last call, and starts again from
    /// zero. The edge is fullest just after a commit, so this is the exact peak, where a look
    /// now and then would find the playhead has already taken some of it.
    func takeFillPeak() -> Int { fillPeak.exchange(0, ordering: .relaxed) }

    /// What the edge does when full (`when-full`), and the units it keeps. The ring has room
    /// for one step of its writer beyond them (`burstUnits`: the worker moves audio in
    /// batches, and a reader that keeps up takes each one in the same pass, so nothing is
    /// lost). `drop-newest` drops what the writer makes once the edge holds `keepUnits` plus
    /// that room; `drop-oldest` writes on into the ring, its reader skipping the oldest down
    /// to `keepUnits` after each step (`EdgeReader.skipOldest`); either drops what the
    /// writer makes when the ring itself is full (the reader has stopped).
    private(set) var policy = LinkPolicy.block
    private var burstUnits = 0
    // SAFETY: `scratchUnits` frames, allocated by `setPolicy`, freed in `deinit`; written by
    // the writer's thread only, and never read: what lands there is dropped.
    private var scratch: UnsafeMutablePointer<Float>?
    private var scratchUnits = 0

    /// [control-thread] Before the graph runs: a policy that drops, keeping `keepUnits` with
    /// room for `burstUnits` more (one step of the writer), and `scratchUnits` frames of
    /// scratch for what the writer makes while the edge is full.
    func setPolicy(_ policy: LinkPolicy, keepUnits: Int, burstUnits: Int, scratchUnits: Int) {
        self.policy = policy
        guard policy != .block else { return }
        self.keepUnits = keepUnits
        self.burstUnits = burstUnits
        self.scratchUnits = scratchUnits
        scratch = .allocate(capacity: scratchUnits * channels)
        scratch!.initialize(repeating: 0, count: scratchUnits * channels)
    }

    deinit { scratch?.deallocate() }

    /// The edge's room; on an edge that drops and is full (as its policy counts), scratch
    /// whose units `commit` drops, so the writer never waits.
    override public func writableRegion() -> (base: UnsafeMutableRawPointer?, units: Int) {
        let first = audio.writableRegions().first
        var units = first.count / channels
        if let scratch {
            // `drop-oldest` takes all the ring's room (its reader trims), `drop-newest` up to
            // what it keeps and one step more.
            if policy == .dropNewest {
                let held = (audio.capacity - audio.availableSlots()) / channels
                units = min(units, max(0, keepUnits + burstUnits - held))
            }
            writesToScratch = units == 0
            if writesToScratch { return (UnsafeMutableRawPointer(scratch), scratchUnits) }
        }
        return (UnsafeMutableRawPointer(first.baseAddress), units)
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
    override public var capacityUnits: Int { audioGauge.capacity / channels }
    override public var heldUnits: Int { audioGauge.count / channels }

    /// [audio-thread] Room for exactly `samples` samples as up to two stretches (the ring
    /// wraps), or nil when there is less. Write both, then `commit` the frames.
    func writableSamples(_ samples: Int) -> (first: UnsafeMutableBufferPointer<Float>, second: UnsafeMutableBufferPointer<Float>)? {
        if scratch != nil, policy == .dropNewest, (audio.capacity - audio.availableSlots() + samples) / channels > keepUnits + burstUnits {
            drops.add(samples / channels, ordering: .relaxed)
            return nil
        }
        let regions = audio.writableRegions(maximum: samples)
        guard regions.count == samples else { return nil }
        return (regions.first, regions.second)
    }
}

/// An edge writer over a ring of bytes: a unit is a byte.
final class ByteEdgeWriter: EdgeWriter {
    private var audio: RingProducer<UInt8>
    private let audioGauge: RingGauge

    init(format: StreamFormat, audio: consuming RingProducer<UInt8>, markers: consuming RingProducer<Marker>, readerWake: WakeSignal?) {
        audioGauge = audio.gauge
        self.audio = audio
        super.init(format: format, markers: markers, readerWake: readerWake)
    }

    override public func writableRegion() -> (base: UnsafeMutableRawPointer?, units: Int) {
        let first = audio.writableRegions().first
        return (UnsafeMutableRawPointer(first.baseAddress), first.count)
    }

    override func commitAudio(_ units: Int) { audio.commit(units) }
    override public func freeUnits() -> Int { audio.availableSlots() }
    override public var capacityUnits: Int { audioGauge.capacity }
    override public var heldUnits: Int { audioGauge.count }
}

/// The reading end of an edge, used by one thread (the worker). SPI for SluiceTestKit's bench.
@_spi(TestKit)
public class EdgeReader {
    public let format: StreamFormat
    private var markerRing: RingConsumer<Marker>
    /// Units released so far: the reader's position on the edge. Units skipped on a
    /// `drop-oldest` edge are not counted: the reader never had them, and the markers it
    /// takes are moved back by as much, so a node's output positions stay its input's.
    public private(set) var position = 0
    /// Units skipped on a `drop-oldest` edge (`skipOldest`): the writer's positions run ahead
    /// of the reader's by this much.
    private(set) var skippedUnits = 0
    /// On a `drop-oldest` edge, its writer: it says what the edge keeps, and counts what this
    /// end skips with its own drops. Nil on other edges.
    private(set) var oldestDropper: EdgeWriter?
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

    /// The next marker, without taking it, at its position in the reader's count: one among
    /// skipped units is where the reader is now.
    public func nextMarker() -> Marker? {
        if peeked == nil { peeked = markerRing.pop() }
        guard let marker = peeked, skippedUnits > 0 else { return peeked }
        return marker.moved(to: max(position, marker.position - skippedUnits))
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

    /// All units waiting, across the ring's wrap.
    func availableUnits() -> Int { fatalError("abstract") }

    /// [control-thread] Before the graph runs: a `drop-oldest` edge, whose `writer` asks
    /// this end to skip.
    func skipsOldest(for writer: EdgeWriter) { oldestDropper = writer }

    /// [audio-thread] On a `drop-oldest` edge, after the reader's step: skips the oldest units
    /// beyond what the edge keeps, so a reader that fell behind goes on from the newest. The
    /// markers skipped over are reached where the reader is, and taken as usual.
    func skipOldest() {
        guard let writer = oldestDropper else { return }
        let skipped = availableUnits() - writer.keepUnits
        guard skipped > 0 else { return }
        releaseAudio(skipped)
        skippedUnits += skipped
        writerWake?.post()
        writer.drops.add(skipped, ordering: .relaxed)
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
    override func availableUnits() -> Int { audio.availableElements() / channels }
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
    override func availableUnits() -> Int { audio.availableElements() }
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
