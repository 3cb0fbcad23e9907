import Foundation
import SluiceConfig
import SluiceGraph
import SluiceNodes
import SluicePluginABI
import SluicePlugins
import SluiceTestSupport
import Synchronization
import Testing
import WebSocketTestSupport

/// What the stream-input tests share: the real `libsluice-elevenlabs.so`, driven through the
/// loader in a graph or directly through its C vtable, against `StreamInputTestServer`.
enum StreamInput {
    static let key = "el-ws-key-8c41d"

    static var pluginPath: String { CommandRunner.productsFolder.appendingPathComponent("libsluice-elevenlabs.so").path }

    /// A server with `modify` applied to the standard script (the test key, voice-7).
    static func server(_ modify: (inout StreamInputTestServer.Script) -> Void = { _ in }) throws -> StreamInputTestServer {
        var script = StreamInputTestServer.Script(key: key)
        modify(&script)
        return try StreamInputTestServer(script)
    }

    /// The provider node's YAML body for `server`.
    static func voice(_ server: StreamInputTestServer, keyEnv: String, _ extra: String = "") -> String {
        "type: elevenlabs, base-url: \"\(server.baseURL)\", key-env: \(keyEnv), voice: voice-7" + (extra.isEmpty ? "" : ", " + extra)
    }

    /// A graph: the provider → aligner [→ fader] → null.sink at 24 kHz.
    static func graph(_ voice: String, fade: Int? = nil) throws -> CompiledGraph {
        var registry = BuiltinNodes.registry()
        try PluginCatalog.register([try PluginLibrary.load(path: pluginPath)], into: &registry)
        let fader = fade.map { "  fade:  { type: fader, length: \($0) }\n" } ?? ""
        let chain = fade == nil ? "voice -> align -> out" : "voice -> align -> fade -> out"
        let yaml = """
            name: stream-input-test
            nodes:
              voice: { \(voice) }
              align: { type: aligner }
            \(fader)  out:   { type: null.sink, rate: 24000, channels: 1 }
            links:
              - \(chain)
            """
        return try GraphCompiler(registry: registry).compile(try GraphFile.parse(yaml, file: "test.yaml"))
    }

    /// Renders `text` (one utterance each) through the provider against `server`.
    static func render(_ server: StreamInputTestServer, keyEnv: String, extra: String = "", text: [String], fade: Int? = nil) throws
        -> ([Float], RunReport)
    {
        let graph = try withEnvironment([keyEnv: key]) { try Self.graph(voice(server, keyEnv: keyEnv, extra), fade: fade) }
        return try GraphRendering.render(graph, text: text)
    }

    /// S16LE bytes as the aligner turns them into Float32.
    static func floats(_ pcm: [UInt8]) -> [Float] {
        stride(from: 0, to: pcm.count - 1, by: 2).map { index in
            Float(Int16(bitPattern: UInt16(pcm[index]) | UInt16(pcm[index + 1]) << 8)) / 32768
        }
    }

    /// Waits until `condition` holds, checking every 2 ms; false after `timeout` seconds.
    @discardableResult
    static func wait(upTo timeout: Double = 20, until condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while !condition() {
            if Date() > deadline { return false }
            usleep(2_000)
        }
        return true
    }
}

/// Compares sample arrays without printing thousands of values.
func expectSame(_ actual: [Float], _ expected: [Float], sourceLocation: Testing.SourceLocation = #_sourceLocation) {
    #expect(actual.count == expected.count, "sample count", sourceLocation: sourceLocation)
    if let index = (0..<min(actual.count, expected.count)).first(where: { actual[$0] != expected[$0] }) {
        Issue.record("first difference at sample \(index) of \(expected.count): \(actual[index]) instead of \(expected[index])", sourceLocation: sourceLocation)
    }
}

struct DriverFailure: Error, CustomStringConvertible {
    var code: String
    var message: String
    var description: String { "\(code): \(message)" }
}

/// One `elevenlabs` instance driven through its C vtable, as a host drives it: text calls on
/// the test's thread, reads and word marks as the source thread would.
final class ProviderDriver: @unchecked Sendable {
    // SAFETY (@unchecked Sendable): the instance is used by one test thread at a time, as the
    // ABI's thread tags allow (text calls and reads may overlap; the plugin synchronises).
    enum Read: Equatable {
        case data([UInt8])
        case utteranceEnd
        case end
        case wouldBlock
        case error(code: String, message: String)
    }

    enum Value {
        case string(String)
        case number(Double)
        case integer(Int)
        case boolean(Bool)
    }

    private let library: PluginLibrary
    private let instance: UnsafeMutableRawPointer
    private let vtable: sluice_provider_vtable_t
    private let destroyed = Atomic<Bool>(false)

    init(_ parameters: [String: Value]) throws {
        library = try PluginLibrary.load(path: StreamInput.pluginPath)
        // SAFETY: the library is loaded (and initialised) by `library`, which stays alive as
        // long as this instance; RTLD_NOLOAD only finds it. The entry, the factory and the
        // vtable are the plugin's static data, valid until `deinit`.
        guard let handle = dlopen(StreamInput.pluginPath, RTLD_NOW | RTLD_NOLOAD), let symbol = dlsym(handle, "sluice_plugin_entry")
        else { throw DriverFailure(code: "dlopen", message: String(cString: dlerror())) }
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
        let values = parameters.map { name, value -> sluice_param_value_t in
            switch value {
            case .string(let text):
                sluice_param_value_t(name: c(name), type: sluice_param_type_t(SLUICE_PARAM_STRING), value: sluice_value_t(number: 0, integer: 0, boolean: false, string: c(text)))
            case .number(let number):
                sluice_param_value_t(name: c(name), type: sluice_param_type_t(SLUICE_PARAM_NUMBER), value: sluice_value_t(number: number, integer: 0, boolean: false, string: nil))
            case .integer(let integer):
                sluice_param_value_t(name: c(name), type: sluice_param_type_t(SLUICE_PARAM_INTEGER), value: sluice_value_t(number: 0, integer: Int64(integer), boolean: false, string: nil))
            case .boolean(let boolean):
                sluice_param_value_t(name: c(name), type: sluice_param_type_t(SLUICE_PARAM_BOOLEAN), value: sluice_value_t(number: 0, integer: 0, boolean: boolean, string: nil))
            }
        }
        var provider = sluice_provider_t()
        var error = sluice_error_t()
        guard factory.pointee.create_provider!(factory, "elevenlabs", values, UInt32(values.count), &provider, &error),
            let created = provider.instance, let vtable = provider.vtable
        else { throw DriverFailure(code: Self.text(&error.code), message: Self.text(&error.message)) }
        instance = created
        self.vtable = vtable.pointee
    }

    /// A driver for `server` with the test key in `keyEnv` (set only while creating).
    static func make(_ server: StreamInputTestServer, keyEnv: String, _ extra: [String: Value] = [:]) throws -> ProviderDriver {
        var parameters: [String: Value] = [
            "base-url": .string(server.baseURL), "key-env": .string(keyEnv), "voice": .string("voice-7"),
        ]
        for (name, value) in extra { parameters[name] = value }
        return try withEnvironment([keyEnv: StreamInput.key]) { try ProviderDriver(parameters) }
    }

    deinit { destroy() }

    func destroy() {
        guard !destroyed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        vtable.destroy!(instance)
    }

    static func text<T>(_ field: inout T) -> String {
        withUnsafeBytes(of: &field) { bytes in String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self) }
    }

    var capabilities: UInt32 { vtable.get_capabilities?(instance) ?? 0 }

    func begin() { var error = sluice_error_t(); #expect(vtable.begin_utterance!(instance, &error), "\(Self.text(&error.message))") }

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

    func takeWordMarks(capacity: Int = 16) -> [sluice_word_mark_t] {
        var marks = [sluice_word_mark_t](repeating: sluice_word_mark_t(), count: capacity)
        let count = Int(vtable.take_word_marks!(instance, &marks, UInt32(capacity)))
        return Array(marks.prefix(count))
    }

    /// Everything read until END or an error: per utterance its bytes and the marks taken
    /// after each read that returned data (as a host takes them).
    struct Reading {
        var utterances: [[UInt8]] = [[]]
        var marks: [[sluice_word_mark_t]] = [[]]
        var error: (code: String, message: String)?
        var ended = false
        var audio: [UInt8] { utterances.flatMap { $0 } }
    }

    /// Reads (capacity `capacity` each) until END or an error, a millisecond's pause after
    /// each would-block; stops after `timeout` seconds with what it has.
    func readAll(capacity: Int = 4096, timeout: Double = 20) -> Reading {
        var reading = Reading()
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            switch read(capacity: capacity) {
            case .data(let bytes):
                reading.utterances[reading.utterances.count - 1] += bytes
                while true {
                    let marks = takeWordMarks()
                    reading.marks[reading.marks.count - 1] += marks
                    if marks.count < 16 { break }
                }
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

    func counters() -> [String: Int] {
        var buffer = [sluice_counter_t](repeating: sluice_counter_t(), count: 16)
        let count = Int(vtable.get_counters!(instance, &buffer, 16))
        var counters: [String: Int] = [:]
        for counter in buffer.prefix(min(count, 16)) { counters[String(cString: counter.name)] = Int(counter.value) }
        return counters
    }
}
