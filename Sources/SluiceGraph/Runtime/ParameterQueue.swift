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
        changesOut.availableElements() > 0
    }

    /// [audio-thread] The output frame the next waiting change is timed for, when that is
    /// after `frame` (the node must stop there); nil when none waits or it is due.
    func nextTimedFrame(after frame: Int) -> Int? {
        guard let change = changesOut.peek(), change.frame > frame else { return nil }
        return change.frame
    }

    /// [audio-thread] Applies the waiting changes that are due at output frame `frame`, in
    /// order (one timed later holds back those queued after it), acknowledging each at
    /// `frame`. Returns whether any was applied.
    func applyPending(to node: any LiveParameterNode, atOutputFrame frame: Int) -> Bool {
        var applied = false
        while let next = changesOut.peek(), next.frame <= frame, let change = changesOut.pop() {
            node.apply(change)
            // A full acknowledgement ring means nobody reads them; the change still holds.
            _ = acknowledgementsIn.push(Acknowledgement(sequence: change.sequence, frame: frame))
            applied = true
        }
        return applied
    }
}
