import ArgumentParser
import Foundation
import SluiceConfig
import SluiceGraph
import SluiceJACK
import SluiceNodes

/// Reads the GRAPH argument: a graph file, or a one-line graph (`tone ! fader ! wav.sink
/// path=out.wav`) when no such file exists and the text has a `!` or a space.
enum GraphLoading {
    static func description(of argument: String, oneLine: Bool = false) throws(GraphDiagnostics) -> GraphDescription {
        if !oneLine && (FileManager.default.fileExists(atPath: argument) || !(argument.contains("!") || argument.contains(" "))) {
            return try GraphFile.load(path: argument)
        }
        return try OneLineGraph.parse(argument)
    }

    /// The node types a graph can use: the built-in ones, `jack.sink` and `jack.source` (on
    /// `server`, when a graph names none).
    static func registry(server: String? = nil) -> NodeRegistry {
        var registry = BuiltinNodes.registry()
        // The names are distinct from the built-in ones; a test checks the whole listing.
        try! registry.register(JackSink.type(defaultServer: server))
        try! registry.register(JackSource.type(defaultServer: server))
        return registry
    }

    /// Loads and checks a graph, printing every problem to standard error.
    static func compile(
        _ argument: String, options: GraphCompiler.Options = .init(), server: String? = nil, oneLine: Bool = false,
        adjust: (inout GraphDescription) -> Void = { _ in }
    ) throws -> CompiledGraph {
        do {
            var description = try description(of: argument, oneLine: oneLine)
            adjust(&description)
            return try GraphCompiler(registry: registry(server: server), options: options).compile(description)
        } catch let diagnostics as GraphDiagnostics {
            printError(diagnostics.description)
            throw ExitCode(1)
        }
    }
}

func printError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}
