import ArgumentParser
import Foundation
import SluiceConfig
import SluiceGraph
import SluiceHost

/// Reads the GRAPH argument: a graph file, or a one-line graph (`tone ! fader ! wav.sink
/// path=out.wav`) when no such file exists and the text has a `!` or a space.
enum GraphLoading {
    static func description(of argument: String, oneLine: Bool = false) throws(GraphDiagnostics) -> GraphDescription {
        if !oneLine && (FileManager.default.fileExists(atPath: argument) || !(argument.contains("!") || argument.contains(" "))) {
            return try GraphFile.load(path: argument)
        }
        return try OneLineGraph.parse(argument)
    }

    /// The node types every graph can use: the built-in ones, `jack.sink` and `jack.source`
    /// (on `server`, when a graph names none).
    static func registry(server: String? = nil) -> NodeRegistry {
        HostRegistry.builtin(server: server)
    }

    /// `registry(server:)` plus the node types of every plugin on the search
    /// path of a graph in `graphFolder` (nil for a one-line graph: no graph folder) — the
    /// registry a speech controller uses. A plugin that fails to load, or a type name taken
    /// twice, is printed and ends the command with exit 1.
    static func registry(server: String? = nil, graphFolder: String?) throws -> NodeRegistry {
        do {
            return try HostRegistry.full(server: server, graphFolder: graphFolder)
        } catch {
            printError("error: \(error)")
            throw ExitCode(1)
        }
    }

    /// Loads and checks a graph, printing every problem to standard error.
    static func compile(
        _ argument: String, options: GraphCompiler.Options = .init(), server: String? = nil, oneLine: Bool = false,
        adjust: (inout GraphDescription) -> Void = { _ in }
    ) throws -> CompiledGraph {
        do {
            var description = try description(of: argument, oneLine: oneLine)
            adjust(&description)
            let registry = try registry(server: server, graphFolder: description.baseDirectory)
            return try GraphCompiler(registry: registry, options: options).compile(description)
        } catch let diagnostics as GraphDiagnostics {
            printError(diagnostics.description)
            throw ExitCode(1)
        }
    }
}

func printError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}
