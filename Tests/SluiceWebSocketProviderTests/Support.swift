import Foundation
import ProviderTestSupport
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

/// One `elevenlabs` instance driven through its C vtable, as a host drives it (`RawProvider`).
typealias ProviderDriver = RawProvider
typealias DriverFailure = RawProvider.CreationFailed

extension RawProvider {
    /// A driver for `server` with the test key in `keyEnv` (set only while creating).
    static func make(_ server: StreamInputTestServer, keyEnv: String, _ extra: [String: Value] = [:]) throws -> RawProvider {
        var parameters: [String: Value] = [
            "base-url": .string(server.baseURL), "key-env": .string(keyEnv), "voice": .string("voice-7"),
        ]
        for (name, value) in extra { parameters[name] = value }
        let values = parameters.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        return try withEnvironment([keyEnv: StreamInput.key]) {
            try RawProvider(path: StreamInput.pluginPath, type: "elevenlabs", values)
        }
    }
}
