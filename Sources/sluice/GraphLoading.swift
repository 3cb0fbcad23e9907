import ArgumentParser
import Foundation
import SluiceConfig
import SluiceGraph
import SluiceHost
import SluicePlugins

/// Reads the GRAPH argument: a graph file, or a one-line graph (`tone ! fader ! wav.sink
/// path=out.wav`) when no such file exists and the text has a `!` or a space.
enum GraphLoading {
    static func description(of argument: String, oneLine: Bool = false) throws(GraphDiagnostics) -> GraphDescription {
        try reading(of: argument, oneLine: oneLine).graph()
    }

    /// The GRAPH argument as read, with every problem the reader found (a one-line graph's
    /// are never skipped keys).
    static func reading(of argument: String, oneLine: Bool = false) -> GraphFileReading {
        if !oneLine && (FileManager.default.fileExists(atPath: argument) || !(argument.contains("!") || argument.contains(" "))) {
            log.debug("reading graph file \(argument)")
            return GraphFile.read(path: argument)
        }
        do throws(GraphDiagnostics) {
            return GraphFileReading(partial: try OneLineGraph.parse(argument), diagnostics: [], onlySkippedKeys: true)
        } catch {
            return GraphFileReading(partial: GraphDescription(name: "one-line"), diagnostics: error.diagnostics, onlySkippedKeys: false)
        }
    }

    /// The node types every graph can use: the built-in ones, `jack.sink` and `jack.source`
    /// (on `server`, when a graph names none).
    static func registry(server: String? = nil) -> NodeRegistry {
        HostRegistry.builtin(server: server)
    }

    /// `registry(server:)` plus the node types of every plugin on the search path: the graph
    /// file's folder only when `trustGraphFolder` (a graph someone sent may come with
    /// libraries; opening one runs its code), then SLUICE_PLUGIN_PATH and the install folder.
    /// Two plugins naming one type end the command with exit 1; a plugin that fails to load
    /// matters only to a graph that needs its types.
    /// Only the plugins that may provide one of `needing` (the graph's node types) are opened,
    /// as far as the user's plugin index knows (PluginIndex).
    static func plugins(server: String? = nil, graphFolder: String?, trustGraphFolder: Bool, needing: Set<String>?) throws -> HostRegistry.Loaded {
        do {
            let loaded = try HostRegistry.load(server: server, graphFolder: trustGraphFolder ? graphFolder : nil, needing: needing)
            for (type, file) in loaded.pluginFiles.sorted(by: { $0.key < $1.key }) { log.debug("plugin node type '\(type)' from \(file)") }
            for failure in loaded.failures { log.debug("a plugin did not load: \(failure)") }
            return loaded
        } catch {
            printError("error: \(error)")
            throw ExitCode(ExitStatus.failure)
        }
    }

    /// Loads and checks a graph, printing every problem to standard error. A file whose only
    /// reading problems are keys the reader skipped (an unknown top-level key) is checked on,
    /// so its other errors are reported with them.
    static func compile(
        _ argument: String, options: GraphCompiler.Options = .init(), server: String? = nil, oneLine: Bool = false,
        trustGraphFolder: Bool = false, adjust: (inout GraphDescription) -> Void = { _ in }
    ) throws -> CompiledGraph {
        do {
            return try checked(argument, options: options, server: server, oneLine: oneLine, trustGraphFolder: trustGraphFolder, adjust: adjust)
        } catch let diagnostics as GraphDiagnostics {
            printError(diagnostics.description)
            throw ExitCode(ExitStatus.failure)
        }
    }

    /// `compile` without printing: the graph, or its diagnostics thrown (a plugin that
    /// fails to load still prints and exits 1).
    static func checked(
        _ argument: String, options: GraphCompiler.Options = .init(), server: String? = nil, oneLine: Bool = false,
        trustGraphFolder: Bool = false, adjust: (inout GraphDescription) -> Void = { _ in }
    ) throws -> CompiledGraph {
        let reading = reading(of: argument, oneLine: oneLine)
        guard reading.diagnostics.isEmpty || reading.onlySkippedKeys else { throw GraphDiagnostics(reading.diagnostics) }
        var description = reading.partial
        adjust(&description)
        let loaded = try plugins(
            server: server, graphFolder: description.baseDirectory, trustGraphFolder: trustGraphFolder,
            needing: Set(description.nodes.map(\.type)))
        let compiled: CompiledGraph
        do {
            compiled = try GraphCompiler(registry: loaded.registry, options: options).compile(description)
        } catch {
            var explained = loaded.explaining(error)
            if !trustGraphFolder, let folder = description.baseDirectory {
                explained = PluginOptions.hintUntrusted(folder: folder, in: explained)
            }
            throw reading.combined(with: explained)
        }
        guard reading.diagnostics.isEmpty else { throw GraphDiagnostics(reading.diagnostics) }
        log.debug("graph '\(description.name)' checked: \(compiled.nodes.count) nodes, \(compiled.edges.count) links\(options.isLive ? ", live" : "")")
        return compiled
    }
}

/// `--trust-graph-folder`, shared by the commands that load a graph file.
struct PluginOptions: ParsableArguments {
    @Flag(name: .long, help: "Also load plugins (libsluice-*.so) from the graph file's folder; only for folders you trust.")
    var trustGraphFolder = false

    /// Adds to each unknown-type error a hint when the graph's folder holds plugin files that
    /// were not opened.
    static func hintUntrusted(folder: String, in diagnostics: GraphDiagnostics) -> GraphDiagnostics {
        let files = PluginCatalog.pluginFiles(in: folder)
        guard !files.isEmpty else { return diagnostics }
        return diagnostics.addingToUnknownTypeFixes(
            "the graph's folder holds \(files.joined(separator: ", ")), not opened: if you trust it, add --trust-graph-folder")
    }
}

func printError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}
