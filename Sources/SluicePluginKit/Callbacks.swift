import SluicePluginABI
import Synchronization

// The C functions behind the entry, the factory and the vtables. Plain functions with their
// state passed through the instance pointer (never closures, which could inherit an actor's
// isolation and trap on a foreign thread).

// MARK: Entry

func kitInit(_ path: UnsafePointer<CChar>?) -> Bool {
    KitState.shared.state.withLock { state in
        guard let define = state.define else { return false }
        state.nodes = define()
        state.descriptors = CDescriptors(state.nodes.map(\.description))
        return true
    }
}

func kitDeinit() {
    KitState.shared.state.withLock { state in
        state.nodes = []
        state.descriptors = nil
    }
}

func kitGetFactory(_ id: UnsafePointer<CChar>?) -> UnsafeRawPointer? {
    guard let id, String(cString: id) == SLUICE_NODE_FACTORY_ID else { return nil }
    return UnsafeRawPointer(KitState.shared.factory)
}

// MARK: Factory

func factoryCount(_ factory: UnsafePointer<sluice_node_factory_t>?) -> UInt32 {
    KitState.shared.state.withLock { UInt32($0.nodes.count) }
}

func factoryGetDescriptor(_ factory: UnsafePointer<sluice_node_factory_t>?, _ index: UInt32) -> UnsafePointer<sluice_node_descriptor_t>? {
    KitState.shared.state.withLock { state in
        guard let descriptors = state.descriptors, Int(index) < descriptors.count else { return nil }
        return UnsafePointer(descriptors.descriptors + Int(index))
    }
}

/// The node named `name`, and the values as `Parameters`.
private func lookUp(
    _ name: UnsafePointer<CChar>?, _ values: UnsafePointer<sluice_param_value_t>?, _ count: UInt32
) -> (PluginNode?, Parameters) {
    let typeName = name.map { String(cString: $0) } ?? ""
    let node = KitState.shared.state.withLock { state in state.nodes.first { $0.description.typeName == typeName } }
    var parameters = Parameters()
    for index in 0..<Int(count) {
        // SAFETY: the host passes `count` values, valid during the call.
        let value = values![index]
        guard let namePointer = value.name else { continue }
        let name = String(cString: namePointer)
        switch value.type {
        case sluice_param_type_t(SLUICE_PARAM_NUMBER): parameters.values[name] = .number(value.value.number)
        case sluice_param_type_t(SLUICE_PARAM_INTEGER): parameters.values[name] = .integer(Int(value.value.integer))
        case sluice_param_type_t(SLUICE_PARAM_BOOLEAN): parameters.values[name] = .boolean(value.value.boolean)
        default: parameters.values[name] = .string(value.value.string.map { String(cString: $0) } ?? "")
        }
    }
    return (node, parameters)
}

func factoryCreateProvider(
    _ factory: UnsafePointer<sluice_node_factory_t>?, _ name: UnsafePointer<CChar>?,
    _ values: UnsafePointer<sluice_param_value_t>?, _ count: UInt32,
    _ provider: UnsafeMutablePointer<sluice_provider_t>?, _ errorOut: UnsafeMutablePointer<sluice_error_t>?
) -> Bool {
    let (node, parameters) = lookUp(name, values, count)
    guard case .provider(_, let make)? = node else {
        PluginError(code: "unknown-type", message: "this plugin has no provider of that name").write(to: errorOut)
        return false
    }
    do throws(PluginError) {
        let box = ProviderBox(try make(parameters))
        provider?.pointee = sluice_provider_t(
            instance: Unmanaged.passRetained(box).toOpaque(), vtable: UnsafePointer(ProviderBox.vtable))
        return true
    } catch {
        error.write(to: errorOut)
        return false
    }
}

func factoryCreateProcessor(
    _ factory: UnsafePointer<sluice_node_factory_t>?, _ name: UnsafePointer<CChar>?,
    _ values: UnsafePointer<sluice_param_value_t>?, _ count: UInt32,
    _ processor: UnsafeMutablePointer<sluice_processor_t>?, _ errorOut: UnsafeMutablePointer<sluice_error_t>?
) -> Bool {
    let (node, parameters) = lookUp(name, values, count)
    guard case .processor(_, let make)? = node else {
        PluginError(code: "unknown-type", message: "this plugin has no processor of that name").write(to: errorOut)
        return false
    }
    do throws(PluginError) {
        let box = ProcessorBox(try make(parameters))
        processor?.pointee = sluice_processor_t(
            instance: Unmanaged.passRetained(box).toOpaque(), vtable: UnsafePointer(ProcessorBox.vtable))
        return true
    } catch {
        error.write(to: errorOut)
        return false
    }
}

// MARK: Processor

/// Holds a Swift processor behind the C instance pointer.
final class ProcessorBox {
    let processor: any Processor

    init(_ processor: any Processor) {
        self.processor = processor
    }

    // SAFETY: allocated once and never freed or written again; vtables outlive instances.
    nonisolated(unsafe) static let vtable: UnsafeMutablePointer<sluice_processor_vtable_t> = {
        let vtable = UnsafeMutablePointer<sluice_processor_vtable_t>.allocate(capacity: 1)
        vtable.initialize(to: sluice_processor_vtable_t(
            activate: processorActivate, process: processorProcess, reset: processorReset,
            deactivate: processorDeactivate, destroy: processorDestroy,
            size: UInt32(MemoryLayout<sluice_processor_vtable_t>.size)))
        return vtable
    }()

    /// The box behind `instance`, without retaining it.
    static func with<R>(_ instance: UnsafeMutableRawPointer?, _ body: (ProcessorBox) -> R) -> R {
        // SAFETY: `instance` came from `passRetained` in `factoryCreateProcessor` and is
        // released only by `processorDestroy`, after which the host makes no call.
        Unmanaged<ProcessorBox>.fromOpaque(instance!)._withUnsafeGuaranteedRef(body)
    }
}

func processorActivate(
    _ instance: UnsafeMutableRawPointer?, _ rate: UInt32, _ maximumFrames: UInt32, _ channels: UInt32,
    _ errorOut: UnsafeMutablePointer<sluice_error_t>?
) -> Bool {
    ProcessorBox.with(instance) { box in
        ProcessEvents.rehearse()
        do throws(PluginError) {
            try box.processor.activate(sampleRate: Int(rate), maximumFrames: Int(maximumFrames), channels: Int(channels))
            return true
        } catch {
            error.write(to: errorOut)
            return false
        }
    }
}

func processorProcess(_ instance: UnsafeMutableRawPointer?, _ process: UnsafePointer<sluice_process_t>?) -> sluice_process_status_t {
    ProcessorBox.with(instance) { box in
        box.processor.process(ProcessBlock(raw: process!))
            ? sluice_process_status_t(SLUICE_PROCESS_CONTINUE) : sluice_process_status_t(SLUICE_PROCESS_ERROR)
    }
}

func processorReset(_ instance: UnsafeMutableRawPointer?) {
    ProcessorBox.with(instance) { $0.processor.reset() }
}

func processorDeactivate(_ instance: UnsafeMutableRawPointer?) {
    ProcessorBox.with(instance) { $0.processor.deactivate() }
}

func processorDestroy(_ instance: UnsafeMutableRawPointer?) {
    // SAFETY: balances the `passRetained` of `factoryCreateProcessor`; the host calls nothing
    // on the instance afterwards.
    Unmanaged<ProcessorBox>.fromOpaque(instance!).release()
}

// MARK: Provider

/// Holds a Swift provider behind the C instance pointer.
final class ProviderBox: Sendable {
    let provider: any Provider

    init(_ provider: any Provider) {
        self.provider = provider
    }

    // SAFETY: allocated once and never freed or written again; vtables outlive instances.
    nonisolated(unsafe) static let vtable: UnsafeMutablePointer<sluice_provider_vtable_t> = {
        let vtable = UnsafeMutablePointer<sluice_provider_vtable_t>.allocate(capacity: 1)
        vtable.initialize(to: sluice_provider_vtable_t(
            get_format: providerGetFormat, begin_utterance: providerBeginUtterance, push_text: providerPushText,
            end_utterance: providerEndUtterance, end_text: providerEndText, read: providerRead,
            cancel: providerCancel, destroy: providerDestroy, get_counters: providerGetCounters,
            get_capabilities: providerGetCapabilities, size: UInt32(MemoryLayout<sluice_provider_vtable_t>.size),
            take_word_marks: providerTakeWordMarks))
        return vtable
    }()

    static func with<R>(_ instance: UnsafeMutableRawPointer?, _ body: (ProviderBox) -> R) -> R {
        // SAFETY: `instance` came from `passRetained` in `factoryCreateProvider` and is
        // released only by `providerDestroy`, after which the host makes no call.
        Unmanaged<ProviderBox>.fromOpaque(instance!)._withUnsafeGuaranteedRef(body)
    }
}

func providerGetFormat(_ instance: UnsafeMutableRawPointer?, _ format: UnsafeMutablePointer<sluice_pcm_format_t>?) -> Bool {
    ProviderBox.with(instance) { box in
        let swift = box.provider.format
        let sample: Int =
            switch swift.sampleFormat {
            case .s16le: SLUICE_SAMPLE_S16LE
            case .s24le: SLUICE_SAMPLE_S24LE
            case .s32le: SLUICE_SAMPLE_S32LE
            case .f32le: SLUICE_SAMPLE_F32LE
            }
        format?.pointee = sluice_pcm_format_t(
            sample_format: sluice_sample_format_t(sample), sample_rate: UInt32(swift.sampleRate),
            channels: UInt32(swift.channels))
        return true
    }
}

/// Runs a throwing text call and reports its error to the host.
private func textCall(
    _ instance: UnsafeMutableRawPointer?, _ errorOut: UnsafeMutablePointer<sluice_error_t>?,
    _ body: (any Provider) throws(PluginError) -> Void
) -> Bool {
    ProviderBox.with(instance) { box in
        do throws(PluginError) {
            try body(box.provider)
            return true
        } catch {
            error.write(to: errorOut)
            return false
        }
    }
}

func providerBeginUtterance(_ instance: UnsafeMutableRawPointer?, _ errorOut: UnsafeMutablePointer<sluice_error_t>?) -> Bool {
    textCall(instance, errorOut) { provider throws(PluginError) in try provider.beginUtterance() }
}

func providerPushText(
    _ instance: UnsafeMutableRawPointer?, _ text: UnsafePointer<CChar>?, _ length: Int,
    _ errorOut: UnsafeMutablePointer<sluice_error_t>?
) -> Bool {
    // SAFETY: the host passes `length` bytes of UTF-8, valid during the call.
    let string = String(decoding: UnsafeRawBufferPointer(start: text, count: text == nil ? 0 : length), as: UTF8.self)
    return textCall(instance, errorOut) { provider throws(PluginError) in try provider.push(text: string) }
}

func providerEndUtterance(_ instance: UnsafeMutableRawPointer?, _ errorOut: UnsafeMutablePointer<sluice_error_t>?) -> Bool {
    textCall(instance, errorOut) { provider throws(PluginError) in try provider.endUtterance() }
}

func providerEndText(_ instance: UnsafeMutableRawPointer?) {
    ProviderBox.with(instance) { $0.provider.endText() }
}

func providerRead(
    _ instance: UnsafeMutableRawPointer?, _ buffer: UnsafeMutableRawPointer?, _ capacity: Int,
    _ written: UnsafeMutablePointer<Int>?, _ errorOut: UnsafeMutablePointer<sluice_error_t>?
) -> sluice_read_status_t {
    ProviderBox.with(instance) { box in
        written?.pointee = 0
        // SAFETY: the host's buffer holds `capacity` bytes during the call.
        let result = box.provider.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: buffer == nil ? 0 : capacity))
        switch result {
        case .data(let count):
            written?.pointee = count
            return sluice_read_status_t(SLUICE_READ_DATA)
        case .utteranceEnd: return sluice_read_status_t(SLUICE_READ_UTTERANCE_END)
        case .end: return sluice_read_status_t(SLUICE_READ_END)
        case .wouldBlock: return sluice_read_status_t(SLUICE_READ_WOULD_BLOCK)
        case .failed(let failure):
            failure.write(to: errorOut)
            return sluice_read_status_t(SLUICE_READ_ERROR)
        }
    }
}

func providerCancel(_ instance: UnsafeMutableRawPointer?) {
    ProviderBox.with(instance) { $0.provider.cancel() }
}

func providerDestroy(_ instance: UnsafeMutableRawPointer?) {
    // SAFETY: balances the `passRetained` of `factoryCreateProvider`; the host calls nothing
    // on the instance afterwards.
    Unmanaged<ProviderBox>.fromOpaque(instance!).release()
}

func providerGetCounters(
    _ instance: UnsafeMutableRawPointer?, _ counters: UnsafeMutablePointer<sluice_counter_t>?, _ capacity: UInt32
) -> UInt32 {
    ProviderBox.with(instance) { box in
        let values = box.provider.counters
        for (index, counter) in values.prefix(Int(capacity)).enumerated() {
            // SAFETY: the host's array holds `capacity` counters; `index` < `capacity`.
            counters?[index] = sluice_counter_t(name: CounterNames.shared.cString(counter.name), value: counter.value)
        }
        return UInt32(values.count)
    }
}

func providerGetCapabilities(_ instance: UnsafeMutableRawPointer?) -> UInt32 {
    ProviderBox.with(instance) { box in
        (box.provider.acceptsIncrementalText ? UInt32(SLUICE_PROVIDER_INCREMENTAL_TEXT) : 0)
            | (box.provider.reportsWordTiming ? UInt32(SLUICE_PROVIDER_WORD_TIMING) : 0)
    }
}

func providerTakeWordMarks(
    _ instance: UnsafeMutableRawPointer?, _ marks: UnsafeMutablePointer<sluice_word_mark_t>?, _ capacity: UInt32
) -> UInt32 {
    ProviderBox.with(instance) { box in
        guard let marks, capacity > 0 else { return 0 }
        let taken = box.provider.takeWordMarks(limit: Int(capacity))
        for (index, mark) in taken.prefix(Int(capacity)).enumerated() {
            // SAFETY: the host's array holds `capacity` marks; `index` < `capacity`.
            marks[index] = sluice_word_mark_t(
                text_start: UInt32(clamping: mark.text.lowerBound),
                text_length: UInt32(clamping: mark.text.count), audio_offset: UInt64(mark.audioOffset))
        }
        return UInt32(min(taken.count, Int(capacity)))
    }
}

/// The C names of counters: the ABI wants them valid until `deinit`, so each distinct name is
/// copied once and kept for the life of the process (a provider has a handful).
final class CounterNames: Sendable {
    static let shared = CounterNames()
    // SAFETY: a stored C string is never written or freed, so handing it out is safe.
    private let names = Mutex<[String: UnsafePointer<CChar>]>([:])

    func cString(_ name: String) -> UnsafePointer<CChar> {
        names.withLock { names in
            if let stored = names[name] { return stored }
            let utf8 = Array(name.utf8CString)
            let copy = UnsafeMutablePointer<CChar>.allocate(capacity: utf8.count)
            copy.initialize(from: utf8, count: utf8.count)
            names[name] = UnsafePointer(copy)
            return UnsafePointer(copy)
        }
    }
}
