import CLilv
import Glibc
import SluiceGraph

/// One running instance of an LV2 plugin: lilv's instance, the features it was given, its
/// worker and log, and the buffers of the ports the node does not share (atom sequences, CV,
/// control outputs). Deinitialising it stops the worker, then deactivates and frees the plugin.
final class LV2Instance {
    let plugin: LV2Plugin
    let worker: LV2Worker
    let log: LV2Log
    private let instance: UnsafeMutablePointer<LilvInstance>
    private let features: LV2FeatureSet
    private let handle: LV2_Handle?
    private let runFunction: @convention(c) (LV2_Handle?, UInt32) -> Void
    // SAFETY: each allocated here and freed in deinit; the plugin's ports point into them.
    private let controlOutputs: UnsafeMutableBufferPointer<Float>
    private let atomBuffers: UnsafeMutableBufferPointer<AtomBuffer>
    private let cvBuffers: [UnsafeMutablePointer<Float>]
    private let sequenceType = URIDTable.map(LV2URI.atom + "Sequence")
    private let chunkType = URIDTable.map(LV2URI.atom + "Chunk")
    private var active = false

    /// Instantiates `plugin` at `rate`, connects its ports (`controls`: the node's shared
    /// control values, one per `plugin.controls`; `inputs` and `outputs`: a plane of
    /// `LV2Node.blockFrames` samples per audio port), restores its default state and
    /// activates it. [control-thread]
    init(
        plugin: LV2Plugin, rate: Int, nominalBlock: Int, controls: UnsafeMutablePointer<Float>,
        inputs: UnsafeMutablePointer<Float>, outputs: UnsafeMutablePointer<Float>
    ) throws(NodeCreationError) {
        self.plugin = plugin
        let log = LV2Log(plugin: plugin.uri)
        let worker = LV2Worker(log: log)
        self.log = log
        self.worker = worker
        let sequenceSize = max(LV2Node.sequenceSize, plugin.ports.map(\.minimumSize).max() ?? 0)
        let features = LV2FeatureSet(
            rate: rate, maximumBlock: LV2Node.blockFrames, nominalBlock: nominalBlock, sequenceSize: sequenceSize,
            worker: worker, log: log)
        self.features = features
        let made = LV2World.shared.with { _ in
            LV2World.shared.pin(plugin.libraryPath)
            return lilv_plugin_instantiate(plugin.lilv, Double(rate), features.array)
        }
        guard let made, let descriptor = made.pointee.lv2_descriptor, let run = descriptor.pointee.run else {
            throw NodeCreationError(
                "LV2 plugin <\(plugin.uri)> could not be instantiated at \(rate) Hz",
                fix: "try another rate, or another plugin; SLUICE_LOG=debug shows what the plugin logged")
        }
        instance = made
        handle = made.pointee.lv2_handle
        runFunction = run

        let block = LV2Node.blockFrames
        controlOutputs = .allocate(capacity: max(plugin.ports.count, 1))
        controlOutputs.initialize(repeating: 0)
        var atomBuffers: [AtomBuffer] = []
        var cvBuffers: [UnsafeMutablePointer<Float>] = []
        var controlIndex = 0, inputIndex = 0, outputIndex = 0
        for port in plugin.ports {
            let location: UnsafeMutableRawPointer?
            switch (port.kind, port.isInput) {
            case (.control, true):
                location = UnsafeMutableRawPointer(controls + controlIndex)
                controlIndex += 1
            case (.control, false):
                location = UnsafeMutableRawPointer(controlOutputs.baseAddress! + port.index)
            case (.audio, true):
                location = UnsafeMutableRawPointer(inputs + inputIndex * block)
                inputIndex += 1
            case (.audio, false):
                location = UnsafeMutableRawPointer(outputs + outputIndex * block)
                outputIndex += 1
            case (.atom, _):
                let buffer = UnsafeMutableRawPointer.allocate(byteCount: sequenceSize, alignment: 16)
                buffer.initializeMemory(as: UInt8.self, repeating: 0, count: sequenceSize)
                atomBuffers.append(AtomBuffer(pointer: buffer, capacity: sequenceSize, isInput: port.isInput))
                location = buffer
            case (.cv, _):
                let buffer = UnsafeMutablePointer<Float>.allocate(capacity: block)
                buffer.initialize(repeating: 0, count: block)
                cvBuffers.append(buffer)
                location = UnsafeMutableRawPointer(buffer)
            case (.other, _):
                location = nil  // lv2:connectionOptional (LV2Plugin refuses any other)
            }
            descriptor.pointee.connect_port(handle, UInt32(port.index), location)
        }
        // A buffer, not an array: the cycle walks it (an array of structs iterates through
        // generic code that allocates in an unoptimised build).
        self.atomBuffers = .allocate(capacity: atomBuffers.count)
        _ = self.atomBuffers.initialize(from: atomBuffers)
        self.cvBuffers = cvBuffers
        resetSequences()

        let interface = descriptor.pointee.extension_data?(LV2URI.worker + "interface")
        worker.start(interface: interface?.assumingMemoryBound(to: LV2_Worker_Interface.self), handle: handle)
        if plugin.hasState { LV2World.shared.restoreDefaultState(into: self) }
        descriptor.pointee.activate?(handle)
        active = true
    }

    deinit {
        worker.stop()
        if active { instance.pointee.lv2_descriptor.pointee.deactivate?(handle) }
        // lilv counts the library's users in the world: under its lock.
        LV2World.shared.with { _ in lilv_instance_free(instance) }
        controlOutputs.deallocate()
        for index in 0..<atomBuffers.count { atomBuffers[index].pointer.deallocate() }
        atomBuffers.deallocate()
        for buffer in cvBuffers { buffer.deallocate() }
    }

    /// lilv's instance, for state restore. [control-thread]
    var lilvInstance: UnsafeMutablePointer<LilvInstance> { instance }

    /// A control output's value after the last run. [control-thread, between periods]
    func controlOutput(port: Int) -> Float { controlOutputs[port] }

    /// Deactivates and activates the plugin: LV2's way to a fresh stream (files a worker
    /// loaded stay loaded). [control-thread]
    func restart() {
        let descriptor = instance.pointee.lv2_descriptor.pointee
        descriptor.deactivate?(handle)
        descriptor.activate?(handle)
    }

    // MARK: The cycle

    typealias RunContext = Unmanaged<LV2Instance>
    var runContext: RunContext { .passUnretained(self) }

    /// A control output's value after the last run. [audio-thread]
    @inline(__always)
    static func controlOutput(_ context: RunContext, port: Int) -> Float {
        context._withUnsafeGuaranteedRef { $0.controlOutputs[port] }
    }

    /// One block: the worker's responses, the sequences emptied, `run`, `end_run`. [audio-thread]
    @inline(__always)
    static func run(_ context: RunContext, frames: Int, thread: pthread_t) {
        context._withUnsafeGuaranteedRef { instance in
            instance.log.realtimeThread.store(thread, ordering: .relaxed)
            instance.worker.deliverResponses()
            instance.resetSequences()
            instance.runFunction(instance.handle, UInt32(frames))
            instance.worker.endRun()
        }
    }

    /// Each atom input an empty sequence, each output a chunk of its whole capacity (the
    /// plugin writes its sequence into it).
    @inline(__always)
    private func resetSequences() {
        for index in 0..<atomBuffers.count {
            let buffer = atomBuffers[index]
            let atom = buffer.pointer.assumingMemoryBound(to: LV2_Atom.self)
            if buffer.isInput {
                atom.pointee.size = UInt32(MemoryLayout<LV2_Atom_Sequence_Body>.size)
                atom.pointee.type = sequenceType
                let body = (buffer.pointer + MemoryLayout<LV2_Atom>.size).assumingMemoryBound(to: LV2_Atom_Sequence_Body.self)
                body.pointee.unit = 0
                body.pointee.pad = 0
            } else {
                atom.pointee.size = UInt32(buffer.capacity - MemoryLayout<LV2_Atom>.size)
                atom.pointee.type = chunkType
            }
        }
    }
}

/// An atom port's buffer.
struct AtomBuffer {
    var pointer: UnsafeMutableRawPointer
    var capacity: Int
    var isInput: Bool
}
