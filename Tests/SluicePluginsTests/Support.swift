import Foundation
import Glibc
import SluiceConfig
import SluiceGraph
import SluiceNodes
import SluicePlugins
import SluiceTestSupport
import Testing

/// The plugins `swift build` put beside the test bundle, the test-only ones of Tests/Fixtures
/// (`TestFixtures`), and graphs compiled with them.
enum Plugins {
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// A built plugin by file name, e.g. `libsluice-ducker.so`.
    static func built(_ name: String) -> String {
        CommandRunner.productsFolder.appendingPathComponent(name).path
    }

    static var ducker: String { built("libsluice-ducker.so") }
    static var espeak: String { built("libsluice-espeak.so") }
    static var swiftTest: String { TestFixtures.plugin("test-plugin-swift") }
    static var wrongABI: String { TestFixtures.plugin("test-plugin-wrong-abi") }
    static var noEntry: String { TestFixtures.plugin("test-plugin-no-entry") }
    static var events: String { TestFixtures.plugin("test-plugin-events") }
    static var abiVersion1: String { TestFixtures.plugin("test-plugin-abi-v1") }

    /// A processor of `type` from the plugin at `path`, created with `parameters` and every
    /// default the graph compiler would add.
    static func processor(_ type: String, from path: String, _ parameters: NodeParameters = NodeParameters()) throws -> any ProcessorNode {
        let library = try PluginLibrary.load(path: path)
        let nodeType = try #require(library.graphNodeTypes.first { $0.descriptor.typeName == type })
        var filled = parameters
        for parameter in nodeType.descriptor.parameters where filled[parameter.name] == nil {
            filled[parameter.name] = parameter.defaultValue
        }
        return try #require(try nodeType.make(filled) as? any ProcessorNode)
    }

    /// Compiles a graph from YAML with the built-in nodes and `libraries`' node types.
    static func compile(_ yaml: String, libraries: [PluginLibrary], baseDirectory: String? = nil) throws -> CompiledGraph {
        var registry = BuiltinNodes.registry()
        try PluginCatalog.register(libraries, into: &registry)
        let description = try GraphFile.parse(yaml, file: "test.yaml", baseDirectory: baseDirectory)
        return try GraphCompiler(registry: registry).compile(description)
    }
}

extension PluginError {
    /// The case's name, for matching without the paths.
    var kind: String {
        switch self {
        case .missingFile: "missingFile"
        case .notALibrary: "notALibrary"
        case .missingEntry: "missingEntry"
        case .invalidEntry: "invalidEntry"
        case .versionMismatch: "versionMismatch"
        case .initFailed: "initFailed"
        case .missingFactory: "missingFactory"
        case .invalidDescriptor: "invalidDescriptor"
        case .duplicateType: "duplicateType"
        case .writableByOthers: "writableByOthers"
        case .ownedByOthers: "ownedByOthers"
        }
    }
}

/// Runs `body`, expecting a `PluginError`; returns it.
func pluginError(_ body: () throws -> Void) -> PluginError? {
    do {
        try body()
        return nil
    } catch let error as PluginError {
        return error
    } catch {
        Issue.record("not a PluginError: \(error)")
        return nil
    }
}

/// What `test-events` (Tests/Fixtures/Plugins/events) recorded, read through the function it exports.
enum EventLog {
    /// One record: see event_recorder.c.
    struct Record: Hashable, CustomStringConvertible {
        enum Kind: Int { case parameter = 1, marker = 2, call = 3, broken = 9 }
        var kind: Kind
        /// A parameter's index, a marker's kind, a call's frames or a broken rule's code.
        var detail: Int
        /// A marker's input, or a call's event count.
        var input: Int
        var offset: Int
        /// The stream frame it applies from (position + offset), or a call's position.
        var frame: Int
        /// A parameter's value, or a marker's utterance.
        var value: Double
        var flags: Int
        /// A text span's start × 65536 + end.
        var text: Int

        var description: String { "\(kind) \(detail) in \(input) +\(offset) @\(frame) = \(value)" }
    }

    /// Log `log`'s records, in the order written.
    static func read(_ log: Int) throws -> [Record] {
        // The loader opened the library already and never closes it: this finds that copy.
        let handle = try #require(dlopen(Plugins.events, RTLD_NOW | RTLD_NOLOAD), "the events plugin is not loaded")
        defer { dlclose(handle) }
        let symbol = try #require(dlsym(handle, "test_events_copy"))
        typealias Copy = @convention(c) (UInt32, UnsafeMutablePointer<Double>?, UInt32) -> UInt32
        // SAFETY: event_recorder.c exports `test_events_copy` with exactly this signature.
        let copy = unsafeBitCast(symbol, to: Copy.self)
        let count = copy(UInt32(log), nil, 0)
        var values = [Double](repeating: 0, count: Int(count) * 8)
        let copied = values.withUnsafeMutableBufferPointer { copy(UInt32(log), $0.baseAddress, count) }
        #expect(copied == count)
        return (0..<Int(count)).map { index in
            let v = Array(values[(index * 8)..<(index * 8 + 8)])
            return Record(
                kind: Record.Kind(rawValue: Int(v[0]))!, detail: Int(v[1]), input: Int(v[2]), offset: Int(v[3]),
                frame: Int(v[4]), value: v[5], flags: Int(v[6]), text: Int(v[7]))
        }
    }
}
