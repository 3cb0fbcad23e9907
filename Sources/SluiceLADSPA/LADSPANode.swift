import CLadspa
import SluiceAudio
import SluiceGraph

/// A LADSPA plugin as a graph node: its audio ports are the channels of the node's one input
/// and one output, its control inputs live parameters (applied from the next frame, as Carla
/// and jalv apply a port change; the plugin smooths or not as it was written to).
///
/// A plugin of one audio input and one output (most of them) runs once per channel of
/// whatever arrives, with the same controls, as PipeWire's filter-chain and Carla run a mono
/// plugin on a stereo stream; any other plugin takes exactly as many channels as it has audio
/// inputs. LADSPA's `run(n)` works frame for frame, so a plugin reporting no latency runs in
/// the JACK cycle on the period's samples.
public final class LADSPANode: LiveParameterNode {
    public let plugin: LADSPAPlugin
    /// The values the graph gave, one per control (nil: the plugin's default at the node's rate).
    let given: [Double?]

    /// Frames a `run` is given at most: the port buffers' length.
    static let blockFrames = 1024

    private var rate = 0
    private var instanceCount = 0
    private var channelsIn = 0
    private var channelsOut = 0
    // SAFETY: allocated in `prepare`, freed in `deactivate`; in between only `apply` and the
    // period (one thread at a time, the graph's rule) touch them. The plugin's ports point
    // into them.
    private var handles: UnsafeMutableBufferPointer<LADSPA_Handle?>?
    private var controlValues: UnsafeMutableBufferPointer<Float>?
    private var outputValues: UnsafeMutableBufferPointer<Float>?
    private var inputPlanes: UnsafeMutableBufferPointer<Float>?
    private var outputPlanes: UnsafeMutableBufferPointer<Float>?
    private var reportedLatency = 0

    init(plugin: LADSPAPlugin, given: [Double?]) {
        self.plugin = plugin
        self.given = given
    }

    deinit { deactivate() }

    // MARK: Formats

    private var runsPerChannel: Bool { plugin.audioInputs.count == 1 && plugin.audioOutputs.count == 1 }

    public func outputFormats(for inputs: [StreamFormat], context: FormatContext) throws(FormatMismatch) -> [StreamFormat] {
        guard let input = inputs.first, case .frames(let rate, let channels) = input else {
            throw FormatMismatch(input: 0, required: .medium(.frames))
        }
        if runsPerChannel { return [.frames(rate: rate, channels: channels)] }
        guard channels == plugin.audioInputs.count else {
            throw FormatMismatch(input: 0, required: .channels(plugin.audioInputs.count))
        }
        return [.frames(rate: rate, channels: plugin.audioOutputs.count)]
    }

    public var compiledChoice: String? {
        var choice = "LADSPA \(plugin.label) from \(plugin.libraryPath)"
        if runsPerChannel && instanceCount > 1 { choice += ", one instance per channel (\(instanceCount))" }
        if !plugin.isHardRealtimeCapable { choice += "; the plugin does not declare itself hard real-time capable" }
        return choice
    }

    public var latencyFrames: Int { reportedLatency }
    public var processesFrameForFrame: Bool { reportedLatency == 0 }

    // MARK: Lifecycle

    public func prepare(_ context: PrepareContext) throws {
        deactivate()
        guard case .frames(let rate, let channels)? = context.inputFormats.first else {
            throw NodeCreationError("'ladspa' cannot be prepared for inputs \(context.inputFormats)")
        }
        self.rate = rate
        instanceCount = runsPerChannel ? channels : 1
        channelsIn = instanceCount * plugin.audioInputs.count
        channelsOut = instanceCount * plugin.audioOutputs.count
        let descriptor = plugin.descriptor.pointee
        let block = Self.blockFrames

        let controls = UnsafeMutableBufferPointer<Float>.allocate(capacity: max(plugin.controls.count, 1))
        for (index, control) in plugin.controls.enumerated() {
            let value = given[index] ?? control.defaultValue(rate: rate)
            controls[index] = Float(value.clamped(to: control.range(rate: rate)))
        }
        controlValues = controls
        let outputs = UnsafeMutableBufferPointer<Float>.allocate(capacity: max(instanceCount * plugin.controlOutputs.count, 1))
        outputs.initialize(repeating: 0)
        outputValues = outputs
        let inputs = UnsafeMutableBufferPointer<Float>.allocate(capacity: max(channelsIn, 1) * block)
        inputs.initialize(repeating: 0)
        inputPlanes = inputs
        let results = UnsafeMutableBufferPointer<Float>.allocate(capacity: max(channelsOut, 1) * block)
        results.initialize(repeating: 0)
        outputPlanes = results
        let handles = UnsafeMutableBufferPointer<LADSPA_Handle?>.allocate(capacity: instanceCount)
        handles.initialize(repeating: nil)
        self.handles = handles

        for instance in 0..<instanceCount {
            guard let handle = descriptor.instantiate(plugin.descriptor, UInt(rate)) else {
                throw NodeCreationError(
                    "LADSPA plugin '\(plugin.label)' (\(plugin.libraryPath)) could not be instantiated at \(rate) Hz",
                    fix: "try another rate, or another plugin")
            }
            handles[instance] = handle
            for (index, control) in plugin.controls.enumerated() {
                descriptor.connect_port(handle, UInt(control.port), controls.baseAddress! + index)
            }
            for (index, output) in plugin.controlOutputs.enumerated() {
                descriptor.connect_port(handle, UInt(output.port), outputs.baseAddress! + instance * plugin.controlOutputs.count + index)
            }
            for (index, port) in plugin.audioInputs.enumerated() {
                let channel = instance * plugin.audioInputs.count + index
                descriptor.connect_port(handle, UInt(port), inputs.baseAddress! + channel * block)
            }
            for (index, port) in plugin.audioOutputs.enumerated() {
                let channel = instance * plugin.audioOutputs.count + index
                descriptor.connect_port(handle, UInt(port), results.baseAddress! + channel * block)
            }
            descriptor.activate?(handle)
        }
        reportedLatency = readLatency()
    }

    /// The plugin's `latency` output after one block of silence (where LADSPA plugins that
    /// report a delay set it), as Carla reads it; the instances are then started afresh.
    private func readLatency() -> Int {
        guard let latencyPort = plugin.latencyPort, let handles, let outputValues,
            let slot = plugin.controlOutputs.firstIndex(where: { $0.port == latencyPort })
        else { return 0 }
        let descriptor = plugin.descriptor.pointee
        descriptor.run(handles[0], UInt(Self.blockFrames))
        let value = Double(outputValues[slot])
        restart()
        guard value.isFinite, value >= 0, value <= Double(rate) * 10 else { return 0 }
        return Int(value.rounded())
    }

    /// Deactivates and activates every instance: LADSPA's way to a fresh stream.
    private func restart() {
        guard let handles else { return }
        let descriptor = plugin.descriptor.pointee
        for handle in handles {
            descriptor.deactivate?(handle)
            descriptor.activate?(handle)
        }
        inputPlanes?.update(repeating: 0)
    }

    public func reset() { restart() }

    public func deactivate() {
        if let handles {
            let descriptor = plugin.descriptor.pointee
            for case let handle? in handles {
                descriptor.deactivate?(handle)
                descriptor.cleanup(handle)
            }
            handles.deallocate()
        }
        handles = nil
        controlValues?.deallocate()
        controlValues = nil
        outputValues?.deallocate()
        outputValues = nil
        inputPlanes?.deallocate()
        inputPlanes = nil
        outputPlanes?.deallocate()
        outputPlanes = nil
    }

    // MARK: Live parameters

    public func apply(_ change: ParameterChange) {
        let index = change.parameter - LADSPANodeType.pickingParameters.count
        guard let controlValues, plugin.controls.indices.contains(index), change.value.isFinite else { return }
        controlValues[index] = Float(change.value.clamped(to: plugin.controls[index].range(rate: rate)))
    }

    /// The value a control holds now (after live changes), by its parameter name; nil when
    /// not prepared or no such control. [control-thread, between periods]
    public func controlValue(_ symbol: String) -> Float? {
        guard let controlValues, let index = plugin.controls.firstIndex(where: { $0.symbol == symbol }) else { return nil }
        return controlValues[index]
    }

    // MARK: Processing

    public func process(_ io: inout ProcessIO) {
        let input = io.frames(input: 0)
        let output = io.frames(output: 0)
        let frames = min(input.count / max(channelsIn, 1), output.count / max(channelsOut, 1))
        guard frames > 0, let inputBase = input.baseAddress, let outputBase = output.baseAddress,
            render(inputBase, outputBase, frames: frames)
        else { return }
        io.consume(frames, input: 0)
        io.produce(frames, output: 0)
    }

    /// In the JACK cycle: the period's samples straight through `render`.
    public var frameKernel: FrameKernel? {
        guard reportedLatency == 0, channelsIn == channelsOut else { return nil }
        // SAFETY: the node outlives its slot's periods, which hold it; unretained here.
        return FrameKernel(context: Unmanaged.passUnretained(self).toOpaque(), function: Self.kernelPeriod)
    }

    private static let kernelPeriod: FrameKernel.Function = { context, input, output, samples in
        // SAFETY: `context` is this node (`frameKernel`), alive while its slot runs.
        Unmanaged<LADSPANode>.fromOpaque(context)._withUnsafeGuaranteedRef { node in
            node.render(input, output, frames: samples / max(node.channelsIn, 1))
        }
    }

    /// `frames` interleaved frames through the plugin, a block at a time: each channel into
    /// its port's buffer, every instance run, each output port's buffer back into `output`
    /// (which may be `input`: the planes stand between them). [audio-thread]
    @inline(__always)
    private func render(_ input: UnsafePointer<Float>, _ output: UnsafeMutablePointer<Float>, frames: Int) -> Bool {
        guard let handles, let inputPlanes = inputPlanes?.baseAddress, let outputPlanes = outputPlanes?.baseAddress else {
            return false
        }
        let run = plugin.descriptor.pointee.run!
        PlanarBlocks.run(
            input, channels: channelsIn, through: inputPlanes, into: output, channels: channelsOut, from: outputPlanes,
            frames: frames, blockFrames: Self.blockFrames
        ) { count in
            for handle in handles { run(handle, UInt(count)) }
        }
        return true
    }
}
