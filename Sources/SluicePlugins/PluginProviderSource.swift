import SluiceAudio
import SluiceGraph
import SluicePluginABI
import Synchronization

/// A plugin provider as a graph `TextDrivenSource`: text in, PCM bytes out on its one output.
///
/// Text: each `receive(text:)` is one utterance (`begin_utterance`, `push_text`,
/// `end_utterance`); `beginUtterance()`, `push(text:)` and `endUtterance()` hand an
/// utterance over piece by piece (tokens from a language model). `finishText()` is
/// `end_text`. A text call the plugin refuses fails the stream at the next `produce`.
///
/// Audio: `produce` calls `read` once into the output's room. Utterance markers are placed
/// at the byte positions the provider's reads imply: `utteranceStart(k)` before the first
/// byte (or the end) of the k-th utterance, `utteranceEnd(k)` where `read` returned
/// SLUICE_READ_UTTERANCE_END; ids count from 0 in the order utterances were begun. "Would
/// block" returns at once with nothing produced (the graph calls again within a
/// millisecond); an error fails the stream with the plugin's code and message.
///
/// `cancel()` calls the plugin's `cancel` and ends the stream at the next `produce`. The
/// instance is destroyed when the node goes.
public final class PluginProviderSource: TextDrivenSource, @unchecked Sendable {
    // SAFETY (@unchecked Sendable): the plugin synchronises its text calls against `read`
    // (provider.h); `cancelled` and `textFailure` are atomic or behind a Mutex; the read
    // state (`inUtterance`, `utterance`, `position`) is touched only by `produce`, on the
    // source thread.

    /// The library stays loaded (and its `deinit` waits) while this node lives.
    public let library: PluginLibrary
    public let typeName: String
    /// The format `read` delivers, from the plugin's `get_format`.
    public let format: PCMFormat
    private let instance: UnsafeMutableRawPointer
    private let vtable: UnsafePointer<sluice_provider_vtable_t>
    private let cancelled = Atomic<Bool>(false)
    private let textFailure = Mutex<SourceFailure?>(nil)
    private let textLock = Mutex<Void>(())

    // Read state: the source thread's.
    private var inUtterance = false
    private var utterance: UInt32 = 0
    private var position = 0
    private var finished = false

    init(
        library: PluginLibrary, type: PluginNodeType, instance: UnsafeMutableRawPointer,
        vtable: UnsafePointer<sluice_provider_vtable_t>
    ) throws(NodeCreationError) {
        let v = vtable.pointee
        let name = type.descriptor.typeName
        guard v.get_format != nil, v.begin_utterance != nil, v.push_text != nil, v.end_utterance != nil,
            v.end_text != nil, v.read != nil, v.cancel != nil, v.destroy != nil
        else {
            v.destroy?(instance)
            throw NodeCreationError("'\(name)' (plugin \(library.path)) has a provider vtable with a NULL function")
        }
        var raw = sluice_pcm_format_t()
        guard v.get_format!(instance, &raw), let format = Self.format(raw) else {
            v.destroy!(instance)
            throw NodeCreationError(
                "'\(name)' (plugin \(library.path)) declared no usable output format (sample format \(raw.sample_format), \(raw.sample_rate) Hz, \(raw.channels) channels)")
        }
        self.library = library
        typeName = name
        self.format = format
        self.instance = instance
        self.vtable = vtable
    }

    deinit {
        vtable.pointee.destroy!(instance)
    }

    static func format(_ raw: sluice_pcm_format_t) -> PCMFormat? {
        let sample: SampleFormat
        switch raw.sample_format {
        case sluice_sample_format_t(SLUICE_SAMPLE_S16LE): sample = .s16le
        case sluice_sample_format_t(SLUICE_SAMPLE_S24LE): sample = .s24le
        case sluice_sample_format_t(SLUICE_SAMPLE_S32LE): sample = .s32le
        case sluice_sample_format_t(SLUICE_SAMPLE_F32LE): sample = .f32le
        default: return nil
        }
        guard (1_000...384_000).contains(raw.sample_rate), (1...8).contains(raw.channels) else { return nil }
        return PCMFormat(sample, channels: Int(raw.channels), sampleRate: Int(raw.sample_rate))
    }

    public func outputFormats(for inputs: [StreamFormat], context: FormatContext) throws(FormatMismatch) -> [StreamFormat] {
        [.bytes(format)]
    }

    // MARK: Text

    /// [control] One whole utterance.
    public func receive(text: String) {
        beginUtterance()
        push(text: text)
        endUtterance()
    }

    /// [control] Starts an utterance whose text follows in `push(text:)` calls.
    public func beginUtterance() {
        textCall { instance, error in vtable.pointee.begin_utterance!(instance, error) }
    }

    /// [control] Appends text (a token, a word) to the current utterance.
    public func push(text: String) {
        var text = text
        textCall { instance, error in
            text.withUTF8 { bytes in
                // SAFETY: `bytes` is valid for the call; the ABI says the plugin copies it.
                bytes.withMemoryRebound(to: CChar.self) { chars in
                    vtable.pointee.push_text!(instance, chars.baseAddress, chars.count, error)
                }
            }
        }
    }

    /// [control] The current utterance's text is complete.
    public func endUtterance() {
        textCall { instance, error in vtable.pointee.end_utterance!(instance, error) }
    }

    public func finishText() {
        textLock.withLock { _ in vtable.pointee.end_text!(instance) }
    }

    /// Calls a text function (one at a time, as the ABI promises the plugin) and keeps its
    /// first failure for `produce`.
    private func textCall(_ body: (UnsafeMutableRawPointer, UnsafeMutablePointer<sluice_error_t>) -> Bool) {
        var error = sluice_error_t()
        let succeeded = textLock.withLock { _ in body(instance, &error) }
        guard !succeeded else { return }
        let failure = PluginFailure(error)
        textFailure.withLock { stored in
            if stored == nil { stored = SourceFailure(code: failure.code.isEmpty ? "plugin-text" : failure.code, message: failure.message) }
        }
    }

    // MARK: Audio

    public func produce(_ io: inout ProcessIO, at time: Double) -> SourceStatus {
        if finished || cancelled.load(ordering: .acquiring) { return .finished }
        if let failure = textFailure.withLock({ $0 }) { return .failed(failure) }
        let room = io.bytes(output: 0)
        guard let base = room.baseAddress, room.count > 0 else { return .more }
        var written = 0
        var error = sluice_error_t()
        // SAFETY: `base` addresses `room.count` writable bytes of the output edge for this
        // call; the plugin writes at most `capacity` bytes and reports how many (checked below).
        let status = vtable.pointee.read!(instance, base, room.count, &written, &error)
        switch status {
        case sluice_read_status_t(SLUICE_READ_DATA):
            guard written > 0, written <= room.count else {
                return .failed(SourceFailure(
                    code: "plugin-read", message: "'\(typeName)' reported \(written) bytes read into \(room.count) bytes of room"))
            }
            startUtteranceIfNeeded(&io)
            io.produce(written, output: 0)
            position += written
            return .more
        case sluice_read_status_t(SLUICE_READ_UTTERANCE_END):
            startUtteranceIfNeeded(&io)
            io.emit(Marker(position: position, event: .utteranceEnd(UtteranceID(utterance))), on: 0)
            inUtterance = false
            utterance &+= 1
            return .more
        case sluice_read_status_t(SLUICE_READ_END):
            if inUtterance {
                io.emit(Marker(position: position, event: .utteranceEnd(UtteranceID(utterance))), on: 0)
                inUtterance = false
            }
            finished = true
            return .finished
        case sluice_read_status_t(SLUICE_READ_WOULD_BLOCK):
            return .more
        case sluice_read_status_t(SLUICE_READ_ERROR):
            let failure = PluginFailure(error)
            finished = true
            return .failed(SourceFailure(code: failure.code.isEmpty ? "plugin-error" : failure.code, message: failure.message))
        default:
            finished = true
            return .failed(SourceFailure(code: "plugin-read", message: "'\(typeName)' returned unknown read status \(status)"))
        }
    }

    private func startUtteranceIfNeeded(_ io: inout ProcessIO) {
        guard !inUtterance else { return }
        io.emit(Marker(position: position, event: .utteranceStart(UtteranceID(utterance))), on: 0)
        inUtterance = true
    }

    public func cancel() {
        cancelled.store(true, ordering: .releasing)
        vtable.pointee.cancel!(instance)
    }

    // MARK: Counters

    /// [any] The plugin's counters (`get_counters`), by name; empty when it keeps none.
    public func counters() -> [String: Int] {
        guard let getCounters = vtable.pointee.get_counters else { return [:] }
        var capacity: UInt32 = 16
        while true {
            var buffer = [sluice_counter_t](repeating: sluice_counter_t(), count: Int(capacity))
            // SAFETY: `buffer` holds `capacity` counters for the call; names are the plugin's
            // static strings (common.h), read before returning.
            let total = getCounters(instance, &buffer, capacity)
            guard total <= capacity else {
                capacity = total
                continue
            }
            var counters: [String: Int] = [:]
            for counter in buffer.prefix(Int(total)) {
                guard let name = counter.name else { continue }
                counters[String(cString: name)] = Int(counter.value)
            }
            return counters
        }
    }

    public func report(into report: inout NodeReport) {
        for (name, value) in counters() { report.counters[name, default: 0] += value }
    }
}
