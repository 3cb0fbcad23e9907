import CLilv
import Glibc
import SluiceAudio
import SluiceGraph
import SluiceRT
import Synchronization

/// An LV2 plugin as a graph node: its audio ports are the channels of the node's input and
/// output, its control inputs live parameters named by their symbols (applied from the next
/// frame, as jalv and Carla apply a port change).
///
/// A plugin of one audio input and one output runs once per channel of whatever arrives,
/// with the same controls, as PipeWire's filter-chain and Carla run a mono plugin on a stereo
/// stream; any other plugin takes exactly as many channels as it has audio inputs. A plugin
/// reporting no latency runs in the JACK cycle on the period's samples.
public final class LV2Node: LiveParameterNode, ReportingNode, StateSavingNode {
    public let plugin: LV2Plugin
    /// The values the graph gave, one per control (nil: the preset's, the state's, or the plugin's default).
    let given: [Double?]
    /// What to restore after instantiation: a preset or a state file.
    let restoring: LV2StateSource?

    /// Frames a `run` is given at most (buf-size:maxBlockLength): the port buffers' length.
    static let blockFrames = 1024
    /// Bytes in each atom port's buffer, unless the plugin asks for more (rsz:minimumSize).
    static let sequenceSize = 8192

    private var rate = 0
    private var instances: [LV2Instance] = []
    private var channelsIn = 0
    private var channelsOut = 0
    // SAFETY: allocated in `prepare`, freed in `deactivate`; in between only `apply` and the
    // period (one thread at a time, the graph's rule) touch them. The plugin's ports point
    // into them.
    private var controlValues: UnsafeMutableBufferPointer<Float>?
    // The controls as last applied, as float bits, for a state save on the control thread
    // while the plugin runs (`saveState`): stored by `apply`, one atomic a control.
    private var appliedValues: UnsafeMutablePointer<Atomic<UInt32>>?
    private var inputPlanes: UnsafeMutableBufferPointer<Float>?
    private var outputPlanes: UnsafeMutableBufferPointer<Float>?
    private var instanceHandles: UnsafeMutableBufferPointer<LV2Instance.RunContext>?
    private var reportedLatency = 0
    // The control outputs' latest values, stored by the cycle (`postReports`) as float bits,
    // taken by `takeReports`: one atomic a reported output, so a slow reader sees the latest.
    private var reportedValues: UnsafeMutablePointer<Atomic<UInt32>>?
    /// What `takeReports` last returned, per output (control thread only).
    private var takenValues: [UInt32] = []
    private let renderedFrames = Atomic<Int>(0)
    /// The plugin's control output ports, by index among them (a buffer: the cycle reads it).
    private var reportingPortList: UnsafeMutableBufferPointer<Int>?
    private var reportingPortCount = 0
    /// The instance whose outputs are reported (the first).
    private var reportingInstance: LV2Instance.RunContext?

    init(plugin: LV2Plugin, given: [Double?], restoring: LV2StateSource?) {
        self.plugin = plugin
        self.given = given
        self.restoring = restoring
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
        var choice = "LV2 \(plugin.name) <\(plugin.uri)>"
        if let restoring { choice += ", \(restoring)" }
        if runsPerChannel && instances.count > 1 { choice += ", one instance per channel (\(instances.count))" }
        return choice
    }

    public var latencyFrames: Int { reportedLatency }
    public var processesFrameForFrame: Bool { reportedLatency == 0 }

    // MARK: Lifecycle

    public func prepare(_ context: PrepareContext) throws {
        deactivate()
        guard case .frames(let rate, let channels)? = context.inputFormats.first else {
            throw NodeCreationError("'lv2' cannot be prepared for inputs \(context.inputFormats)")
        }
        self.rate = rate
        let count = runsPerChannel ? channels : 1
        channelsIn = count * plugin.audioInputs.count
        channelsOut = count * plugin.audioOutputs.count
        let block = Self.blockFrames

        let controls = UnsafeMutableBufferPointer<Float>.allocate(capacity: max(plugin.controls.count, 1))
        for (index, control) in plugin.controls.enumerated() {
            controls[index] = Float(control.defaultValue(rate: rate))
        }
        controlValues = controls
        let inputs = UnsafeMutableBufferPointer<Float>.allocate(capacity: max(channelsIn, 1) * block)
        inputs.initialize(repeating: 0)
        inputPlanes = inputs
        let results = UnsafeMutableBufferPointer<Float>.allocate(capacity: max(channelsOut, 1) * block)
        results.initialize(repeating: 0)
        outputPlanes = results

        for index in 0..<count {
            let instance = try LV2Instance(
                plugin: plugin, rate: rate, nominalBlock: min(max(context.blockFrames, 1), block),
                controls: controls.baseAddress!,
                inputs: inputs.baseAddress! + index * plugin.audioInputs.count * block,
                outputs: results.baseAddress! + index * plugin.audioOutputs.count * block)
            instances.append(instance)
        }
        // The preset's or state's control values, then the file's own, which win.
        if let restoring {
            let state = try LV2World.shared.loadState(restoring, of: plugin)
            for instance in instances {
                LV2World.shared.restore(state, into: instance) { symbol, value in
                    guard let index = plugin.controls.firstIndex(where: { $0.portSymbol == symbol }) else { return }
                    controls[index] = Float(Double(value).clamped(to: plugin.controls[index].range(rate: rate)))
                }
            }
            LV2World.shared.free(state)
        }
        for (index, control) in plugin.controls.enumerated() {
            if let value = given[index] { controls[index] = Float(value.clamped(to: control.range(rate: rate))) }
        }
        let applied = UnsafeMutablePointer<Atomic<UInt32>>.allocate(capacity: max(controls.count, 1))
        for index in 0..<max(controls.count, 1) { (applied + index).initialize(to: Atomic(controls[index].bitPattern)) }
        appliedValues = applied
        let handles = UnsafeMutableBufferPointer<LV2Instance.RunContext>.allocate(capacity: instances.count)
        for (index, instance) in instances.enumerated() { handles[index] = instance.runContext }
        instanceHandles = handles
        let reportingPorts = plugin.controlOutputs.map(\.index)
        let values = UnsafeMutablePointer<Atomic<UInt32>>.allocate(capacity: max(reportingPorts.count, 1))
        for index in 0..<max(reportingPorts.count, 1) { (values + index).initialize(to: Atomic(Self.notYet)) }
        reportedValues = values
        takenValues = Array(repeating: Self.notYet, count: reportingPorts.count)
        let ports = UnsafeMutableBufferPointer<Int>.allocate(capacity: max(reportingPorts.count, 1))
        _ = ports.initialize(from: reportingPorts)
        reportingPortList = ports
        reportingPortCount = reportingPorts.count
        reportingInstance = handles.first
        renderedFrames.store(0, ordering: .relaxed)
        reportedLatency = readLatency()
    }

    /// The plugin's latency port after one block of silence (lv2:reportsLatency), as jalv
    /// reads it. The block also hands the plugin what its worker did while state was restored.
    private func readLatency() -> Int {
        guard let latencyPort = plugin.latencyPort, let first = instances.first, let inputPlanes = inputPlanes?.baseAddress,
            let outputPlanes = outputPlanes?.baseAddress
        else { return 0 }
        _ = render(inputPlanes, outputPlanes, frames: 0, silentBlock: true)
        let value = Double(first.controlOutput(port: latencyPort))
        guard value.isFinite, value >= 0, value <= Double(rate) * 10 else { return 0 }
        return Int(value.rounded())
    }

    public func reset() {
        for instance in instances { instance.restart() }
        inputPlanes?.update(repeating: 0)
    }

    public func deactivate() {
        instances.removeAll()  // each instance deactivates and frees its plugin
        instanceHandles?.deallocate()
        instanceHandles = nil
        if let appliedValues {
            appliedValues.deinitialize(count: max(controlValues?.count ?? 1, 1))
            appliedValues.deallocate()
        }
        appliedValues = nil
        controlValues?.deallocate()
        controlValues = nil
        inputPlanes?.deallocate()
        inputPlanes = nil
        outputPlanes?.deallocate()
        outputPlanes = nil
        if let reportedValues {
            reportedValues.deinitialize(count: max(plugin.controlOutputs.count, 1))
            reportedValues.deallocate()
        }
        reportedValues = nil
        reportingPortList?.deallocate()
        reportingPortList = nil
        reportingPortCount = 0
        reportingInstance = nil
    }

    // MARK: Live parameters

    public func apply(_ change: ParameterChange) {
        let index = change.parameter - LV2NodeType.pickingParameters.count
        guard let controlValues, plugin.controls.indices.contains(index), change.value.isFinite else { return }
        let value = Float(change.value.clamped(to: plugin.controls[index].range(rate: rate)))
        controlValues[index] = value
        appliedValues?[index].store(value.bitPattern, ordering: .relaxed)
    }

    // MARK: State

    /// Saves the first instance's state (a plugin run once per channel has the same in each)
    /// and the controls as last applied into `folder/state.ttl`, as jalv saves it: the files
    /// the state names are linked or copied beside it. LV2 lets a save run while the plugin
    /// runs; the controls are read from their own atomics, never from the ports the plugin
    /// reads. [control-thread]
    public func saveState(into folder: String) throws(NodeStateError) -> String {
        guard let first = instances.first, let appliedValues else {
            throw NodeStateError("the plugin is not running")
        }
        try StateFolder.prepare(folder)
        let values = (0..<plugin.controls.count).map { Float(bitPattern: appliedValues[$0].load(ordering: .relaxed)) }
        try LV2World.shared.save(
            instance: first, controls: Dictionary(uniqueKeysWithValues: zip(plugin.controls.map(\.portSymbol), values)),
            into: folder)
        return folder.hasSuffix("/") ? folder + "state.ttl" : folder + "/state.ttl"
    }

    /// The value a control holds now, by its parameter name; nil when not prepared or no such
    /// control. [control-thread, between periods]
    public func controlValue(_ symbol: String) -> Float? {
        guard let controlValues, let index = plugin.controls.firstIndex(where: { $0.symbol == symbol }) else { return nil }
        return controlValues[index]
    }

    /// The control outputs' values after the last block (the first instance's), by port
    /// symbol. [control-thread, between periods]
    public func controlOutputs() -> [(symbol: String, value: Float)] {
        guard let first = instances.first else { return [] }
        return plugin.controlOutputs.map { ($0.symbol, first.controlOutput(port: $0.index)) }
    }

    // MARK: Reports

    public func takeReports() -> [ReportedValue] {
        guard let reportedValues else { return [] }
        let frame = renderedFrames.load(ordering: .acquiring)
        var reports: [ReportedValue] = []
        for (output, port) in plugin.controlOutputs.enumerated() {
            let bits = reportedValues[output].load(ordering: .relaxed)
            guard bits != Self.notYet, bits != takenValues[output] else { continue }
            takenValues[output] = bits
            reports.append(ReportedValue(name: port.symbol, value: Double(Float(bitPattern: bits)), frame: frame))
        }
        return reports
    }

    /// A bit pattern no run stores (a NaN with a payload of its own): nothing reported yet.
    private static let notYet: UInt32 = 0x7FC0_5EED

    /// Stores each control output (of the first instance) after the block just run, and the
    /// frames rendered. [audio-thread]
    @inline(__always)
    private func postReports(frames: Int) {
        let rendered = renderedFrames.load(ordering: .relaxed) + frames
        guard reportingPortCount > 0, let values = reportedValues, let ports = reportingPortList?.baseAddress,
            let first = reportingInstance
        else {
            renderedFrames.store(rendered, ordering: .releasing)
            return
        }
        for output in 0..<reportingPortCount {
            values[output].store(LV2Instance.controlOutput(first, port: ports[output]).bitPattern, ordering: .relaxed)
        }
        renderedFrames.store(rendered, ordering: .releasing)
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
        Unmanaged<LV2Node>.fromOpaque(context)._withUnsafeGuaranteedRef { node in
            node.render(input, output, frames: samples / max(node.channelsIn, 1))
        }
    }

    /// `frames` interleaved frames through the plugin, a block at a time: each channel into
    /// its port's buffer, every instance run (its worker's responses first, `end_run` after),
    /// each output port's buffer back into `output` (which may be `input`: the planes stand
    /// between them). `silentBlock`: one block of the planes as they are. [audio-thread]
    @inline(__always)
    func render(_ input: UnsafePointer<Float>, _ output: UnsafeMutablePointer<Float>, frames: Int, silentBlock: Bool = false) -> Bool {
        guard let instanceHandles, let inputPlanes = inputPlanes?.baseAddress, let outputPlanes = outputPlanes?.baseAddress else {
            return false
        }
        let block = Self.blockFrames
        let thread = pthread_self()
        if silentBlock {
            for instance in instanceHandles { LV2Instance.run(instance, frames: block, thread: thread) }
            return true
        }
        PlanarBlocks.run(
            input, channels: channelsIn, through: inputPlanes, into: output, channels: channelsOut, from: outputPlanes,
            frames: frames, blockFrames: block
        ) { count in
            for instance in instanceHandles { LV2Instance.run(instance, frames: count, thread: thread) }
            postReports(frames: count)
        }
        return true
    }
}

extension Double {
    func clamped(to range: ClosedRange<Double>) -> Double { Swift.min(Swift.max(self, range.lowerBound), range.upperBound) }
}
