import SluiceAudio

/// Runs one processor between its edges, by the rule every driver follows — the worker, the
/// JACK cycle, the offline driver and SluiceTestKit's bench alike: deliver the markers each
/// input has reached, then offer the audio waiting (never past the next marker) and the room
/// free, then move what was used, emitted markers before the audio they describe.
@_spi(TestKit)
public final class ProcessorSlot {
    // What a period in the direct section reads, first, so that it shares one cache line with
    // nothing but the object's header (a callback that finds its memory cold pays per line).
    /// The node's `frameKernel`, taken apart (`adoptFrameKernel`), and the samples per frame
    /// it is handed.
    private var kernelFunction: FrameKernel.Function?
    private var kernelContext: UnsafeMutableRawPointer?
    private var kernelChannels = 0
    /// Output frames made in the cycle's direct section since the stream began (where its live
    /// parameter changes are timed), for a slot that runs there.
    private var periodFrames = 0
    // SAFETY: `parameters`, unretained, for the direct section's period: binding an optional
    // reference retains and releases it, an atomic write on a cold line every period.
    private let parametersRef: Unmanaged<ParameterQueue>?

    let name: String
    let node: any ProcessorNode
    let ports: NodePorts
    public let inputs: [EdgeReader]
    public let outputs: [EdgeWriter]
    /// Live parameter changes for the node, when it has live parameters.
    let parameters: ParameterQueue?
    private let liveNode: (any LiveParameterNode)?
    /// Whether an input is a `drop-oldest` link (its reader knows it before the slot is made).
    private let dropsOldest: Bool

    /// The edges as the last step that moved nothing saw them (see `isIdle`), or empty.
    private var idleState: UnsafeMutableBufferPointer<Int>
    private var idleKnown = false

    /// - Parameter parameterWake: posted when a live parameter change is queued (the thread
    ///   that runs this slot, if it sleeps).
    /// - Parameter parametersElsewhere: the node's live parameters are applied elsewhere (its
    ///   output gains, by a playhead): the slot takes no changes.
    public init(
        name: String, node: any ProcessorNode, ports: NodePorts, inputs: [EdgeReader], outputs: [EdgeWriter],
        parameterWake: WakeSignal? = nil, parametersElsewhere: Bool = false
    ) {
        self.name = name
        self.node = node
        self.ports = ports
        self.inputs = inputs
        self.outputs = outputs
        dropsOldest = inputs.contains { $0.oldestDropper != nil }
        liveNode = parametersElsewhere ? nil : node as? any LiveParameterNode
        parameters = liveNode == nil ? nil : ParameterQueue(wake: parameterWake)
        parametersRef = parameters.map { .passUnretained($0) }
        idleState = .allocate(capacity: 2 * (inputs.count + outputs.count) + 2)
        idleState.initialize(repeating: 0)
    }

    deinit {
        idleState.deallocate()
    }

    /// [control-thread] The memory a period of this slot reads: the slot, its node, its ports
    /// and their views, its parameter queue (the first two lines of each object).
    /// With a frame kernel adopted, the ports and their views are read only by the rare
    /// periods that go through `process`, so they are left out.
    var periodLines: [UnsafeRawPointer] {
        cacheLines(of: self, count: 2) + cacheLines(of: node, count: 2)
            + (kernelFunction == nil ? cacheLines(of: ports, count: 2) + ports.viewLines : [])
            + (parameters?.periodLines ?? [])
    }

    /// Whether a step would move nothing: the last one moved nothing, and since then no input
    /// has gained audio or a marker and no output has gained room. A processor's step depends
    /// only on its state and its edges, so it would move nothing again. Worth knowing on a
    /// worker that runs hundreds of processors (many voices), each woken by any edge: a
    /// skipped step costs a few atomic loads instead of a node call and its bookkeeping.
    /// Otherwise notes the edges, for `noteIdle`.
    private func isIdle(inputLimit: Int, outputLimit: Int) -> Bool {
        // Plain stores and compares, no closure: this runs on the JACK thread too, where a
        // capturing local function would allocate its context.
        var same = idleKnown
        var index = 0
        same = noteIdle(inputLimit, at: &index) && same
        same = noteIdle(outputLimit, at: &index) && same
        for port in inputs.indices {
            let input = inputs[port]
            same = noteIdle(input.readableRegion().units, at: &index) && same
            same = noteIdle(input.nextMarker()?.position ?? -1, at: &index) && same
        }
        for port in outputs.indices {
            let output = outputs[port]
            same = noteIdle(output.writableRegion().units, at: &index) && same
            same = noteIdle(output.markerRoom(), at: &index) && same
        }
        return same
    }

    /// Stores `value` at `index` (then the next index); whether it was there already.
    @inline(__always)
    private func noteIdle(_ value: Int, at index: inout Int) -> Bool {
        defer { index += 1 }
        guard idleState[index] != value else { return true }
        idleState[index] = value
        return false
    }

    /// [audio-thread] One round of markers and audio. Returns whether anything moved.
    ///
    /// - Parameters:
    ///   - inputLimit: the most units offered on each input (a test bench varies the split).
    ///   - outputLimit: the most units of room offered on each output.
    public func step(inputLimit: Int = .max, outputLimit: Int = .max) -> Bool {
        let changed = applyParameterChanges()
        // A change timed for a later frame: the node's output stops there, so the change
        // applies exactly at it on a later step.
        var outputLimit = outputLimit
        if let parameters, !outputs.isEmpty {
            let written = outputs[0].writtenUnits.load(ordering: .relaxed)
            if let timed = parameters.nextTimedFrame(after: written) { outputLimit = min(outputLimit, timed - written) }
        }
        if !changed && isIdle(inputLimit: inputLimit, outputLimit: outputLimit) {
            skipOldestBeyondKept()
            return false
        }
        let moved = move(inputLimit: inputLimit, outputLimit: outputLimit) || changed
        // Noted before the move, so the edges as they are now are known only if nothing moved.
        idleKnown = !moved
        skipOldestBeyondKept()
        return moved
    }

    /// A `drop-oldest` input keeps only its newest audio once the node has taken what it could
    /// (after the step, not before: the worker moves audio in batches larger than a link may
    /// keep, and a reader that keeps up takes each batch whole).
    @inline(__always)
    private func skipOldestBeyondKept() {
        guard dropsOldest else { return }
        for port in inputs.indices where inputs[port].oldestDropper != nil { inputs[port].skipOldest() }
    }

    /// Applies the live parameter changes that arrived, from the node's next output frame.
    private func applyParameterChanges() -> Bool {
        guard let parameters, parameters.hasPending() else { return false }
        return applyParameterChanges(atOutputFrame: outputs.isEmpty ? 0 : outputs[0].writtenUnits.load(ordering: .relaxed))
    }

    /// Applies the changes due at output frame `frame`. Rarely taken, so out of line.
    @inline(never)
    private func applyParameterChanges(atOutputFrame frame: Int) -> Bool {
        guard let parameters, let liveNode else { return false }
        return parameters.applyPending(to: liveNode, atOutputFrame: frame)
    }

    private func move(inputLimit: Int, outputLimit: Int) -> Bool {
        guard hasMarkerRoom() else { return false }
        var io = ProcessIO(ports)
        var moved = false
        clearOutputViews()
        for port in inputs.indices {
            let input = inputs[port]
            while let marker = input.takeReachedMarker() {
                if case .endOfStream = marker.event { ports.setEnded(port) }
                node.receive(marker, on: port, &io)
                flushMarkers()
                moved = true
                guard hasMarkerRoom() else { return true }
            }
        }
        for port in inputs.indices {
            let input = inputs[port]
            let region = input.readableUnits()
            ports.setInput(port, base: region.base, units: min(region.units, inputLimit))
        }
        openOutputViews(limit: outputLimit)
        node.process(&io)
        return finishCall() || moved
    }

    /// [audio-thread] Asks the node to release what it holds back (the sink ran dry).
    public func drain(outputLimit: Int = .max) -> Bool {
        idleKnown = false  // draining changes what the node holds
        guard hasMarkerRoom() else { return false }
        var io = ProcessIO(ports)
        for port in inputs.indices { ports.setInput(port, base: nil, units: 0) }
        openOutputViews(limit: outputLimit)
        node.drain(&io)
        return finishCall()
    }

    private func hasMarkerRoom() -> Bool {
        for port in outputs.indices where outputs[port].markerRoom() < NodePorts.markerCapacity { return false }
        return true
    }

    private func clearOutputViews() {
        for port in outputs.indices { ports.setOutput(port, base: nil, units: 0) }
    }

    private func openOutputViews(limit: Int) {
        for port in outputs.indices {
            let output = outputs[port]
            let region = output.writableRegion()
            ports.setOutput(port, base: region.base, units: min(region.units, limit))
        }
    }

    /// Markers go out before the audio they describe, so a reader on another thread never
    /// reads past a marker it has not seen.
    @discardableResult
    private func flushMarkers() -> Bool {
        var any = false
        for port in outputs.indices {
            let output = outputs[port]
            let count = ports.markerCount(output: port)
            guard count > 0 else { continue }
            for index in 0..<count { output.push(ports.marker(index, output: port)) }
            ports.removeMarkers(output: port)
            output.wakeReader()
            any = true
        }
        return any
    }

    private func finishCall() -> Bool {
        var moved = flushMarkers()
        for port in inputs.indices {
            let input = inputs[port]
            let consumed = ports.consumed(input: port)
            if consumed > 0 {
                input.release(consumed)
                moved = true
            }
        }
        for port in outputs.indices {
            let output = outputs[port]
            let produced = ports.produced(output: port)
            if produced > 0 {
                output.commit(produced)
                output.wakeReader()
                moved = true
            }
        }
        return moved
    }
}

extension ProcessorSlot {
    /// [audio-thread] One period of a frame-for-frame node in the cycle's direct section:
    /// `frames` frames at `edgeData[inputEdges[port]]` on each input, room for as many at
    /// `edgeData[outputEdges[port]]` on each output — the period's own buffers, no ring.
    ///
    /// Live parameter changes apply from the frame they are due at, as on a ring: one timed
    /// inside the period splits the call there. A node that produces less than it was
    /// offered breaks its promise (`processesFrameForFrame`); the rest of its output is
    /// silence, so the period stays whole. Markers it emits have nowhere to go (nothing in
    /// the section carries them) and are dropped.
    ///
    /// A node with a `frameKernel` makes its usual period through it — one call on the two
    /// buffers — unless a parameter change waits or the kernel declines the period.
    @inline(__always)
    func processPeriod(
        edgeData: UnsafeMutablePointer<UnsafeMutablePointer<Float>>, inputEdges: UnsafePointer<Int>,
        outputEdges: UnsafePointer<Int>, frames: Int
    ) {
        // A node with a kernel has one input and one output (`adoptFrameKernel`).
        guard kernelFunction != nil,
            _fastPath(kernelPeriod(from: edgeData[inputEdges[0]], into: edgeData[outputEdges[0]], frames: frames))
        else {
            processPeriodThroughPorts(edgeData: edgeData, inputEdges: inputEdges, outputEdges: outputEdges, frames: frames)
            return
        }
    }

    /// [audio-thread] The period through the node's frame kernel, from `input` into `output`;
    /// false, having done nothing, when the node has none, a parameter change waits, or the
    /// kernel declines (then the period goes through `process`).
    @inline(__always)
    func kernelPeriod(from input: UnsafeMutablePointer<Float>, into output: UnsafeMutablePointer<Float>, frames: Int) -> Bool {
        guard let kernelFunction, let kernelContext, _fastPath(!parametersPending),
            kernelFunction(kernelContext, input, output, frames &* kernelChannels)
        else { return false }
        periodFrames &+= frames
        return true
    }

    /// [control-thread] Whether a frame kernel is adopted.
    var hasFrameKernel: Bool { kernelFunction != nil }

    /// [audio-thread] Whether a live parameter change waits in the queue.
    @inline(__always)
    private var parametersPending: Bool {
        guard let parametersRef else { return false }
        return parametersRef._withUnsafeGuaranteedRef { $0.hasPending() }
    }

    /// [control-thread] Takes the node's `frameKernel`, once it is prepared, for the direct
    /// section's periods (a node of one input and one output only); or drops it.
    func adoptFrameKernel() {
        guard ports.inputCount == 1, ports.outputCount == 1, let kernel = node.frameKernel else {
            kernelFunction = nil
            kernelContext = nil
            return
        }
        kernelFunction = kernel.function
        kernelContext = kernel.context
        kernelChannels = ports.inputs[0].channels
    }

    /// [audio-thread] `processPeriod` through the node's `process`, with its views.
    @inline(never)
    private func processPeriodThroughPorts(
        edgeData: UnsafeMutablePointer<UnsafeMutablePointer<Float>>, inputEdges: UnsafePointer<Int>,
        outputEdges: UnsafePointer<Int>, frames: Int
    ) {
        var done = 0
        while done < frames {
            var chunk = frames - done
            // A waiting change is rare, and a change timed for later is one that waits, so one
            // look at the queue does for both; the hints (here and below: a node keeps its
            // promise) keep the usual period's path straight (CHANGELOG.md, Earlier
            // measurements, "jack: Fewer lines a period").
            if let parametersRef, _slowPath(parametersRef._withUnsafeGuaranteedRef({ $0.hasPending() })) {
                let position = periodFrames
                _ = applyParameterChanges(atOutputFrame: position)
                if let timed = parametersRef._withUnsafeGuaranteedRef({ $0.nextTimedFrame(after: position) }) {
                    chunk = min(chunk, timed - position)
                }
            }
            for port in 0..<ports.inputCount {
                let offset = done * ports.inputs[port].channels
                ports.setInput(port, base: UnsafeRawPointer(edgeData[inputEdges[port]] + offset), units: chunk)
            }
            for port in 0..<ports.outputCount {
                let offset = done * ports.outputs[port].channels
                ports.setOutput(port, base: UnsafeMutableRawPointer(edgeData[outputEdges[port]] + offset), units: chunk)
            }
            var io = ProcessIO(ports)
            node.process(&io)
            for port in 0..<ports.outputCount {
                let produced = ports.produced(output: port)
                if _slowPath(produced < chunk) {
                    let channels = ports.outputs[port].channels
                    (edgeData[outputEdges[port]] + (done + produced) * channels).update(repeating: 0, count: (chunk - produced) * channels)
                }
                ports.removeMarkers(output: port)
            }
            done += chunk
            periodFrames += chunk
        }
    }

    /// [control-thread] Forgets the direct section's stream: the node is reset and its frames
    /// count from 0 again (after a warm-up).
    func resetPeriods() {
        node.reset()
        periodFrames = 0
    }
}

extension ProcessorSlot {
    /// [control-thread] Rehearses the node on scratch buffers — a block of silence through an
    /// utterance's markers, a discontinuity, a drain and the end of the stream — then resets
    /// it and its ports, so that what Swift's runtime sets up on a code path's first use
    /// (generic metadata, found by RealtimeSanitizer under a lock) is set up here, before a
    /// device's real-time thread runs the node. The edges are not touched.
    public func rehearse(blockFrames: Int) {
        let units = max(1, blockFrames)
        let inputs = ports.inputFormats.map { format in
            UnsafeMutableRawPointer.allocate(byteCount: units * format.bytesPerUnit, alignment: 16)
        }
        let outputs = ports.outputFormats.map { format in
            UnsafeMutableRawPointer.allocate(byteCount: 4 * units * format.bytesPerUnit, alignment: 16)
        }
        defer {
            for buffer in inputs { buffer.deallocate() }
            for buffer in outputs { buffer.deallocate() }
        }
        for (index, format) in ports.inputFormats.enumerated() {
            inputs[index].initializeMemory(as: UInt8.self, repeating: 0, count: units * format.bytesPerUnit)
        }
        func offer(units offered: Int) {
            for (port, buffer) in inputs.enumerated() { ports.setInput(port, base: offered > 0 ? buffer : nil, units: offered) }
            for (port, buffer) in outputs.enumerated() { ports.setOutput(port, base: buffer, units: 4 * units) }
        }
        func settle() {
            for port in outputs.indices { ports.removeMarkers(output: port) }
        }
        let utterance = UtteranceID(1)
        // The order of a real stream: markers where the input has reached them, audio between
        // them, and nothing after the end of the stream but calls that release the tail.
        let markers: [MarkerEvent] = [
            .utteranceStart(utterance), .textSpan(TextSpan(utterance: utterance, start: 0, end: 1)),
            .utteranceEnd(utterance), .discontinuity, .endOfStream,
        ]
        var io = ProcessIO(ports)
        for event in markers {
            let ending = event == .endOfStream
            for port in inputs.indices {
                io = ProcessIO(ports)
                if ending { ports.setEnded(port) }
                node.receive(Marker(position: 0, event: event, isDiscontinuous: event == .discontinuity), on: port, &io)
                settle()
            }
            for _ in 0..<(ending ? 4 : 1) {
                offer(units: ending ? 0 : units)
                io = ProcessIO(ports)
                node.process(&io)
                settle()
            }
            if !ending {
                offer(units: 0)
                io = ProcessIO(ports)
                node.drain(&io)
                settle()
            }
        }
        for port in inputs.indices {
            ports.setEnded(port, false)
            ports.setInput(port, base: nil, units: 0)
        }
        for port in outputs.indices { ports.setOutput(port, base: nil, units: 0) }
        node.reset()
        idleKnown = false
    }
}
