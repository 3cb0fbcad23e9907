import Synchronization

// A lock-free single-producer/single-consumer ring buffer.
//
// Contract: exactly one thread uses the `RingProducer` and exactly one thread uses the
// `RingConsumer` at a time. Both halves are `~Copyable`, so the type system keeps each one
// unique: it can be moved to another thread, never duplicated.
//
// What it does not do: block, wake a sleeping peer, grow, or hold non-trivial elements. Waking
// belongs to the scheduler; elements are plain bitwise-copyable values (bytes, Float32 samples,
// marker and event records).

/// Creates a ring that holds up to `capacity` elements, and returns its two halves.
///
/// This is the only call that allocates. Any capacity works, including 0 (every push fails)
/// and values that are not powers of two; no slot is wasted.
///
/// ```swift
/// let ring = makeRing(of: Float.self, capacity: 4096)
/// var producer = ring.producer   // hand to the writing thread
/// var consumer = ring.consumer   // hand to the reading thread
/// ```
public func makeRing<Element: BitwiseCopyable>(
    of _: Element.Type = Element.self, capacity: Int
) -> RingHalves<Element> {
    precondition(capacity >= 0, "a ring's capacity cannot be negative")
    let core = RingCore<Element>(capacity: capacity)
    return RingHalves(producer: RingProducer(core: core), consumer: RingConsumer(core: core))
}

/// The two halves of a new ring. Take each one out (`let p = halves.producer`) and move it
/// to the thread that will use it.
@frozen
public struct RingHalves<Element: BitwiseCopyable>: ~Copyable {
    public var producer: RingProducer<Element>
    public var consumer: RingConsumer<Element>
}

// MARK: - Shared state

/// Storage and the two positions shared by both halves.
///
/// Positions run over `0 ..< 2 * capacity`, so "full" (distance == capacity) and "empty"
/// (distance == 0) differ without a wasted slot and without a division on the hot path.
/// The consumer's position (head), the producer's position (tail) and the abandonment flags
/// each sit on their own 128-byte block, so the two threads never share a cache line (128, not
/// 64, because x86 prefetches cache lines in adjacent pairs).
@usableFromInline
final class RingCore<Element: BitwiseCopyable>: @unchecked Sendable {
    // SAFETY (@unchecked Sendable): every mutable field is either an atomic or element storage
    // whose slots are handed from one side to the other by the acquire/release positions.
    static var blockStride: Int { 128 }

    let capacity: Int
    let storage: UnsafeMutablePointer<Element>
    let control: UnsafeMutableRawPointer

    init(capacity: Int) {
        self.capacity = capacity
        // Allocate at least one element so the pointer is never dangling; capacity 0 never
        // touches it.
        // Cache-line aligned, so a chunk never shares its first line with unrelated data.
        storage = UnsafeMutableRawPointer.allocate(
            byteCount: max(capacity, 1) * MemoryLayout<Element>.stride,
            alignment: max(Self.blockStride, MemoryLayout<Element>.alignment)
        ).bindMemory(to: Element.self, capacity: max(capacity, 1))
        // Touch every page now: the kernel maps an allocation's pages on first write, and a
        // page fault on the real-time thread (the first pass of a JACK callback through a
        // ring) costs microseconds (found by profiling the live chain's callback).
        UnsafeMutableRawPointer(storage).initializeMemory(
            as: UInt8.self, repeating: 0, count: max(capacity, 1) * MemoryLayout<Element>.stride)
        control = UnsafeMutableRawPointer.allocate(
            byteCount: 3 * Self.blockStride, alignment: Self.blockStride)
        for block in 0..<3 {
            // SAFETY: `control` is fresh, 128-byte aligned and spans three blocks; each block
            // receives exactly one Atomic<Int>, initialised before any other use.
            (control + block * Self.blockStride)
                .bindMemory(to: Atomic<Int>.self, capacity: 1)
                .initialize(to: Atomic(0))
        }
    }

    deinit {
        for block in 0..<3 {
            // SAFETY: each block was initialised in `init` and is deinitialised exactly once.
            _ = (control + block * Self.blockStride)
                .assumingMemoryBound(to: Atomic<Int>.self)
                .deinitialize(count: 1)
        }
        control.deallocate()
        storage.deallocate()
    }
}

/// Pointers and arithmetic both halves share. Held by value inside each half, so the hot
/// path reads no class fields and causes no reference counting.
@usableFromInline
struct RingLayout<Element: BitwiseCopyable>: @unchecked Sendable {
    // SAFETY (@unchecked Sendable): the pointers are owned by a RingCore that both halves keep
    // alive; access to what they point at follows the ring's SPSC contract.
    @usableFromInline let capacity: Int
    @usableFromInline let storage: UnsafeMutablePointer<Element>
    @usableFromInline let head: UnsafeMutablePointer<Atomic<Int>>
    @usableFromInline let tail: UnsafeMutablePointer<Atomic<Int>>
    @usableFromInline let abandoned: UnsafeMutablePointer<Atomic<Int>>

    init(_ core: RingCore<Element>) {
        capacity = core.capacity
        storage = core.storage
        let stride = RingCore<Element>.blockStride
        head = core.control.assumingMemoryBound(to: Atomic<Int>.self)
        tail = (core.control + stride).assumingMemoryBound(to: Atomic<Int>.self)
        abandoned = (core.control + 2 * stride).assumingMemoryBound(to: Atomic<Int>.self)
    }

    /// Marks that one half is gone. The halves share one counter, so each half that is still
    /// alive sees a non-zero count exactly when its peer has left.
    func leave() {
        abandoned.pointee.add(1, ordering: .releasing)
    }

    var peerHasLeft: Bool {
        abandoned.pointee.load(ordering: .acquiring) != 0
    }

    /// Elements between two positions.
    @inlinable @inline(__always)
    func distance(from start: Int, to end: Int) -> Int {
        let difference = end - start
        return difference < 0 ? difference + 2 * capacity : difference
    }

    @inlinable @inline(__always)
    func advance(_ position: Int, by count: Int) -> Int {
        let next = position + count
        return next >= 2 * capacity ? next - 2 * capacity : next
    }

    @inlinable @inline(__always)
    func slot(_ position: Int) -> Int {
        position >= capacity ? position - capacity : position
    }

    /// The two contiguous runs of `count` slots starting at `position`.
    @inlinable @inline(__always)
    func regions(at position: Int, count: Int)
        -> (UnsafeMutableBufferPointer<Element>, UnsafeMutableBufferPointer<Element>)
    {
        let start = slot(position)
        let firstCount = min(count, capacity - start)
        // SAFETY: start + firstCount <= capacity and count - firstCount <= start, so both runs
        // lie inside the allocation; the SPSC protocol gives the caller exclusive use of them.
        return (
            UnsafeMutableBufferPointer(start: storage + start, count: firstCount),
            UnsafeMutableBufferPointer(start: storage, count: count - firstCount)
        )
    }
}

// MARK: - Producer

/// The writing half of a ring. Use it from one thread at a time.
public struct RingProducer<Element: BitwiseCopyable>: ~Copyable, @unchecked Sendable {
    // SAFETY (@unchecked Sendable): a producer is unique (~Copyable); moving it to another
    // thread transfers the right to write.
    @usableFromInline let layout: RingLayout<Element>
    @usableFromInline var tail = 0
    /// The consumer's position as last seen; reloaded only when the ring looks full.
    @usableFromInline var cachedHead = 0
    let owner: RingCore<Element>

    init(core: RingCore<Element>) {
        owner = core
        layout = RingLayout(core)
    }

    deinit {
        layout.leave()
    }

    /// The number of elements the ring holds when full.
    @inlinable public var capacity: Int { layout.capacity }

    /// True once the consumer has been dropped: nothing written now will ever be read.
    public var isAbandoned: Bool { layout.peerHasLeft }

    /// A view of how full the ring is, for any thread.
    public var gauge: RingGauge { RingGauge(core: owner) }

    /// Free slots right now. May grow at any time as the consumer reads; never shrinks
    /// except by this producer's own writes.
    @inlinable
    public mutating func availableSlots() -> Int {
        cachedHead = layout.head.pointee.load(ordering: .acquiring)
        return layout.capacity - layout.distance(from: cachedHead, to: tail)
    }

    @inlinable @inline(__always)
    mutating func freeSlots(atLeast wanted: Int) -> Int {
        let free = layout.capacity - layout.distance(from: cachedHead, to: tail)
        if free >= wanted { return free }
        cachedHead = layout.head.pointee.load(ordering: .acquiring)
        return layout.capacity - layout.distance(from: cachedHead, to: tail)
    }

    /// Up to `maximum` free slots as two contiguous regions (the second is empty unless the
    /// free space wraps). Write into them, then `commit` how many elements you wrote.
    ///
    /// The regions stay valid until the next `commit`; the consumer cannot touch them.
    @inlinable
    public mutating func writableRegions(maximum: Int = .max) -> RingRegions<Element> {
        let free = freeSlots(atLeast: maximum)
        let (first, second) = layout.regions(at: tail, count: min(free, maximum))
        return RingRegions(first: first, second: second)
    }

    /// Makes the first `count` elements of the last `writableRegions` visible to the consumer.
    @inlinable
    public mutating func commit(_ count: Int) {
        precondition(
            count >= 0 && count <= layout.capacity - layout.distance(from: cachedHead, to: tail),
            "commit(\(count)) exceeds the free slots")
        tail = layout.advance(tail, by: count)
        layout.tail.pointee.store(tail, ordering: .releasing)
    }

    /// Pushes one element. Returns false, and writes nothing, when the ring is full.
    @inlinable
    public mutating func push(_ element: Element) -> Bool {
        guard freeSlots(atLeast: 1) >= 1 else { return false }
        (layout.storage + layout.slot(tail)).initialize(to: element)
        commit(1)
        return true
    }

    /// Copies as many elements of `elements` as fit, in order, and returns how many.
    @inlinable
    public mutating func push(contentsOf elements: UnsafeBufferPointer<Element>) -> Int {
        let regions = writableRegions(maximum: elements.count)
        guard regions.count > 0, let source = elements.baseAddress else { return 0 }
        // SAFETY: the regions are free slots owned by this producer until commit, and
        // `source` holds at least regions.count elements.
        if let first = regions.first.baseAddress {
            first.initialize(from: source, count: regions.first.count)
        }
        if let second = regions.second.baseAddress {
            second.initialize(from: source + regions.first.count, count: regions.second.count)
        }
        commit(regions.count)
        return regions.count
    }

    /// Copies all of `elements`, or nothing when they do not all fit.
    /// - Throws: `RingError.tooFewSlots` carrying the free slots there were.
    @inlinable
    public mutating func pushAll(_ elements: UnsafeBufferPointer<Element>) throws(RingError) {
        let free = freeSlots(atLeast: elements.count)
        guard free >= elements.count else { throw .tooFewSlots(available: free) }
        _ = push(contentsOf: elements)
    }
}

// MARK: - Gauge

/// How full a ring is, read from any thread without taking part in it: a third party's view
/// (a meter of a link's fill) that leaves the producer and consumer their SPSC contract. The
/// two positions are loaded one after the other, so a reading may be a step stale, never out
/// of `0...capacity`.
public struct RingGauge: @unchecked Sendable {
    // SAFETY (@unchecked Sendable): it reads only the two atomic positions, kept alive by
    // `owner` (the ring's storage), and never writes.
    private let owner: AnyObject
    private let head: UnsafeMutablePointer<Atomic<Int>>
    private let tail: UnsafeMutablePointer<Atomic<Int>>
    /// The number of elements the ring holds when full.
    public let capacity: Int

    init<Element>(core: RingCore<Element>) {
        owner = core
        let layout = RingLayout(core)
        head = layout.head
        tail = layout.tail
        capacity = layout.capacity
    }

    /// Elements in the ring now (written, not yet read).
    public var count: Int {
        let end = tail.pointee.load(ordering: .relaxed)
        let start = head.pointee.load(ordering: .relaxed)
        let difference = end - start
        return min(max(difference < 0 ? difference + 2 * capacity : difference, 0), capacity)
    }
}

// MARK: - Consumer

/// The reading half of a ring. Use it from one thread at a time.
public struct RingConsumer<Element: BitwiseCopyable>: ~Copyable, @unchecked Sendable {
    // SAFETY (@unchecked Sendable): a consumer is unique (~Copyable); moving it to another
    // thread transfers the right to read.
    @usableFromInline let layout: RingLayout<Element>
    @usableFromInline var head = 0
    /// The producer's position as last seen; reloaded only when the ring looks empty.
    @usableFromInline var cachedTail = 0
    let owner: RingCore<Element>

    init(core: RingCore<Element>) {
        owner = core
        layout = RingLayout(core)
    }

    /// [control-thread] The shared line the consumer reads to find new elements (the
    /// producer's position).
    public var producerPositionLine: UnsafeRawPointer { UnsafeRawPointer(layout.tail) }

    deinit {
        layout.leave()
    }

    @inlinable public var capacity: Int { layout.capacity }

    /// True once the producer has been dropped: what is readable now is all there will be.
    public var isAbandoned: Bool { layout.peerHasLeft }

    /// Elements ready to read right now.
    @inlinable
    public mutating func availableElements() -> Int {
        cachedTail = layout.tail.pointee.load(ordering: .acquiring)
        return layout.distance(from: head, to: cachedTail)
    }

    @inlinable @inline(__always)
    mutating func readable(atLeast wanted: Int) -> Int {
        let ready = layout.distance(from: head, to: cachedTail)
        if ready >= wanted { return ready }
        cachedTail = layout.tail.pointee.load(ordering: .acquiring)
        return layout.distance(from: head, to: cachedTail)
    }

    /// Up to `maximum` readable elements as two contiguous read-only regions, oldest first.
    /// Read them, then `release` how many you are done with.
    @inlinable
    public mutating func readableRegions(maximum: Int = .max) -> ReadableRingRegions<Element> {
        let ready = readable(atLeast: maximum)
        let (first, second) = layout.regions(at: head, count: min(ready, maximum))
        return ReadableRingRegions(first: UnsafeBufferPointer(first), second: UnsafeBufferPointer(second))
    }

    /// Frees the oldest `count` elements of the last `readableRegions` for the producer.
    @inlinable
    public mutating func release(_ count: Int) {
        precondition(
            count >= 0 && count <= layout.distance(from: head, to: cachedTail),
            "release(\(count)) exceeds the readable elements")
        head = layout.advance(head, by: count)
        layout.head.pointee.store(head, ordering: .releasing)
    }

    /// Pops the oldest element, or nil when the ring is empty.
    @inlinable
    public mutating func pop() -> Element? {
        guard readable(atLeast: 1) >= 1 else { return nil }
        let element = layout.storage[layout.slot(head)]
        release(1)
        return element
    }

    /// The oldest element without removing it, or nil when the ring is empty.
    @inlinable
    public mutating func peek() -> Element? {
        guard readable(atLeast: 1) >= 1 else { return nil }
        return layout.storage[layout.slot(head)]
    }

    /// Copies up to `destination.count` of the oldest elements out, and returns how many.
    @inlinable
    public mutating func pop(into destination: UnsafeMutableBufferPointer<Element>) -> Int {
        let regions = readableRegions(maximum: destination.count)
        guard regions.count > 0, let target = destination.baseAddress else { return 0 }
        // SAFETY: the regions hold committed elements that the producer will not touch until
        // release, and `target` has room for regions.count elements.
        if let first = regions.first.baseAddress {
            target.initialize(from: first, count: regions.first.count)
        }
        if let second = regions.second.baseAddress {
            (target + regions.first.count).initialize(from: second, count: regions.second.count)
        }
        release(regions.count)
        return regions.count
    }

    /// Drops up to `count` of the oldest elements without reading them; returns how many.
    @inlinable
    public mutating func skip(_ count: Int) -> Int {
        let dropped = min(count, readable(atLeast: count))
        release(dropped)
        return dropped
    }
}

// MARK: - Regions and errors

/// Two contiguous runs of free ring slots to write into: `first`, then `second` (empty unless
/// the run wraps).
public struct RingRegions<Element> {
    public let first: UnsafeMutableBufferPointer<Element>
    public let second: UnsafeMutableBufferPointer<Element>

    @inlinable
    init(first: UnsafeMutableBufferPointer<Element>, second: UnsafeMutableBufferPointer<Element>) {
        self.first = first
        self.second = second
    }

    /// Elements in both runs.
    @inlinable public var count: Int { first.count + second.count }
}

/// Two contiguous runs of readable elements, oldest first: `first`, then `second` (empty
/// unless the run wraps).
public struct ReadableRingRegions<Element> {
    public let first: UnsafeBufferPointer<Element>
    public let second: UnsafeBufferPointer<Element>

    @inlinable
    init(first: UnsafeBufferPointer<Element>, second: UnsafeBufferPointer<Element>) {
        self.first = first
        self.second = second
    }

    /// Elements in both runs.
    @inlinable public var count: Int { first.count + second.count }
}

/// Why a ring operation did nothing.
public enum RingError: Error, Equatable, Sendable {
    /// An all-or-nothing write needed more free slots than there were.
    case tooFewSlots(available: Int)
}
