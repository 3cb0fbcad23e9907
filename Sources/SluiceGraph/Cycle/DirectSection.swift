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

    /// The processors, in topological order; they own what `stepRecords` points at.
    let steps: [Step]
    private let stepCount: Int
    let linkCount: Int

    /// What the audio thread reads of a link, together on as few cache lines as can be: the
    /// callback runs once in a few milliseconds and finds its memory cold, so every line it
    /// touches is a miss (measured: the same period run twice costs 0.2 µs the second time
    /// and 1.7 µs the first).
    private struct Link {
        /// Its own buffer: `GraphCycle.maximumFrames` interleaved frames.
        let buffer: UnsafeMutablePointer<Float>
        let channels: Int
        /// Whether a processor writes the link (a sink's link written by a device source is
        /// not: binding it to the sink's port would leave nothing to copy from).
        var writtenByProcessor: Bool
    }

    /// A step as the audio thread reads it.
    private struct StepRecord {
        // SAFETY: `steps` owns the slot for the section's life.
        let slot: Unmanaged<ProcessorSlot>
        /// Where its input links start in `stepLinks`; its outputs follow them.
        let firstLink: Int
        let inputCount: Int
    }

    // SAFETY: plain memory filled in `init` and freed in `deinit`; the audio thread changes only
    // `data`.
    private let links: UnsafeMutablePointer<Link>
    private let stepRecords: UnsafeMutablePointer<StepRecord>
    private let stepLinks: UnsafeMutablePointer<Int>
    /// Where each link's audio is this period: its own buffer, or a port buffer it is bound to.
    let data: UnsafeMutablePointer<UnsafeMutablePointer<Float>>

    /// - Parameters:
    ///   - linkChannels: the channels of each link.
    ///   - steps: the processors in topological order, with their links.
    init(linkChannels channels: [Int], steps: [Step]) {
        self.steps = steps
        stepCount = steps.count
        linkCount = channels.count
        let linkCapacity = max(1, channels.count)
        links = .allocate(capacity: linkCapacity)
        data = .allocate(capacity: linkCapacity)
        for (link, count) in channels.enumerated() {
            let buffer = UnsafeMutablePointer<Float>.allocate(capacity: GraphCycle.maximumFrames * count)
            buffer.initialize(repeating: 0, count: GraphCycle.maximumFrames * count)
            (links + link).initialize(to: Link(buffer: buffer, channels: count, writtenByProcessor: false))
            (data + link).initialize(to: buffer)
        }
        stepRecords = .allocate(capacity: max(1, steps.count))
        let total = steps.reduce(0) { $0 + $1.inputs.count + $1.outputs.count }
        stepLinks = .allocate(capacity: max(1, total))
        var next = 0
        for (index, step) in steps.enumerated() {
            (stepRecords + index).initialize(to: StepRecord(slot: .passUnretained(step.slot), firstLink: next, inputCount: step.inputs.count))
            for link in step.inputs + step.outputs {
                (stepLinks + next).initialize(to: link)
                next += 1
            }
            for link in step.outputs { links[link].writtenByProcessor = true }
        }
    }

    deinit {
        for link in 0..<linkCount { links[link].buffer.deallocate() }
        links.deinitialize(count: linkCount)
        links.deallocate()
        data.deallocate()
        stepRecords.deallocate()
        stepLinks.deallocate()
    }

    // MARK: Control side

    /// [control-thread] Runs one period of silence through every step and resets them, so what
    /// Swift's runtime sets up on a code path's first use is set up before the real-time
    /// thread runs it (`ProcessorSlot.rehearse` has rehearsed the nodes themselves).
    func warmUp(frames: Int) {
        for step in steps { step.slot.adoptFrameKernel() }
        for link in 0..<linkCount {
            unbind(link)
            links[link].buffer.update(repeating: 0, count: GraphCycle.maximumFrames * links[link].channels)
        }
        process(frames: min(max(1, frames), GraphCycle.maximumFrames))
        for step in steps { step.slot.resetPeriods() }
    }

    /// [control-thread] The memory a period of the section reads.
    var periodLines: [UnsafeRawPointer] {
        var lines = cacheLines(of: self, count: 1)
        lines += [UnsafeRawPointer(links), UnsafeRawPointer(data), UnsafeRawPointer(stepRecords), UnsafeRawPointer(stepLinks)]
        for step in steps { lines += step.slot.periodLines }
        return lines
    }

    /// [control-thread] The steps as one chain of frame kernels from link `first` to link
    /// `last` — each step's one input the link before it, each adopting a kernel — with the
    /// own buffer each writes, nil for the last (it writes `last`, bound to the device's
    /// buffer); nil when they are not such a chain (or there are none). Call after `warmUp`.
    func kernelChain(from first: Int, to last: Int) -> [(slot: ProcessorSlot, output: UnsafeMutablePointer<Float>?)]? {
        guard !steps.isEmpty else { return nil }
        var chain: [(slot: ProcessorSlot, output: UnsafeMutablePointer<Float>?)] = []
        var previous = first
        for (index, step) in steps.enumerated() {
            guard step.inputs == [previous], step.outputs.count == 1, step.slot.hasFrameKernel else { return nil }
            let output = step.outputs[0]
            let isLast = index == steps.count - 1
            guard isLast == (output == last) else { return nil }
            chain.append((step.slot, isLast ? nil : links[output].buffer))
            previous = output
        }
        return chain
    }

    /// [control-thread] The names of the processors in the section, in order.
    var processorNames: [String] { steps.map(\.slot.name) }

    // MARK: Audio thread

    /// [audio-thread] Channels of link `link`.
    @inline(__always)
    func channels(_ link: Int) -> Int { links[link].channels }

    /// [audio-thread] The link's own buffer, to interleave a period into; the link reads from
    /// it this period.
    @inline(__always)
    func ownBuffer(_ link: Int) -> UnsafeMutablePointer<Float> {
        unbind(link)
        return links[link].buffer
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
        guard links[link].writtenByProcessor else { return false }
        data[link] = buffer
        return true
    }

    /// [audio-thread] Link `link` reads from its own buffer again (after a period bound to a
    /// port's, which JACK may move).
    @inline(__always)
    func unbind(_ link: Int) {
        data[link] = links[link].buffer
    }

    /// [audio-thread] Every step from `first` on once over `frames` frames, in topological
    /// order.
    func process(frames: Int, from first: Int = 0) {
        for index in first..<stepCount {
            let step = stepRecords[index]
            let inputs = stepLinks + step.firstLink
            step.slot._withUnsafeGuaranteedRef { slot in
                slot.processPeriod(edgeData: data, inputEdges: inputs, outputEdges: inputs + step.inputCount, frames: frames)
            }
        }
    }
}
