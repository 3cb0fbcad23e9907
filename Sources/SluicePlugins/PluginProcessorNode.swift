import SluiceAudio
import SluiceGraph
import SluicePluginABI

/// A plugin processor as a graph `ProcessorNode`.
///
/// Formats: every input must carry Float32 frames at input 1's rate and channel count; every
/// output carries the same. `prepare` calls the plugin's `activate` with that rate, channel
/// count and the most frames one call will pass, and allocates the pointer tables and a
/// block of silence — nothing is allocated after it.
///
/// Process: inputs move in lockstep, as the mixer's do. Each call passes the plugin as many
/// frames as every input still streaming has waiting and every output has room for, in
/// pieces of at most `max_frames`; an input whose stream has ended is passed as silence, so a
/// shorter input (the speech into a ducker) does not stop the node. A call the plugin fails
/// writes silence and is counted (`plugin-errors` in the report).
///
/// Markers pass through at the node's current output position; the end of the stream goes
/// out once, when every input has ended.
///
/// Events (ABI version 2 and later; events.h): every marker an input delivers (each input's
/// end of stream included) and, for a plugin with live parameters
/// (`LivePluginProcessorNode`), every change `apply` receives wait in a list allocated in
/// `prepare` and go to the plugin in the next call that carries frames, at offset 0: they
/// apply from the node's next frame, which is that call's first. When more wait than the
/// list holds, or every input has ended and no frames will follow, they go in a call of 0
/// frames. A version-1 plugin gets no events and no such call.
public class PluginProcessorNode: ProcessorNode {
    /// The library stays loaded (and its `deinit` waits) while this node lives.
    public let library: PluginLibrary
    public let typeName: String
    private let instance: UnsafeMutableRawPointer
    /// The plugin's vtable in the host's layout (GrownStruct).
    private let vtable: sluice_processor_vtable_t
    private let inputCount: Int
    private let outputCount: Int
    /// Whether the plugin takes events (ABI version 2 and later).
    private let takesEvents: Bool

    private var active = false
    private var channels = 0
    private var maximumFrames = 0
    // Allocated in `prepare`, freed in `deactivate`.
    private var call: UnsafeMutablePointer<sluice_process_t>?
    private var inputPointers: UnsafeMutablePointer<UnsafePointer<Float>?>?
    private var outputPointers: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>?
    private var silence: UnsafeMutablePointer<Float>?
    private var inputs: LockstepInputs?
    /// Events for the next call (ABI version 2 and later).
    private var events: PluginEventList?
    /// Room for one frame of each output, for calls of 0 frames.
    private var scratch: UnsafeMutablePointer<Float>?
    /// Output frames since the stream began.
    private var framesProduced = 0
    private var failures = 0

    /// Events one call carries at most: a full parameter queue's worth of changes (the
    /// slot's queue holds 256) and markers on every input. More go in calls of 0 frames.
    static func eventCapacity(inputs: Int) -> Int { 256 + 16 * inputs }

    /// The descriptor's parameter names, in order: what a change's event names it by.
    private let parameterNames: [String]

    init(
        library: PluginLibrary, type: PluginNodeType, instance: UnsafeMutableRawPointer,
        functions v: sluice_processor_vtable_t
    ) throws(NodeCreationError) {
        guard v.activate != nil, v.process != nil, v.reset != nil, v.deactivate != nil, v.destroy != nil else {
            v.destroy?(instance)
            throw NodeCreationError("'\(type.descriptor.typeName)' (plugin \(library.path)) has a processor vtable with a NULL function")
        }
        self.library = library
        typeName = type.descriptor.typeName
        parameterNames = type.descriptor.parameters.map(\.name)
        self.instance = instance
        vtable = v
        inputCount = type.descriptor.inputs.count
        outputCount = type.descriptor.outputs.count
        takesEvents = library.abiVersion >= 2
    }

    deinit {
        deactivate()
        vtable.destroy!(instance)
    }

    public func outputFormats(for inputs: [StreamFormat], context: FormatContext) throws(FormatMismatch) -> [StreamFormat] {
        guard let first = inputs.first else { throw FormatMismatch(input: 0, required: .medium(.frames)) }
        guard case .frames(let rate, let channels) = first else { throw FormatMismatch(input: 0, required: .medium(.frames)) }
        for port in 1..<inputs.count {
            guard case .frames(let otherRate, let otherChannels) = inputs[port] else {
                throw FormatMismatch(input: port, required: .medium(.frames))
            }
            if otherRate != rate { throw FormatMismatch(input: port, required: .sampleRate(rate)) }
            if otherChannels != channels { throw FormatMismatch(input: port, required: .channels(channels)) }
        }
        return Array(repeating: .frames(rate: rate, channels: channels), count: outputCount)
    }

    public func prepare(_ context: PrepareContext) throws {
        guard context.inputFormats.count == inputCount, case .frames(let rate, let channels) = context.inputFormats[0] else {
            throw NodeCreationError("'\(typeName)' was prepared with inputs \(context.inputFormats), not \(inputCount) of frames")
        }
        deactivate()
        let maximumFrames = max(1, context.maximumUnits, context.blockFrames)
        var error = sluice_error_t()
        guard vtable.activate!(instance, UInt32(rate), UInt32(maximumFrames), UInt32(channels), &error) else {
            let failure = PluginFailure(error)
            throw NodeCreationError(
                "'\(typeName)' (plugin \(library.path)) cannot run at \(rate) Hz, \(channels) channels: \(failure.message)")
        }
        active = true
        self.channels = channels
        self.maximumFrames = maximumFrames
        let silence = UnsafeMutablePointer<Float>.allocate(capacity: maximumFrames * channels)
        silence.initialize(repeating: 0, count: maximumFrames * channels)
        self.silence = silence
        let inputPointers = UnsafeMutablePointer<UnsafePointer<Float>?>.allocate(capacity: inputCount)
        inputPointers.initialize(repeating: nil, count: inputCount)
        self.inputPointers = inputPointers
        let outputPointers = UnsafeMutablePointer<UnsafeMutablePointer<Float>?>.allocate(capacity: outputCount)
        outputPointers.initialize(repeating: nil, count: outputCount)
        self.outputPointers = outputPointers
        let call = UnsafeMutablePointer<sluice_process_t>.allocate(capacity: 1)
        call.initialize(to: sluice_process_t(
            position: 0, frames: 0, channels: UInt32(channels), input_count: UInt32(inputCount),
            output_count: UInt32(outputCount), inputs: UnsafePointer(inputPointers), outputs: UnsafePointer(outputPointers),
            size: UInt32(MemoryLayout<sluice_process_t>.size), event_count: 0, events: nil))
        self.call = call
        inputs = LockstepInputs(count: inputCount)
        if takesEvents {
            let events = PluginEventList(capacity: Self.eventCapacity(inputs: inputCount), parameterNames: parameterNames)
            // One event of each kind, at once forgotten: what Swift's runtime sets up on a
            // path's first use is set up here, not on the audio thread's first change.
            events.append(parameter: 0, value: 0)
            events.append(Marker(position: 0, event: .discontinuity), input: 0)
            events.clear()
            self.events = events
            let scratch = UnsafeMutablePointer<Float>.allocate(capacity: channels)
            scratch.initialize(repeating: 0, count: channels)
            self.scratch = scratch
        }
        framesProduced = 0
    }

    /// The ABI's `process` is a block in and the same block out (`sluice_process_t.frames` on
    /// every port), with no latency, and the markers a plugin sees pass by it unchanged: frame
    /// for frame, so in a live chain between `jack.source` and `jack.sink` it runs on the
    /// period's own buffers (docs/architecture.md, "Frame for frame").
    public var processesFrameForFrame: Bool { true }

    public func process(_ io: inout ProcessIO) {
        guard let call, let inputPointers, let outputPointers, let silence, let inputs else { return }
        var room = Int.max
        for port in 0..<outputCount { room = min(room, io.room(output: port)) }
        let frames = inputs.availableFrames(io, limit: room)
        guard frames > 0 else {
            // No frames will come after every input has ended: the last markers go now.
            if let events, events.count > 0, allInputsEnded(inputs) { flushEvents() }
            return
        }
        let process = vtable.process!
        var done = 0
        while done < frames {
            let chunk = min(frames - done, maximumFrames)
            for port in 0..<inputCount {
                // SAFETY: a streaming input has `frames` frames waiting, so `done + chunk`
                // frames from its view's start are readable; silence holds `maximumFrames`.
                inputPointers[port] = inputs.hasEnded(port)
                    ? UnsafePointer(silence)
                    : io.frames(input: port).baseAddress! + done * channels
            }
            for port in 0..<outputCount {
                // SAFETY: every output has room for `frames` frames from its view's start.
                outputPointers[port] = io.frames(output: port).baseAddress! + done * channels
            }
            call.pointee.position = UInt64(framesProduced + done)
            call.pointee.frames = UInt32(chunk)
            // The waiting events apply from this call's first frame; later pieces carry none.
            attachEvents(to: call)
            // SAFETY: `call` and the pointer tables live until `deactivate`; each pointer
            // addresses `chunk × channels` samples set just above; the events live in `events`
            // until cleared after the call.
            if process(instance, call) != sluice_process_status_t(SLUICE_PROCESS_CONTINUE) {
                failures += 1
                for port in 0..<outputCount { outputPointers[port]!.update(repeating: 0, count: chunk * channels) }
            }
            detachEvents(from: call)
            done += chunk
        }
        inputs.consume(frames, &io)
        for port in 0..<outputCount { io.produce(frames, output: port) }
        framesProduced += frames
    }

    public func receive(_ marker: Marker, on port: Int, _ io: inout ProcessIO) {
        guard let inputs, port < inputCount else { return }
        // Every marker reaches the plugin, each input's end of stream once (a repeated one is
        // not news); downstream sees exactly what it saw before events existed.
        var repeatedEnd = false
        if case .endOfStream = marker.event { repeatedEnd = inputs.hasEnded(port) }
        if let events, !repeatedEnd {
            if events.isFull { flushEvents() }
            events.append(marker, input: port)
        }
        guard inputs.passes(marker, on: port) else { return }
        for output in 0..<outputCount { io.emit(marker.moved(to: framesProduced), on: output) }
    }

    /// [audio-thread] Queues a live parameter's change for the next call
    /// (`LivePluginProcessorNode.apply`).
    func queue(_ change: ParameterChange) {
        guard let events else { return }
        if events.isFull { flushEvents() }
        events.append(parameter: change.parameter, value: change.value)
    }

    /// [audio-thread] Points the call at the waiting events.
    @inline(__always)
    private func attachEvents(to call: UnsafeMutablePointer<sluice_process_t>) {
        guard let events, events.count > 0 else { return }
        // SAFETY: `call` and the list live until `deactivate`; the plugin reads the list only
        // during the call, after which `detachEvents` clears it.
        call.pointee.event_count = UInt32(events.count)
        call.pointee.events = UnsafePointer(events.pointers)
    }

    /// [audio-thread] The plugin has seen the events: they are gone.
    @inline(__always)
    private func detachEvents(from call: UnsafeMutablePointer<sluice_process_t>) {
        guard let events, call.pointee.event_count > 0 else { return }
        call.pointee.event_count = 0
        call.pointee.events = nil
        events.clear()
    }

    /// [audio-thread] Hands the waiting events over in a call of 0 frames (processor.h): the
    /// list is full, or no frames will follow.
    private func flushEvents() {
        guard let call, let inputPointers, let outputPointers, let silence, let scratch else { return }
        // Valid pointers, though a call of 0 frames reads and writes no sample.
        for port in 0..<inputCount { inputPointers[port] = UnsafePointer(silence) }
        for port in 0..<outputCount { outputPointers[port] = scratch }
        call.pointee.position = UInt64(framesProduced)
        call.pointee.frames = 0
        attachEvents(to: call)
        // SAFETY: as in `process`, with no samples to address.
        if vtable.process!(instance, call) != sluice_process_status_t(SLUICE_PROCESS_CONTINUE) { failures += 1 }
        detachEvents(from: call)
    }

    private func allInputsEnded(_ inputs: LockstepInputs) -> Bool {
        for port in 0..<inputCount where !inputs.hasEnded(port) { return false }
        return true
    }

    public func reset() {
        guard active else { return }
        vtable.reset!(instance)
        inputs?.reset()
        events?.clear()
        framesProduced = 0
    }

    public func deactivate() {
        if active {
            vtable.deactivate!(instance)
            active = false
        }
        call?.deallocate()
        call = nil
        inputPointers?.deallocate()
        inputPointers = nil
        outputPointers?.deallocate()
        outputPointers = nil
        silence?.deallocate()
        silence = nil
        scratch?.deallocate()
        scratch = nil
        inputs = nil
        events = nil
    }

    public func report(into report: inout NodeReport) {
        if failures > 0 { report.counters["plugin-errors", default: 0] += failures }
    }
}

/// A plugin processor with live parameters (`SLUICE_PARAM_LIVE`): the slot hands it each
/// change (`apply`), and the plugin gets it as a parameter event at the frame it applies from.
/// Only types with a live parameter are made as this class, so a graph's live controls
/// (`ParameterControl`) list exactly the nodes that have some.
final class LivePluginProcessorNode: PluginProcessorNode, LiveParameterNode {
    /// [audio-thread] Queues the change for the plugin's next call; allocates nothing.
    func apply(_ change: ParameterChange) {
        queue(change)
    }
}
