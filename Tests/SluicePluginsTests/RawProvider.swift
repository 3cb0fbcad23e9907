import Foundation
import Glibc
import SluicePluginABI
import SluicePlugins
import Synchronization
import Testing

/// The espeak provider driven raw.
typealias RawEspeak = RawProvider

/// One provider instance driven through its C vtable, as the host drives a provider, for the
/// tests about `read` itself (the graph adapter stops calling `read` once cancelled).
final class RawProvider: @unchecked Sendable {
    // SAFETY (@unchecked Sendable): the vtable's thread rules hold in the tests: text calls
    // and `read` on one test thread at a time, `cancel` and `get_counters` from any.

    struct CreationFailed: Error, Equatable {
        var code: String
        var message: String
    }

    struct Timeout: Error, CustomStringConvertible {
        var what: String
        var description: String { "timed out: \(what)" }
    }

    enum Read: Equatable {
        case data([UInt8])
        case utteranceEnd
        case end
        case wouldBlock
        case error(code: String, message: String)
    }

    /// Everything read until END: the bytes per utterance, the events without data.
    struct Reading: Sendable {
        var bytes = 0
        var utterances: [Int] = [0]
        var events: [Event] = []
        var audio: [UInt8] = []

        enum Event: Equatable, Sendable { case utteranceEnd, end }

        var samples: [Float] {
            stride(from: 0, to: audio.count - 1, by: 2).map { Float(Int16(bitPattern: UInt16(audio[$0]) | UInt16(audio[$0 + 1]) << 8)) / 32768 }
        }
    }

    private let library: PluginLibrary
    private let instance: UnsafeMutableRawPointer
    private let vtable: sluice_provider_vtable_t
    private let destroyed = Atomic<Bool>(false)

    /// A parameter value as the host hands it to `create_provider`.
    enum Value {
        case string(String)
        case integer(Int)
        case number(Double)
    }

    /// An instance of provider `type` from the plugin at `path`, created with `values` (the
    /// plugin's defaults for the rest).
    init(path: String, type: String, _ values: [(String, Value)]) throws {
        library = try PluginLibrary.load(path: path)
        // SAFETY: the library is loaded (and initialised) by `library`, which stays alive as
        // long as this instance; RTLD_NOLOAD only finds it. The entry, the factory and the
        // vtable are the plugin's static data, valid until `deinit`.
        guard let handle = dlopen(path, RTLD_NOW | RTLD_NOLOAD), let symbol = dlsym(handle, "sluice_plugin_entry")
        else { throw CreationFailed(code: "dlopen", message: String(cString: dlerror())) }
        defer { dlclose(handle) }
        typealias Entry = @convention(c) () -> UnsafePointer<sluice_plugin_entry_t>?
        let entry = unsafeBitCast(symbol, to: Entry.self)()!
        let factory = entry.pointee.get_factory!(SLUICE_NODE_FACTORY_ID)!.assumingMemoryBound(to: sluice_node_factory_t.self)
        var names: [UnsafeMutablePointer<CChar>] = []
        defer { names.forEach { free($0) } }
        func c(_ text: String) -> UnsafePointer<CChar> {
            let copy = strdup(text)!
            names.append(copy)
            return UnsafePointer(copy)
        }
        let cValues = values.map { name, value in
            switch value {
            case .string(let text):
                sluice_param_value_t(name: c(name), type: sluice_param_type_t(SLUICE_PARAM_STRING), value: sluice_value_t(number: 0, integer: 0, boolean: false, string: c(text)))
            case .integer(let integer):
                sluice_param_value_t(name: c(name), type: sluice_param_type_t(SLUICE_PARAM_INTEGER), value: sluice_value_t(number: 0, integer: Int64(integer), boolean: false, string: nil))
            case .number(let number):
                sluice_param_value_t(name: c(name), type: sluice_param_type_t(SLUICE_PARAM_NUMBER), value: sluice_value_t(number: number, integer: 0, boolean: false, string: nil))
            }
        }
        var provider = sluice_provider_t()
        var error = sluice_error_t()
        guard factory.pointee.create_provider!(factory, type, cValues, UInt32(cValues.count), &provider, &error),
            let created = provider.instance, let vtable = provider.vtable
        else { throw CreationFailed(code: Self.text(&error.code), message: Self.text(&error.message)) }
        instance = created
        self.vtable = vtable.pointee
    }

    /// An espeak instance with these settings.
    convenience init(voice: String = "en", rate: Int = 175, pitch: Int = 50, volume: Int = 100, buffer: Double = 1.0, engines: Int = 0) throws {
        try self.init(path: Plugins.espeak, type: "espeak", [
            ("voice", .string(voice)), ("rate", .integer(rate)), ("pitch", .integer(pitch)), ("volume", .integer(volume)),
            ("buffer", .number(buffer)), ("engines", .integer(engines)),
        ])
    }

    deinit { destroy() }

    /// Destroys the instance (once); nothing may be called after it.
    func destroy() {
        guard !destroyed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        vtable.destroy!(instance)
    }

    static func text<T>(_ field: inout T) -> String {
        withUnsafeBytes(of: &field) { bytes in String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self) }
    }

    func begin() { var error = sluice_error_t(); #expect(vtable.begin_utterance!(instance, &error)) }

    func push(_ text: String) {
        var error = sluice_error_t()
        let bytes = Array(text.utf8)
        #expect(bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { vtable.push_text!(instance, $0.baseAddress, $0.count, &error) }
        })
    }

    func end() { var error = sluice_error_t(); #expect(vtable.end_utterance!(instance, &error)) }

    func say(_ text: String) {
        begin()
        push(text)
        end()
    }

    func endText() { vtable.end_text!(instance) }

    var capabilities: UInt32 { vtable.get_capabilities?(instance) ?? 0 }

    /// The word marks `take_word_marks` hands out now, taken 3 at a time (so the "call again
    /// while it returns capacity" path is walked).
    func takeWordMarks() -> [sluice_word_mark_t] {
        var all: [sluice_word_mark_t] = []
        var buffer = [sluice_word_mark_t](repeating: sluice_word_mark_t(), count: 3)
        while true {
            let count = Int(vtable.take_word_marks!(instance, &buffer, 3))
            all += buffer.prefix(count)
            if count < 3 { return all }
        }
    }

    func cancel() { vtable.cancel!(instance) }

    func read(capacity: Int = 4096) -> Read {
        var buffer = [UInt8](repeating: 0, count: capacity)
        var written = 0
        var error = sluice_error_t()
        let status = buffer.withUnsafeMutableBytes { vtable.read!(instance, $0.baseAddress, capacity, &written, &error) }
        switch status {
        case sluice_read_status_t(SLUICE_READ_DATA): return .data(Array(buffer.prefix(written)))
        case sluice_read_status_t(SLUICE_READ_UTTERANCE_END): return .utteranceEnd
        case sluice_read_status_t(SLUICE_READ_END): return .end
        case sluice_read_status_t(SLUICE_READ_WOULD_BLOCK): return .wouldBlock
        default: return .error(code: Self.text(&error.code), message: Self.text(&error.message))
        }
    }

    /// Reads until END, waiting a millisecond after each would-block; fails after `timeout`.
    func readToEnd(timeout: Double = 60) throws -> Reading {
        var reading = Reading()
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            switch read() {
            case .data(let bytes):
                reading.bytes += bytes.count
                reading.utterances[reading.utterances.count - 1] += bytes.count
                reading.audio += bytes
            case .utteranceEnd:
                reading.events.append(.utteranceEnd)
                reading.utterances.append(0)
            case .end:
                reading.events.append(.end)
                reading.utterances.removeLast()
                return reading
            case .wouldBlock:
                usleep(1_000)
            case .error(let code, let message):
                throw CreationFailed(code: code, message: message)
            }
        }
        throw Timeout(what: "reading to the end")
    }

    func counters() -> [String: Int] {
        var buffer = [sluice_counter_t](repeating: sluice_counter_t(), count: 8)
        let count = Int(vtable.get_counters!(instance, &buffer, 8))
        var counters: [String: Int] = [:]
        for counter in buffer.prefix(min(count, 8)) { counters[String(cString: counter.name)] = Int(counter.value) }
        return counters
    }

    /// Polls the counters until `condition` holds; fails after `timeout` seconds.
    func waitUntil(timeout: Double = 60, _ condition: ([String: Int]) -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while !condition(counters()) {
            guard Date() < deadline else { throw Timeout(what: "counters \(counters())") }
            usleep(1_000)
        }
    }
}

