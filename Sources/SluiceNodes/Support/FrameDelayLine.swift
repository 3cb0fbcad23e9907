/// A fixed-capacity FIFO of interleaved Float32 frames that a node holds back, with in-place
/// access to the frames it holds. The crossfader keeps an utterance's tail in one; the fader
/// keeps the frames an end-of-stream fade-out would shape.
///
/// Single-threaded; allocates only in `init`.
struct FrameDelayLine: ~Copyable {
    let channels: Int
    let capacity: Int
    private let samples: UnsafeMutablePointer<Float>
    /// Slot of the oldest frame.
    private var start = 0
    private(set) var count = 0

    init(channels: Int, capacity: Int) {
        precondition(channels > 0 && capacity >= 0)
        self.channels = channels
        self.capacity = capacity
        samples = .allocate(capacity: max(capacity * channels, 1))
        samples.initialize(repeating: 0, count: max(capacity * channels, 1))
    }

    deinit {
        samples.deallocate()
    }

    var freeFrames: Int { capacity - count }

    /// The `index`-th oldest frame's samples (valid while it is held).
    @inline(__always)
    func frame(_ index: Int) -> UnsafeMutablePointer<Float> {
        var slot = start + index
        if slot >= capacity { slot -= capacity }
        return samples + slot * channels
    }

    /// Appends `frames` frames from `source`. They must fit.
    mutating func append(_ source: UnsafePointer<Float>, frames: Int) {
        precondition(frames <= freeFrames, "delay line overflow")
        var copied = 0
        while copied < frames {
            var slot = start + count
            if slot >= capacity { slot -= capacity }
            let run = min(frames - copied, capacity - slot)
            // SAFETY: slot + run <= capacity, and `source` holds `frames` frames.
            (samples + slot * channels).update(
                from: source + copied * channels, count: run * channels)
            copied += run
            count += run
        }
    }

    /// Moves the oldest `frames` frames to `destination`.
    mutating func removeOldest(_ frames: Int, into destination: UnsafeMutablePointer<Float>) {
        precondition(frames <= count, "delay line underflow")
        var moved = 0
        while moved < frames {
            let run = min(frames - moved, capacity - start)
            // SAFETY: start + run <= capacity, and `destination` has room for `frames` frames.
            (destination + moved * channels).update(
                from: samples + start * channels, count: run * channels)
            moved += run
            start += run
            if start >= capacity { start -= capacity }
            count -= run
        }
    }

    mutating func removeAll() {
        start = 0
        count = 0
    }
}
