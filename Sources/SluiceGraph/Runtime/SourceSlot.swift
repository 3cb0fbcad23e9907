import SluiceAudio
import Synchronization

/// Runs one source: offers it the room on its output edge, moves what it produced, and ends
/// the stream with an end-of-stream marker (after a discontinuity, when it failed, so what
/// was produced fades out). A text-driven source of a served graph (`survivesFailures`)
/// that fails does not end the stream: what it made fades out the same way, and it waits to
/// be made anew (`restart()`), for the next reply.
final class SourceSlot: @unchecked Sendable {
    let name: String
    let node: any SourceNode
    let ports: NodePorts
    let output: EdgeWriter
    /// Posted by the worker when room frees up on the output edge (live runs).
    let wake: WakeSignal?

    enum Step: Equatable {
        case progressed
        /// The output edge is full: backpressure.
        case full
        /// Nothing until the graph clock reaches this time.
        case waiting(until: Double)
        /// Produce returned with nothing (blocked on I/O, or woken).
        case idle
        /// It failed and waits for `restart()`: nothing until then.
        case suspended
        case finished
    }

    /// Marks where a text-driven source has spoken all its text with a discontinuity, so the
    /// nodes after it release what they hold back (a crossfader's tail, a fader's look-ahead)
    /// and the utterance plays to its end at once: a stream that waits for the next reply
    /// (`sluice serve`) rather than for the next sentence of one.
    var marksGapsWhenIdle = false
    /// Whether audio was produced since the last gap was marked.
    private var producedSinceGap = false
    /// Where the current reply began: the units produced before its first output, and when
    /// that came (bits; 0 before). `auto` measures production from here, so the wait between
    /// replies of a served graph does not count as slow synthesis.
    let segmentStartUnits = Atomic<Int>(0)
    private let segmentFirstOutputBits = Atomic<UInt64>(0)
    private var segmentPending = true

    /// Graph seconds when the current reply's first units were committed, or nil; any thread.
    var segmentFirstOutputGraphTime: Double? {
        let bits = segmentFirstOutputBits.load(ordering: .acquiring)
        return bits == 0 ? nil : Double(bitPattern: bits)
    }

    /// Audio produced since the current reply began; any thread.
    var segmentProducedSeconds: Double {
        let units = producedUnits.load(ordering: .relaxed) - segmentStartUnits.load(ordering: .relaxed)
        return Double(units) / Double(output.format.unitsPerSecond)
    }

    private(set) var isFinished = false
    /// The failure that ended the stream, or nil.
    private(set) var failure: SourceFailure?
    /// The source's failures for other threads (a served graph's events and `/metrics`): the
    /// last, and how many there were by code.
    let failures = Mutex(Failures())
    struct Failures: Sendable {
        var last: SourceFailure?
        var count = 0
        var byCode: [String: Int] = [:]
    }

    /// Served graphs: a failure does not end the stream; the source waits for `restart()`.
    /// Set before the run starts, for text-driven sources only.
    var survivesFailures = false
    /// It failed and waits for `restart()` (set by the source thread, cleared by the caller
    /// of `restart`).
    let awaitingRestart = Atomic<Bool>(false)
    /// The discontinuity that fades out what a failed source made is still to be marked.
    private var cutPending = false
    private var waitingUntil: Double?
    private var endPending = false
    // Timings: wall seconds inside `produce`, graph seconds spent waiting to be due.
    private(set) var firstOutputTime: Double?
    /// Monotonic wall seconds when the source's first units were committed to the graph (the
    /// start of the pipeline latency, `RunReport.pipelineLatency`).
    private(set) var firstOutputWallTime: Double?
    private(set) var finishTime: Double?
    private var busySeconds = 0.0
    private var waitingSince: Double?
    private var waitingSeconds = 0.0
    /// Units produced so far; read by the flow controller on another thread.
    let producedUnits = Atomic<Int>(0)
    /// `firstOutputTime`'s bits (0: none yet), for the flow controller on another thread.
    private let firstOutputTimeBits = Atomic<UInt64>(0)

    /// Graph seconds when the first units were committed, or nil; any thread.
    var firstOutputGraphTime: Double? {
        let bits = firstOutputTimeBits.load(ordering: .acquiring)
        return bits == 0 ? nil : Double(bitPattern: bits)
    }
    let finished = Atomic<Bool>(false)

    private let minimumRoom: Int

    /// The source as a text-driven one, or nil.
    private let textSource: (any TextDrivenSource)?

    /// Whether the source thread sleeps because the source has spoken all its text
    /// (`waitsForText`); set and cleared by that thread, read by the control loop, which
    /// needs not look for an `auto` watermark to size meanwhile (LiveRun).
    let sleepsForText = Atomic<Bool>(false)

    /// [source-thread] Whether the source has spoken all the text it was given and waits for
    /// more: nothing comes of looking at it until text arrives, which posts `wake`
    /// (`TextDrivenSource.onTextArrival`).
    var waitsForText: Bool { textSource?.hasSpokenAllText == true }

    /// - Parameter chunked: offer room only once a quarter of the edge is free. Not for an
    ///   edge straight into a sink, whose playhead may wait for it to be full.
    /// The source's live parameter changes (a `LiveParameterSource` with a frames output), or nil.
    let parameters: ParameterQueue?
    private let liveSource: (any LiveParameterSource)?

    init(name: String, node: any SourceNode, ports: NodePorts, output: EdgeWriter, wake: WakeSignal?, chunked: Bool) {
        textSource = node as? any TextDrivenSource
        if let live = node as? any LiveParameterSource, case .frames = output.format {
            liveSource = live
            parameters = ParameterQueue(wake: wake)
        } else {
            liveSource = nil
            parameters = nil
        }
        minimumRoom = chunked ? max(1, output.capacityUnits / 4) : 1
        self.name = name
        self.node = node
        self.ports = ports
        self.output = output
        self.wake = wake
    }

    var producedSeconds: Double {
        Double(producedUnits.load(ordering: .relaxed)) / Double(output.format.unitsPerSecond)
    }

    /// One call to the source at graph time `time`.
    func step(at time: Double) -> Step {
        if isFinished { return .finished }
        if endPending { return pushEnd(at: time) }
        if awaitingRestart.load(ordering: .acquiring) { return markCut() }
        // Restarted before there was room to mark the cut: the source made anew marks it.
        cutPending = false
        if endRequested.load(ordering: .acquiring), failure == nil {
            failure = failures.withLock { $0.last }
            endPending = true
            return pushEnd(at: time)
        }
        if let until = waitingUntil {
            guard time >= until else { return .waiting(until: until) }
            waitingUntil = nil
        }
        // A source is offered room once `minimumRoom` is free, so it reads and produces in
        // chunks rather than a block's worth at a time (fewer reads, fewer wakes).
        guard output.freeUnits() >= minimumRoom, output.markerRoom() >= NodePorts.markerCapacity else { return .full }
        let region = output.writableRegion()
        if let since = waitingSince {
            waitingSeconds += time - since
            waitingSince = nil
        }
        var units = region.units
        if let parameters, let liveSource, parameters.hasPending() {
            // Changes due at the next frame apply before it; the call stops at the next timed one.
            let frame = producedUnits.load(ordering: .relaxed)
            _ = parameters.applyPending(to: liveSource, atOutputFrame: frame)
            if let next = parameters.nextTimedFrame(after: frame) { units = min(units, next - frame) }
        }
        ports.setOutput(0, base: region.base, units: units)
        var io = ProcessIO(ports)
        let called = monotonicSeconds()
        let status = node.produce(&io, at: time)
        busySeconds += monotonicSeconds() - called
        let produced = ports.produced(output: 0)
        flushMarkers()
        if produced > 0 {
            output.commit(produced)
            if firstOutputTime == nil {
                firstOutputTime = time
                firstOutputWallTime = monotonicSeconds()
                // A 0 s first output is stored as the smallest positive double: 0 means none.
                firstOutputTimeBits.store(max(time, .leastNonzeroMagnitude).bitPattern, ordering: .releasing)
            }
            producedUnits.add(produced, ordering: .relaxed)
            output.wakeReader()
        }
        if produced > 0 {
            producedSinceGap = true
            if segmentPending {
                segmentPending = false
                segmentStartUnits.store(producedUnits.load(ordering: .relaxed) - produced, ordering: .relaxed)
                segmentFirstOutputBits.store(max(time, .leastNonzeroMagnitude).bitPattern, ordering: .releasing)
            }
        }
        if marksGapsWhenIdle && producedSinceGap, case .more = status, produced == 0,
            waitsForText, output.markerRoom() >= 1
        {
            output.push(Marker(position: output.writtenUnits.load(ordering: .relaxed), event: .discontinuity, isDiscontinuous: true))
            output.wakeReader()
            producedSinceGap = false
            segmentPending = true
            return .progressed
        }
        switch status {
        case .more:
            return produced > 0 ? .progressed : .idle
        case .waiting(let until):
            waitingUntil = until
            waitingSince = time
            return produced > 0 ? .progressed : .waiting(until: until)
        case .finished:
            endPending = true
            return pushEnd(at: time)
        case .failed(let failure):
            failures.withLock { failures in
                failures.last = failure
                failures.count += 1
                failures.byCode[failure.code, default: 0] += 1
            }
            if survivesFailures {
                cutPending = true
                producedSinceGap = false
                segmentPending = true
                awaitingRestart.store(true, ordering: .releasing)
                return markCut()
            }
            self.failure = failure
            endPending = true
            return pushEnd(at: time)
        }
    }

    /// [any-thread] After a failure a served graph answered (it made the source anew and
    /// accounted for the text it lost): the source goes on with the next text.
    func restart() {
        awaitingRestart.store(false, ordering: .releasing)
        wake?.post()
    }

    /// [any-thread] After a failure the source cannot recover from: it ends its stream.
    func endAfterFailure() {
        endRequested.store(true, ordering: .releasing)
        awaitingRestart.store(false, ordering: .releasing)
        wake?.post()
    }
    private let endRequested = Atomic<Bool>(false)

    /// While a failed source waits: the discontinuity that fades out what it made, once
    /// there is room for it, then nothing.
    private func markCut() -> Step {
        guard cutPending else { return .suspended }
        guard output.markerRoom() >= 1 else { return .full }
        output.push(Marker(position: output.writtenUnits.load(ordering: .relaxed), event: .discontinuity, isDiscontinuous: true))
        output.wakeReader()
        cutPending = false
        return .suspended
    }

    private func pushEnd(at time: Double) -> Step {
        guard output.markerRoom() >= 2 else { return .full }
        let position = output.writtenUnits.load(ordering: .relaxed)
        if failure != nil { output.push(Marker(position: position, event: .discontinuity, isDiscontinuous: true)) }
        output.push(Marker(position: position, event: .endOfStream))
        output.wakeReader()
        endPending = false
        isFinished = true
        finishTime = time
        finished.store(true, ordering: .releasing)
        return .finished
    }

    private func flushMarkers() {
        let count = ports.markerCount(output: 0)
        guard count > 0 else { return }
        for index in 0..<count { output.push(ports.marker(index, output: 0)) }
        ports.removeMarkers(output: 0)
    }

    /// The source's real-time factor: seconds it took per second of audio, counting the wall
    /// time spent inside `produce` (synthesis, network waits) and the graph time it spent
    /// not yet due (a paced source), but not time spent waiting for room in a full edge.
    /// Nil before it produced anything.
    func realTimeFactor(now: Double) -> Double? {
        let seconds = producedSeconds
        guard seconds > 0 else { return nil }
        let waiting = waitingSeconds + (waitingSince.map { (finishTime ?? now) - $0 } ?? 0)
        return (busySeconds + waiting) / seconds
    }
}
