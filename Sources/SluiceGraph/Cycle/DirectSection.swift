/// The part of a live graph's cycle whose nodes pass audio through the period's own buffers
/// instead of rings: device sources, frame-for-frame processors and the device sinks they
/// feed, linked only among themselves (`CompiledGraph.directInCycle`).
///
/// Each link here is one buffer of a period's frames. The device binds a mono source's link
/// to its capture port's buffer and a mono sink's link to its playback port's buffer, so
/// `jack.source -> fader (length: 0) -> jack.sink` reads JACK's input and writes JACK's
/// output in one pass, as a C client does; wider links are interleaved into the section's
/// own buffers. A ring and its bookkeeping cost more per period than the work they carry
/// when the work is a period of frames in and out, and a ring's memory moves on every
/// period, so a callback that runs once in a few milliseconds finds it cold.
///
/// Threading: built and warmed up [control-thread]; `bind…`, `process` [audio-thread], one
/// thread at a time (the cycle's).
final class DirectSection {
    /// A frame-for-frame processor and the links (indices into the section's links) of its
    /// inputs and outputs, in port order.
    struct Step {
        let slot: ProcessorSlot
        let inputs: [Int]
        let outputs: [Int]
    }

    /// The processors, in topological order; they own what `stepRefs` points at.
    let steps: [Step]
    private let stepCount: Int
    let linkCount: Int
    /// Channels of each link.
    private let linkChannels: UnsafeMutablePointer<Int>
    /// Each link's own buffer: `GraphCycle.maximumFrames` interleaved frames.
    private let buffers: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    /// Where each link's audio is this period: its own buffer, or a port buffer it is bound to.
    let data: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    /// Whether a processor writes the link (a sink's link written by a device source is not:
    /// binding it to the sink's port would leave nothing to copy from).
    private let writtenByProcessor: UnsafeMutablePointer<Bool>
    // SAFETY: plain memory filled in `init` from `steps`, which outlives it; never changed
    // after. The audio thread reads unretained references, so no retain/release runs there.
    private let stepRefs: UnsafeMutablePointer<Unmanaged<ProcessorSlot>>
    /// For each step, where its input links start in `stepLinks` (outputs follow the inputs).
    private let stepLinkStarts: UnsafeMutablePointer<Int>
    private let stepInputCounts: UnsafeMutablePointer<Int>
    private let stepLinks: UnsafeMutablePointer<Int>

    /// - Parameters:
    ///   - linkChannels: the channels of each link.
    ///   - steps: the processors in topological order, with their links.
    init(linkChannels channels: [Int], steps: [Step]) {
        self.steps = steps
        stepCount = steps.count
        linkCount = channels.count
        let links = max(1, channels.count)
        linkChannels = .allocate(capacity: links)
        linkChannels.initialize(repeating: 0, count: links)
        buffers = .allocate(capacity: links)
        data = .allocate(capacity: links)
        writtenByProcessor = .allocate(capacity: links)
        writtenByProcessor.initialize(repeating: false, count: links)
        for (link, count) in channels.enumerated() {
            linkChannels[link] = count
            let buffer = UnsafeMutablePointer<Float>.allocate(capacity: GraphCycle.maximumFrames * count)
            buffer.initialize(repeating: 0, count: GraphCycle.maximumFrames * count)
            (buffers + link).initialize(to: buffer)
            (data + link).initialize(to: buffer)
        }
        stepRefs = .allocate(capacity: max(1, steps.count))
        stepLinkStarts = .allocate(capacity: max(1, steps.count))
        stepInputCounts = .allocate(capacity: max(1, steps.count))
        let total = steps.reduce(0) { $0 + $1.inputs.count + $1.outputs.count }
        stepLinks = .allocate(capacity: max(1, total))
        var next = 0
        for (index, step) in steps.enumerated() {
            (stepRefs + index).initialize(to: .passUnretained(step.slot))
            (stepLinkStarts + index).initialize(to: next)
            (stepInputCounts + index).initialize(to: step.inputs.count)
            for link in step.inputs + step.outputs {
                (stepLinks + next).initialize(to: link)
                next += 1
            }
            for link in step.outputs { writtenByProcessor[link] = true }
        }
    }

    deinit {
        for link in 0..<linkCount { buffers[link].deallocate() }
        linkChannels.deallocate()
        buffers.deallocate()
        data.deallocate()
        writtenByProcessor.deallocate()
        stepRefs.deallocate()
        stepLinkStarts.deallocate()
        stepInputCounts.deallocate()
        stepLinks.deallocate()
    }

    // MARK: Control side

    /// [control-thread] Runs one period of silence through every step and resets them, so what
    /// Swift's runtime sets up on a code path's first use is set up before the real-time
    /// thread runs it (`ProcessorSlot.rehearse` has rehearsed the nodes themselves).
    func warmUp(frames: Int) {
        for link in 0..<linkCount {
            data[link] = buffers[link]
            buffers[link].update(repeating: 0, count: GraphCycle.maximumFrames * linkChannels[link])
        }
        process(frames: min(max(1, frames), GraphCycle.maximumFrames))
        for step in steps { step.slot.resetPeriods() }
    }

    /// [control-thread] The names of the processors in the section, in order.
    var processorNames: [String] { steps.map(\.slot.name) }

    // MARK: Audio thread

    /// [audio-thread] Channels of link `link`.
    @inline(__always)
    func channels(_ link: Int) -> Int { linkChannels[link] }

    /// [audio-thread] The link's own buffer, to interleave a period into; the link reads from
    /// it this period.
    @inline(__always)
    func ownBuffer(_ link: Int) -> UnsafeMutablePointer<Float> {
        data[link] = buffers[link]
        return buffers[link]
    }

    /// [audio-thread] This period, link `link` is the device's buffer `buffer` (a mono port's):
    /// read from it in place of a copy.
    @inline(__always)
    func bind(_ link: Int, to buffer: UnsafeMutablePointer<Float>) {
        data[link] = buffer
    }

    /// [audio-thread] Binds a sink's link to its port's buffer when a processor writes it, so
    /// the last node writes the port directly; whether it did.
    @inline(__always)
    func bindOutput(_ link: Int, to buffer: UnsafeMutablePointer<Float>) -> Bool {
        guard writtenByProcessor[link] else { return false }
        data[link] = buffer
        return true
    }

    /// [audio-thread] Link `link` reads from its own buffer again (after a period bound to a
    /// port's, which JACK may move).
    @inline(__always)
    func unbind(_ link: Int) {
        data[link] = buffers[link]
    }

    /// [audio-thread] Every step once over `frames` frames, in topological order.
    func process(frames: Int) {
        for index in 0..<stepCount {
            let links = stepLinks + stepLinkStarts[index]
            stepRefs[index]._withUnsafeGuaranteedRef { slot in
                slot.processPeriod(edgeData: data, inputEdges: links, outputEdges: links + stepInputCounts[index], frames: frames)
            }
        }
    }
}
