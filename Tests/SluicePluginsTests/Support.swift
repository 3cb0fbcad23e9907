import Foundation
import SluiceConfig
import SluiceGraph
import SluiceNodes
import SluicePlugins
import SluiceTestSupport
import Testing

/// The plugins `swift build` put beside the test bundle, and graphs compiled with them.
enum Plugins {
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// A built plugin (or test library) by file name, e.g. `libsluice-ducker.so`.
    static func built(_ name: String) -> String {
        CommandRunner.productsFolder.appendingPathComponent(name).path
    }

    static var ducker: String { built("libsluice-ducker.so") }
    static var espeak: String { built("libsluice-espeak.so") }
    static var swiftTest: String { built("libtest-plugin-swift.so") }
    static var wrongABI: String { built("libtest-plugin-wrong-abi.so") }
    static var noEntry: String { built("libtest-plugin-no-entry.so") }

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
