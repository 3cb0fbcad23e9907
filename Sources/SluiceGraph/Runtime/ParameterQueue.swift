import SluiceRT
import Synchronization

/// The lock-free path of live parameter changes into one node, and of their
/// acknowledgements back: two SPSC rings, as a CLAP host hands `in_events` to `process` and
/// takes `out_events` back.
///
/// The control side may be called from any number of threads (each control client has its
/// own); a mutex makes them one producer. It is never taken on the audio side, which only pops
/// changes and pushes acknowledgements.
///
/// Threading: `send`/`takeAcknowledgements` [control-thread]; `hasPending`, `applyPending`
/// [audio-thread].
final class ParameterQueue: @unchecked Sendable {
    // Declared first: `hasPending`, the one read of every period, finds it on the object's
    // first line (`periodLines`).
    /// [audio-thread] How many changes wait in `held`.
    private var heldCount = 0
    /// [audio-thread] Changes taken from the ring that are timed for a later frame, sorted by
    /// frame, then sequence: each waits for its own frame while later changes that are due go
    /// ahead of it (a change timed an hour ahead must not hold back every change after it).
    /// Allocated at init, `capacity` of them.
    private let held: UnsafeMutablePointer<ParameterChange>

    // SAFETY (@unchecked Sendable): each ring half is used by one side only: `changesIn` and
    // `acknowledgementsOut` under `control`, `changesOut` and `acknowledgementsIn` by the
    // thread that runs the node's slot (one at a time: the worker, the JACK cycle or the
    // offline driver).

    /// Where a change was applied: the node's output frame (counted since the stream began)
    /// from which the new value holds.
    struct Acknowledgement: BitwiseCopyable {
        var sequence: UInt64
        var frame: Int
    }

    /// Changes one node may have in flight; a control client sending faster than periods run
    /// is told the queue is full.
    static let capacity = 256

    private struct ControlSide: ~Copyable {
        var changes: RingProducer<ParameterChange>
        var acknowledgements: RingConsumer<Acknowledgement>
        var nextSequence: UInt64 = 1
        /// Acknowledgements popped but not yet asked for, by sequence.
        var arrived: [UInt64: Int] = [:]
    }

    private let control: Mutex<ControlSide>
    private var changesOut: RingConsumer<ParameterChange>
    private var acknowledgementsIn: RingProducer<Acknowledgement>
    /// Posted when a change is queued: the thread that runs the node (the worker) wakes.
    let wake: WakeSignal?

    init(wake: WakeSignal?) {
        let changes = makeRing(of: ParameterChange.self, capacity: Self.capacity)
        let acknowledgements = makeRing(of: Acknowledgement.self, capacity: Self.capacity)
        control = Mutex(ControlSide(changes: changes.producer, acknowledgements: acknowledgements.consumer))
        changesOut = changes.consumer
        acknowledgementsIn = acknowledgements.producer
        self.wake = wake
        held = .allocate(capacity: Self.capacity)
    }

    deinit {
        held.deallocate()
    }

    /// [control-thread] Queues a change; returns its sequence number, or nil when the queue is
    /// full.
    func send(parameter: Int, value: Double, atFrame frame: Int = 0) -> UInt64? {
        let sequence = control.withLock { side -> UInt64? in
            let sequence = side.nextSequence
            guard side.changes.push(ParameterChange(parameter: parameter, value: value, sequence: sequence, frame: frame)) else {
                return nil
            }
            side.nextSequence += 1
            return sequence
        }
        if sequence != nil { wake?.post() }
        return sequence
    }

    /// [control-thread] The frame change `sequence` was applied at, once its acknowledgement
    /// has arrived (and not yet been asked for); nil before. Acknowledgements are collected
    /// under the lock, so each caller finds its own whoever popped it; those nobody asks for
    /// (a caller that stopped waiting) are forgotten once far behind.
    func acknowledgedFrame(of sequence: UInt64) -> Int? {
        control.withLock { side in
            while let acknowledgement = side.acknowledgements.pop() {
                side.arrived[acknowledgement.sequence] = acknowledgement.frame
            }
            if side.arrived.count > 4 * Self.capacity {
                let oldest = side.nextSequence &- UInt64(2 * Self.capacity)
                side.arrived = side.arrived.filter { $0.key >= oldest }
            }
            return side.arrived.removeValue(forKey: sequence)
        }
    }

    /// [control-thread] The memory `hasPending` reads: the queue and its ring's producer line.
    var periodLines: [UnsafeRawPointer] {
        cacheLines(of: self, count: 1) + [changesOut.producerPositionLine]
    }

    /// [audio-thread] Whether a change waits.
    func hasPending() -> Bool {
        heldCount > 0 || changesOut.availableElements() > 0
    }

    /// [audio-thread] Moves what the ring holds into `held`, in frame order, while there is
    /// room (what does not fit stays in the ring, behind, until there is).
    private func takeArrivals() {
        while heldCount < Self.capacity, let change = changesOut.pop() {
            var index = heldCount
            while index > 0 && held[index - 1].frame > change.frame {
                held[index] = held[index - 1]
                index -= 1
            }
            held[index] = change
            heldCount += 1
        }
    }

    /// [audio-thread] The output frame the next waiting change is timed for, when that is
    /// after `frame` (the node must stop there); nil when none waits or one is due.
    func nextTimedFrame(after frame: Int) -> Int? {
        takeArrivals()
        guard heldCount > 0, held[0].frame > frame else { return nil }
        return held[0].frame
    }

    /// [audio-thread] Applies the waiting changes that are due at output frame `frame`, each
    /// in the order of its frame (changes for the same frame in the order sent), acknowledging
    /// each at `frame`; changes timed later keep waiting, and hold back none sent after them.
    /// Returns whether any was applied.
    func applyPending(to node: any LiveParameterTaking, atOutputFrame frame: Int) -> Bool {
        takeArrivals()
        var due = 0
        while due < heldCount && held[due].frame <= frame {
            node.apply(held[due])
            // A full acknowledgement ring means nobody reads them; the change still holds.
            _ = acknowledgementsIn.push(Acknowledgement(sequence: held[due].sequence, frame: frame))
            due += 1
        }
        guard due > 0 else { return false }
        (held + 0).update(from: held + due, count: heldCount - due)
        heldCount -= due
        return true
    }
}
