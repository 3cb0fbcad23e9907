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
public final class PluginProcessorNode: ProcessorNode {
    /// The library stays loaded (and its `deinit` waits) while this node lives.
    public let library: PluginLibrary
    public let typeName: String
    private let instance: UnsafeMutableRawPointer
    private let vtable: UnsafePointer<sluice_processor_vtable_t>
    private let inputCount: Int
    private let outputCount: Int

    private var active = false
    private var channels = 0
    private var maximumFrames = 0
    // Allocated in `prepare`, freed in `deactivate`.
    private var call: UnsafeMutablePointer<sluice_process_t>?
    private var inputPointers: UnsafeMutablePointer<UnsafePointer<Float>?>?
    private var outputPointers: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>?
    private var silence: UnsafeMutablePointer<Float>?
    private var inputs: LockstepInputs?
    /// Output frames since the stream began.
    private var framesProduced = 0
    private var failures = 0

    init(
        library: PluginLibrary, type: PluginNodeType, instance: UnsafeMutableRawPointer,
        vtable: UnsafePointer<sluice_processor_vtable_t>
    ) throws(NodeCreationError) {
        let v = vtable.pointee
        guard v.activate != nil, v.process != nil, v.reset != nil, v.deactivate != nil, v.destroy != nil else {
            v.destroy?(instance)
            throw NodeCreationError("'\(type.descriptor.typeName)' (plugin \(library.path)) has a processor vtable with a NULL function")
        }
        self.library = library
        typeName = type.descriptor.typeName
        self.instance = instance
        self.vtable = vtable
        inputCount = type.descriptor.inputs.count
        outputCount = type.descriptor.outputs.count
    }

    deinit {
        deactivate()
        vtable.pointee.destroy!(instance)
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
        guard vtable.pointee.activate!(instance, UInt32(rate), UInt32(maximumFrames), UInt32(channels), &error) else {
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
            output_count: UInt32(outputCount), inputs: UnsafePointer(inputPointers), outputs: UnsafePointer(outputPointers)))
        self.call = call
        inputs = LockstepInputs(count: inputCount)
        framesProduced = 0
    }

    public func process(_ io: inout ProcessIO) {
        guard let call, let inputPointers, let outputPointers, let silence, let inputs else { return }
        var room = Int.max
        for port in 0..<outputCount { room = min(room, io.room(output: port)) }
        let frames = inputs.availableFrames(io, limit: room)
        guard frames > 0 else { return }
        let process = vtable.pointee.process!
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
            // SAFETY: `call` and the pointer tables live until `deactivate`; each pointer
            // addresses `chunk × channels` samples set just above.
            if process(instance, call) != sluice_process_status_t(SLUICE_PROCESS_CONTINUE) {
                failures += 1
                for port in 0..<outputCount { outputPointers[port]!.update(repeating: 0, count: chunk * channels) }
            }
            done += chunk
        }
        inputs.consume(frames, &io)
        for port in 0..<outputCount { io.produce(frames, output: port) }
        framesProduced += frames
    }

    public func receive(_ marker: Marker, on port: Int, _ io: inout ProcessIO) {
        guard let inputs, inputs.passes(marker, on: port) else { return }
        for output in 0..<outputCount { io.emit(marker.moved(to: framesProduced), on: output) }
    }

    public func reset() {
        guard active else { return }
        vtable.pointee.reset!(instance)
        inputs?.reset()
        framesProduced = 0
    }

    public func deactivate() {
        if active {
            vtable.pointee.deactivate!(instance)
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
        inputs = nil
    }

    public func report(into report: inout NodeReport) {
        if failures > 0 { report.counters["plugin-errors", default: 0] += failures }
    }
}
