import Foundation
import Glibc
import SluicePluginABI
import SluicePlugins
import Synchronization
import Testing

/// One provider instance of a plugin driven through its C vtable, as the host drives a
/// provider: text calls on the test's thread, reads and word marks as the source thread would.
/// For the tests about the plugin itself (the graph adapter stops calling `read` once
/// cancelled, and takes word marks its own way).
public final class RawProvider: @unchecked Sendable {
    // SAFETY (@unchecked Sendable): the vtable's thread rules hold in the tests: text calls
    // and `read` on one test thread at a time, `cancel` and `get_counters` from any.

    public struct CreationFailed: Error, Equatable, CustomStringConvertible {
        public var code: String
        public var message: String
        public var description: String { "\(code): \(message)" }

        public init(code: String, message: String) {
            self.code = code
            self.message = message
        }
    }

    public struct Timeout: Error, CustomStringConvertible {
        public var what: String
        public var description: String { "timed out: \(what)" }

        public init(what: String) { self.what = what }
    }

    public enum Read: Equatable {
        case data([UInt8])
        case utteranceEnd
        case end
        case wouldBlock
        case error(code: String, message: String)
    }

    /// A parameter value as the host hands it to `create_provider`.
    public enum Value: Sendable {
        case string(String)
        case integer(Int)
        case number(Double)
        case boolean(Bool)
    }

    /// Everything `readToEnd` read: the bytes per utterance, the events without data.
    public struct Reading: Sendable {
        public var bytes = 0
        public var utterances: [Int] = [0]
        public var events: [Event] = []
        public var audio: [UInt8] = []

        public enum Event: Equatable, Sendable { case utteranceEnd, end }

        /// The audio as S16LE samples scaled to ±1.
        public var samples: [Float] {
            stride(from: 0, to: audio.count - 1, by: 2).map { Float(Int16(bitPattern: UInt16(audio[$0]) | UInt16(audio[$0 + 1]) << 8)) / 32768 }
        }
    }

    /// Everything `readAll` read until END or an error: per utterance its bytes and the marks
    /// taken after each read that returned data (as a host takes them).
    public struct MarkedReading {
        public var utterances: [[UInt8]] = [[]]
        public var marks: [[sluice_word_mark_t]] = [[]]
        public var error: (code: String, message: String)?
        public var ended = false
        public var audio: [UInt8] { utterances.flatMap { $0 } }
    }

    private let library: PluginLibrary
    private let instance: UnsafeMutableRawPointer
    private let vtable: sluice_provider_vtable_t
    private let destroyed = Atomic<Bool>(false)

    /// An instance of provider `type` from the plugin at `path`, created with `values` (the
    /// plugin's defaults for the rest).
    public init(path: String, type: String, _ values: [(String, Value)]) throws {
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
            case .boolean(let boolean):
                sluice_param_value_t(name: c(name), type: sluice_param_type_t(SLUICE_PARAM_BOOLEAN), value: sluice_value_t(number: 0, integer: 0, boolean: boolean, string: nil))
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

    deinit { destroy() }

    /// Destroys the instance (once); nothing may be called after it.
    public func destroy() {
        guard !destroyed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        vtable.destroy!(instance)
    }

    static func text<T>(_ field: inout T) -> String {
        withUnsafeBytes(of: &field) { bytes in String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self) }
    }

    public func begin() { var error = sluice_error_t(); #expect(vtable.begin_utterance!(instance, &error), "\(Self.text(&error.message))") }

    public func push(_ text: String) {
        var error = sluice_error_t()
        let bytes = Array(text.utf8)
        #expect(bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { vtable.push_text!(instance, $0.baseAddress, $0.count, &error) }
        })
    }

    public func end() { var error = sluice_error_t(); #expect(vtable.end_utterance!(instance, &error)) }

    public func say(_ text: String) {
        begin()
        push(text)
        end()
    }

    public func endText() { vtable.end_text!(instance) }

    public var capabilities: UInt32 { vtable.get_capabilities?(instance) ?? 0 }

    /// The word marks `take_word_marks` hands out now, taken `batch` at a time until fewer
    /// come (so the "call again while it returns capacity" path is walked).
    public func takeWordMarks(batch: Int = 3) -> [sluice_word_mark_t] {
        var all: [sluice_word_mark_t] = []
        var buffer = [sluice_word_mark_t](repeating: sluice_word_mark_t(), count: batch)
        while true {
            let count = Int(vtable.take_word_marks!(instance, &buffer, UInt32(batch)))
            all += buffer.prefix(count)
            if count < batch { return all }
        }
    }

    public func cancel() { vtable.cancel!(instance) }

    public func read(capacity: Int = 4096) -> Read {
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

    /// Reads until END, waiting a millisecond after each would-block; throws the provider's
    /// error, or `Timeout` after `timeout` seconds.
    public func readToEnd(timeout: Double = 60) throws -> Reading {
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

    /// Reads (capacity `capacity` each) until END or an error, taking the word marks after
    /// each read of data, a millisecond's pause after each would-block; stops after `timeout`
    /// seconds with what it has.
    public func readAll(capacity: Int = 4096, timeout: Double = 20) -> MarkedReading {
        var reading = MarkedReading()
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            switch read(capacity: capacity) {
            case .data(let bytes):
                reading.utterances[reading.utterances.count - 1] += bytes
                reading.marks[reading.marks.count - 1] += takeWordMarks(batch: 16)
            case .utteranceEnd:
                reading.utterances.append([])
                reading.marks.append([])
            case .end:
                reading.utterances.removeLast()
                reading.marks.removeLast()
                reading.ended = true
                return reading
            case .wouldBlock:
                usleep(1_000)
            case .error(let code, let message):
                reading.error = (code, message)
                return reading
            }
        }
        return reading
    }

    /// The provider's counters by name.
    public func counters() -> [String: Int] {
        var buffer = [sluice_counter_t](repeating: sluice_counter_t(), count: 16)
        let count = Int(vtable.get_counters!(instance, &buffer, 16))
        var counters: [String: Int] = [:]
        for counter in buffer.prefix(min(count, 16)) { counters[String(cString: counter.name)] = Int(counter.value) }
        return counters
    }

    /// Polls the counters until `condition` holds; throws `Timeout` after `timeout` seconds.
    public func waitUntil(timeout: Double = 60, _ condition: ([String: Int]) -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while !condition(counters()) {
            guard Date() < deadline else { throw Timeout(what: "counters \(counters())") }
            usleep(1_000)
        }
    }
}
