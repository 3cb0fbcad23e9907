import SluiceAudio
import Synchronization

/// The real-time part of a live graph: what a device's process callback runs each period.
///
/// One period, in this order (the device calls each step):
/// 1. `captureRegions` / `commitCapture`: the device writes its inputs (JACK's capture ports)
///    into each device source's output edge;
/// 2. `process(frames:)`: every processor placed in the cycle moves that audio through, in
///    topological order, until nothing moves — what came in this period reaches the sinks in
///    this period;
/// 3. `render`: each device sink's playhead renders the period into the device's ports
///    (watermark, underrun and cancel fades, drain events).
///
/// Nodes that work frame for frame, linked only among themselves (`DirectSection`), skip the
/// rings: the device hands a direct source's period over with `capture(_:from:)` (or
/// `captureBuffer`), and binds a direct sink's port with `playInPlace` before `process`.
///
/// Threading: the steps above are [audio-thread]: they allocate nothing, take no lock and do
/// no I/O (checked by the allocation and RealtimeSanitizer tests). The rest is
/// [control-thread], called before the device starts or after it stops.
public final class GraphCycle: @unchecked Sendable {
    /// The most frames one period may hold; a device with larger periods plays silence.
    public static let maximumFrames = 8192

    struct Capture {
        let name: String
        let node: any Node
        /// The ring into the nodes after it, or nil when it feeds the direct section.
        let writer: FrameEdgeWriter?
        let channels: Int
        /// Its link in the direct section, or nil.
        let directLink: Int?
    }

    struct Playback {
        let name: String
        let node: any Node
        let playhead: Playhead
        /// The direct section's link into it, or nil when it plays from its ring.
        let directLink: Int?
    }

    /// The processors that step between rings.
    let processors: [ProcessorSlot]
    /// The nodes that run frame for frame on the period's buffers, when any do.
    let direct: DirectSection?
    let captures: [Capture]
    let playbacks: [Playback]
    /// Frames the cycle's nodes delay audio from capture `c` to playback `p`
    /// (`latencies[p][c]`), or nil where no path joins them.
    private let latencies: [[Int?]]
    private let overrunCount = Atomic<Int>(0)
    private let periodCount = Atomic<Int>(0)

    /// Debug builds: `process` runs on one thread at a time, and control functions never on it.
    let threadCheck = ThreadTagCheck("GraphCycle.process")

    /// A device source as the audio thread reads it.
    private struct CaptureRecord {
        let writer: Unmanaged<FrameEdgeWriter>?
        let channels: Int
        /// Its link in the direct section, or -1.
        let link: Int
    }

    /// A device sink as the audio thread reads it.
    private struct PlaybackRecord {
        let playhead: Unmanaged<Playhead>
        /// Its link in the direct section, or -1.
        let link: Int
        /// Its playhead's dry spells at the last period, to see a new one.
        var seenDrySpells: Int
    }

    // What the audio thread touches, as plain records of unretained references: reading a
    // class reference out of an array (or a struct of them) retains and releases it, on the
    // JACK thread, every period; and each record holds what one endpoint needs, since the
    // callback finds its memory cold and pays for every cache line it touches.
    // SAFETY: filled in `init` from the arrays above, which own the objects for the cycle's
    // life; only `seenDrySpells` changes, on the audio thread.
    private let processorRefs: UnsafeMutablePointer<Unmanaged<ProcessorSlot>>
    private let captureRecords: UnsafeMutablePointer<CaptureRecord>
    private let playbackRecords: UnsafeMutablePointer<PlaybackRecord>
    private let processorCount: Int
    private let playbackRecordCount: Int
    // SAFETY: `direct` outlives the cycle's periods; read without retaining.
    private let directRef: Unmanaged<DirectSection>?

    /// The shape of the cycle when it is one of the two a live graph usually has, which a
    /// device may run with one call a period (`renderRingSink`, `runChain`) instead of the
    /// steps above: fewer functions, records and lines for a callback that finds them cold.
    public enum Plan: Int, Sendable {
        /// Anything else: the device calls the steps.
        case general
        /// One mono device sink playing from its ring, nothing else in the cycle (speech, a
        /// file, a tone: `tone ! jack.sink`).
        case ringSink
        /// One mono device source, frame-for-frame processors, one mono device sink, all on the
        /// period's buffers (`jack.source -> fader -> jack.sink`).
        case chain
    }
    public let plan: Plan
    // SAFETY: the one playhead of a `ringSink` or `chain` plan, owned by `playbacks`.
    private let planPlayhead: Unmanaged<Playhead>?
    /// A `chain` plan's capture and playback links in the direct section.
    private let planCaptureLink: Int
    private let planPlaybackLink: Int

    /// A `chain` plan's node as its period calls it when every node of the chain has a frame
    /// kernel (`DirectSection.kernelChain`): one record a node, without the direct section's
    /// links and step records.
    private struct ChainStep {
        // SAFETY: the direct section's steps own the slot for the cycle's life.
        let slot: Unmanaged<ProcessorSlot>
        /// The buffer it writes, its output link's own; nil for the last, which writes the
        /// sink's buffer.
        let output: UnsafeMutablePointer<Float>?
    }
    // SAFETY: room for every step of the direct section, allocated in `init`, freed in
    // `deinit`; filled by `warmUp`, before the device runs the cycle, and read only by
    // `runChain`. `chainStepCount` is 0 when the chain is not all kernels.
    private let chainSteps: UnsafeMutablePointer<ChainStep>
    private var chainStepCount = 0

    /// [control-thread] The nodes a `chain` plan's period runs as kernels, one after another,
    /// without the direct section: all of them or none (0).
    var kernelChainLength: Int { chainStepCount }

    init(processors: [ProcessorSlot], direct: DirectSection?, captures: [Capture], playbacks: [Playback], latencies: [[Int?]]) {
        self.processors = processors
        processorCount = processors.count
        playbackRecordCount = playbacks.count
        self.direct = direct
        directRef = direct.map { .passUnretained($0) }
        self.captures = captures
        self.playbacks = playbacks
        self.latencies = latencies
        processorRefs = .allocate(capacity: max(1, processors.count))
        for (index, slot) in processors.enumerated() { (processorRefs + index).initialize(to: .passUnretained(slot)) }
        captureRecords = .allocate(capacity: max(1, captures.count))
        for (index, capture) in captures.enumerated() {
            (captureRecords + index).initialize(to: CaptureRecord(
                writer: capture.writer.map { .passUnretained($0) }, channels: capture.channels, link: capture.directLink ?? -1))
        }
        playbackRecords = .allocate(capacity: max(1, playbacks.count))
        for (index, playback) in playbacks.enumerated() {
            (playbackRecords + index).initialize(to: PlaybackRecord(
                playhead: .passUnretained(playback.playhead), link: playback.directLink ?? -1, seenDrySpells: 0))
        }
        let plan = Self.plan(processors: processors, direct: direct, captures: captures, playbacks: playbacks)
        self.plan = plan
        planPlayhead = plan == .general ? nil : .passUnretained(playbacks[0].playhead)
        planCaptureLink = plan == .chain ? captures[0].directLink! : -1
        planPlaybackLink = plan == .chain ? playbacks[0].directLink! : -1
        chainSteps = .allocate(capacity: max(1, direct?.steps.count ?? 0))
    }

    private static func plan(processors: [ProcessorSlot], direct: DirectSection?, captures: [Capture], playbacks: [Playback]) -> Plan {
        guard processors.isEmpty, playbacks.count == 1, playbacks[0].playhead.channels == 1 else { return .general }
        if captures.isEmpty && direct == nil && playbacks[0].directLink == nil { return .ringSink }
        if captures.count == 1, captures[0].channels == 1, captures[0].directLink != nil, playbacks[0].directLink != nil, direct != nil {
            return .chain
        }
        return .general
    }

    deinit {
        processorRefs.deallocate()
        captureRecords.deallocate()
        playbackRecords.deallocate()
        chainSteps.deallocate()
    }

    // MARK: Control side

    /// [control-thread] The index of the device source `node` (its `ObjectIdentifier`), or nil.
    public func captureIndex(of node: ObjectIdentifier) -> Int? {
        threadCheck.assertNotInside()
        return captures.firstIndex { ObjectIdentifier($0.node) == node }
    }

    /// [control-thread] The index of the device sink `node` (its `ObjectIdentifier`), or nil.
    public func playbackIndex(of node: ObjectIdentifier) -> Int? {
        threadCheck.assertNotInside()
        return playbacks.firstIndex { ObjectIdentifier($0.node) == node }
    }

    /// [control-thread] Rehearses every processor in the cycle on scratch buffers and resets
    /// it (`ProcessorSlot.rehearse`), then runs one empty pass, so that what Swift's runtime
    /// sets up on a code path's first use (generic metadata, under a lock) is set up here,
    /// before a device's real-time thread calls `process`. Call it before the sources start.
    public func warmUp(blockFrames: Int) {
        threadCheck.assertNotInside()
        for index in processors.indices { processors[index].rehearse(blockFrames: blockFrames) }
        for index in processors.indices { _ = processors[index].step() }
        if let direct {
            for step in direct.steps { step.slot.rehearse(blockFrames: blockFrames) }
            direct.warmUp(frames: blockFrames)
        }
        // The kernels are adopted now (in the direct section's warm-up).
        chainStepCount = 0
        if plan == .chain, let chain = direct?.kernelChain(from: planCaptureLink, to: planPlaybackLink) {
            for (index, step) in chain.enumerated() {
                (chainSteps + index).initialize(to: ChainStep(slot: .passUnretained(step.slot), output: step.output))
            }
            chainStepCount = chain.count
        }
        if plan != .general { rehearsePlan() }
    }

    /// [control-thread] Runs a period of `plan` on a throwaway cycle of that shape (its own
    /// playhead and direct section, no processors; this cycle's endpoint nodes stand in as
    /// names), for the same reason as `warmUp`: the plan's calls reach generic metadata of
    /// their own the first time.
    private func rehearsePlan() {
        let (_, playhead, _) = makeSinkEdge(
            rate: 48_000, channels: 1, capacityFrames: 64, fadeFrames: 16, watermarkFrames: 0, eventCapacity: 16, workerWake: nil)
        let silence = UnsafeMutablePointer<Float>.allocate(capacity: 64)
        let output = UnsafeMutablePointer<Float>.allocate(capacity: 64)
        defer {
            silence.deallocate()
            output.deallocate()
        }
        silence.initialize(repeating: 0, count: 64)
        let playback = Playback(name: "rehearsal", node: playbacks[0].node, playhead: playhead, directLink: plan == .chain ? 0 : nil)
        switch plan {
        case .ringSink:
            let cycle = GraphCycle(processors: [], direct: nil, captures: [], playbacks: [playback], latencies: [[]])
            cycle.renderRingSink(into: output, frames: 64)
        case .chain:
            let capture = Capture(name: "rehearsal", node: captures[0].node, writer: nil, channels: 1, directLink: 0)
            let cycle = GraphCycle(
                processors: [], direct: DirectSection(linkChannels: [1], steps: []), captures: [capture], playbacks: [playback],
                latencies: [[0]])
            cycle.runChain(from: silence, into: output, frames: 64)
        case .general:
            break
        }
    }

    /// [control-thread] The memory a period reads, a line each: the cycle, its records, the
    /// direct section, the processors and the playheads. A device fetches them all at the
    /// start of a period (`sluice_prefetch`), so the misses of a cold callback overlap instead
    /// of following each other's pointers.
    public var periodLines: [UnsafeRawPointer] {
        var lines = cacheLines(of: self, count: 2)
        // A plan's period does not read the records.
        if plan == .general {
            lines += [UnsafeRawPointer(processorRefs), UnsafeRawPointer(captureRecords), UnsafeRawPointer(playbackRecords)]
        }
        if chainStepCount > 0 {
            // The chain's kernels: their records and slots, not the direct section.
            lines.append(UnsafeRawPointer(chainSteps))
            for index in 0..<chainStepCount { lines += chainSteps[index].slot.takeUnretainedValue().periodLines }
        } else {
            lines += direct?.periodLines ?? []
        }
        for slot in processors { lines += slot.periodLines }
        // The playhead's atomics span several lines.
        for playback in playbacks { lines += cacheLines(of: playback.playhead, count: 4) }
        return lines
    }

    /// [control-thread] Device sinks in the cycle.
    public var playbackCount: Int { playbacks.count }

    /// [control-thread] Device sources in the cycle.
    public var captureCount: Int { captures.count }

    /// [control-thread] Channels device source `index` delivers each period.
    public func captureChannels(_ index: Int) -> Int { captures[index].channels }

    /// [control-thread] Channels device sink `index` plays.
    public func playbackChannels(_ index: Int) -> Int { playbacks[index].playhead.channels }

    /// [control-thread] The playhead of device sink `index`.
    public func playhead(_ index: Int) -> Playhead { playbacks[index].playhead }

    /// [control-thread] Frames the nodes in the cycle delay audio between device source
    /// `capture` and device sink `playback` (the largest over the paths), or nil when no path
    /// in the cycle joins them. JACK hears this through its latency callback.
    public func latency(fromCapture capture: Int, toPlayback playback: Int) -> Int? {
        latencies[playback][capture]
    }

    /// [any-thread] Periods in which a device source's input was dropped because the nodes
    /// after it had not taken the previous periods (never, unless a node stalls).
    public var overruns: Int { overrunCount.load(ordering: .relaxed) }

    /// [any-thread] Periods run so far.
    public var periods: Int { periodCount.load(ordering: .relaxed) }

    /// [any-thread] Names of the processors that run in the cycle: those on the period's
    /// buffers (`directProcessorNames`), then those between rings, each in order.
    public var processorNames: [String] { directProcessorNames + processors.map(\.name) }

    /// [any-thread] Names of the processors that run frame for frame on the period's buffers.
    public var directProcessorNames: [String] { direct?.processorNames ?? [] }

    // MARK: Audio thread

    /// [audio-thread] The room for `frames` frames of device source `index`, as up to two
    /// stretches of interleaved samples (the ring wraps), or nil when the edge lacks the
    /// room: the period is then dropped and counted as an overrun.
    public func captureRegions(_ index: Int, frames: Int) -> (first: UnsafeMutableBufferPointer<Float>, second: UnsafeMutableBufferPointer<Float>)? {
        let samples = frames * captureRecords[index].channels
        guard let writer = captureRecords[index].writer, let regions = writer._withUnsafeGuaranteedRef({ $0.writableSamples(samples) }) else {
            overrunCount.add(1, ordering: .relaxed)
            return nil
        }
        return regions
    }

    /// [audio-thread] Makes the `frames` frames written into `captureRegions` visible, and
    /// wakes the reader when it is the worker (a node mixing live input with a provider's).
    public func commitCapture(_ index: Int, frames: Int) {
        captureRecords[index].writer?._withUnsafeGuaranteedRef { writer in
            writer.commit(frames)
            writer.wakeReader()
        }
    }

    /// [audio-thread] Whether device source `index` feeds the direct section: its period is
    /// given with `capture(_:from:)` or written into `captureBuffer`, not into a ring.
    @inline(__always)
    public func capturesDirectly(_ index: Int) -> Bool { captureRecords[index].link >= 0 }

    /// [audio-thread] A direct device source of one channel: this period the nodes read
    /// `buffer` (the port's, `frames` samples) where they are, with no copy.
    @inline(__always)
    public func capture(_ index: Int, from buffer: UnsafeMutablePointer<Float>) {
        directRef?._withUnsafeGuaranteedRef { $0.bind(captureRecords[index].link, to: buffer) }
    }

    /// [audio-thread] A direct device source's own buffer, to interleave the period into
    /// (`GraphCycle.maximumFrames` frames of its channels).
    @inline(__always)
    public func captureBuffer(_ index: Int) -> UnsafeMutablePointer<Float> {
        directRef!._withUnsafeGuaranteedRef { $0.ownBuffer(captureRecords[index].link) }
    }

    /// [audio-thread] Before `process`: the nodes write device sink `index`'s period straight
    /// into `buffer` (its one port's), when a node writes its link; whether they will. Pass
    /// the same buffer to `render` then.
    @inline(__always)
    public func playInPlace(_ index: Int, into buffer: UnsafeMutablePointer<Float>) -> Bool {
        let link = playbackRecords[index].link
        guard link >= 0, let directRef else { return false }
        return directRef._withUnsafeGuaranteedRef { $0.bindOutput(link, to: buffer) }
    }

    /// [audio-thread] Runs the direct section over the period's `frames` frames, then every
    /// processor between rings until nothing moves (at most a few rounds: each takes all its
    /// input in one step unless its output is full).
    public func process(frames: Int) {
        threadCheck.enter()
        defer { threadCheck.exit() }
        countPeriod()
        // The direct section and the rest share no link, so either may go first.
        directRef?._withUnsafeGuaranteedRef { $0.process(frames: frames) }
        guard processorCount > 0 else { return }
        // A sink ran dry in the last period while its stream goes on (the next sentence has
        // not arrived): the processors release what they hold back, so what was received
        // plays out (the worker does the same for the processors it runs).
        var starved = false
        for index in 0..<playbackRecordCount {
            let drySpells = playbackRecords[index].playhead._withUnsafeGuaranteedRef { $0.drySpells }
            if drySpells != playbackRecords[index].seenDrySpells {
                playbackRecords[index].seenDrySpells = drySpells
                starved = true
            }
        }
        let count = processorCount
        if starved {
            for index in 0..<count { _ = processorRefs[index]._withUnsafeGuaranteedRef { $0.drain() } }
        }
        // Topological order: each processor moves all it can, so one pass usually moves the
        // period through. Another pass is needed only when a processor moved more than once in
        // a row — its output filled and the nodes after it made room.
        var rounds = 0
        var again = true
        while again && rounds < Self.maximumRounds {
            again = false
            for index in 0..<count {
                let steps = processorRefs[index]._withUnsafeGuaranteedRef { slot in
                    var steps = 0
                    while steps < Self.maximumRounds && slot.step() { steps += 1 }
                    return steps
                }
                if steps > 1 { again = true }
            }
            rounds += 1
        }
    }

    /// [audio-thread] One writer (the period's thread): a plain store, not a locked
    /// read-modify-write.
    @inline(__always)
    private func countPeriod() {
        periodCount.store(periodCount.load(ordering: .relaxed) &+ 1, ordering: .relaxed)
    }

    /// Passes over the cycle's processors in one period, at most.
    static let maximumRounds = 8

    /// [audio-thread] Renders device sink `index` into `output` (`frames` interleaved frames).
    ///
    /// - Returns: whether that sink's stream has finished.
    @discardableResult
    public func render(_ index: Int, into output: UnsafeMutablePointer<Float>, frames: Int) -> Bool {
        let playback = playbackRecords[index]
        let link = playback.link
        guard link >= 0, let directRef else {
            return playback.playhead._withUnsafeGuaranteedRef { $0.render(into: output, frames: frames) }
        }
        // The direct section made the period: in `output` already when the sink's link was
        // bound to it, else in the link's buffer.
        directRef._withUnsafeGuaranteedRef { direct in
            let made = direct.data[link]
            if made != output { output.update(from: made, count: frames * direct.channels(link)) }
            direct.unbind(link)
        }
        return playback.playhead._withUnsafeGuaranteedRef { $0.renderInPlace(output, frames: frames) }
    }
}

extension GraphCycle {
    /// [audio-thread] A whole period of a `ringSink` plan: the sink's playhead renders
    /// `frames` frames into `output` (its one port's buffer). What `process` and `render` do
    /// for such a cycle, in one call.
    ///
    /// - Returns: whether the stream has finished.
    @discardableResult
    public func renderRingSink(into output: UnsafeMutablePointer<Float>, frames: Int) -> Bool {
        threadCheck.enter()
        defer { threadCheck.exit() }
        countPeriod()
        return planPlayhead.unsafelyUnwrapped._withUnsafeGuaranteedRef { $0.render(into: output, frames: frames) }
    }

    /// [audio-thread] A whole period of a `chain` plan: the nodes read `input` (the source's
    /// port buffer) and the last writes `output` (the sink's), then the playhead plays it in
    /// place. What `capture`, `playInPlace`, `process` and `render` do for such a cycle, in
    /// one call.
    ///
    /// - Returns: whether the stream has finished (cancelled).
    @discardableResult
    public func runChain(from input: UnsafeMutablePointer<Float>, into output: UnsafeMutablePointer<Float>, frames: Int) -> Bool {
        threadCheck.enter()
        defer { threadCheck.exit() }
        countPeriod()
        // Node by node through the kernels while they take the period; the rest, if any,
        // through the direct section.
        var done = 0
        var source = input
        while done < chainStepCount {
            let step = chainSteps[done]
            let target = step.output ?? output
            guard _fastPath(step.slot._withUnsafeGuaranteedRef { $0.kernelPeriod(from: source, into: target, frames: frames) }) else {
                break
            }
            source = target
            done &+= 1
        }
        if _slowPath(done < chainStepCount || chainStepCount == 0) { runChainSteps(from: done, input: input, output: output, frames: frames) }
        return planPlayhead.unsafelyUnwrapped._withUnsafeGuaranteedRef { $0.renderInPlace(output, frames: frames) }
    }

    /// [audio-thread] A `chain` plan's period through the direct section, from step `first`
    /// on: the steps before it have made their part through their kernels.
    @inline(never)
    private func runChainSteps(
        from first: Int, input: UnsafeMutablePointer<Float>, output: UnsafeMutablePointer<Float>, frames: Int
    ) {
        let captureLink = planCaptureLink, playbackLink = planPlaybackLink
        directRef.unsafelyUnwrapped._withUnsafeGuaranteedRef { direct in
            direct.bind(captureLink, to: input)
            _ = direct.bindOutput(playbackLink, to: output)
            direct.process(frames: frames, from: first)
            // A sink linked straight to the source (no node between) made nothing of its own.
            let made = direct.data[playbackLink]
            if _slowPath(made != output) { output.update(from: made, count: frames) }
            direct.unbind(playbackLink)
        }
    }
}

/// [control-thread] The first `count` cache lines of `object`, for `periodLines`.
func cacheLines(of object: AnyObject, count: Int) -> [UnsafeRawPointer] {
    let start = UnsafeRawPointer(Unmanaged.passUnretained(object).toOpaque())
    return (0..<count).map { start + 64 * $0 }
}
