import ArgumentParser
import Foundation
import SluiceGraph
import SluiceHost
import SluiceSpeechd

struct NodesCommand: ParsableCommand, LoggingCommand {
    static let configuration = CommandConfiguration(
        commandName: "nodes", _superCommandName: SluiceCommand.name,
        abstract: "List every node type with its ports and parameters: the built-in ones and the plugins'.",
        discussion: """
            Plugin node types come from the plugins on the search path (SLUICE_PLUGIN_PATH, then \
            the install's plugin folder; `sluice plugins` shows it), each marked with the file it \
            comes from, as gst-inspect marks elements with their plugin. A plugin that does not \
            load is a warning here.
            """
    )


    @Argument(help: "Show only these node types.")
    var types: [String] = []

    @Flag(name: .long, help: "Print the Markdown reference of docs/graph-files.md (with --builtin, the page's).")
    var markdown = false

    @Flag(name: .long, help: "Print JSON: an array of node types (kind, ports, parameters with type, range, default, unit, live, summary; plugin: the file).")
    var json = false

    @Flag(name: .long, help: "Only the built-in node types, no plugins.")
    var builtin = false

    /// For the shell completions of `speak --provider` and `--voice`: one name a line.
    @Option(name: .long, help: ArgumentHelp("Print the names a completion offers: provider or voice.", visibility: .hidden))
    var complete: String?

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        if markdown && json { throw ValidationError("give --markdown or --json, not both") }
    }

    func run() throws {
        if let complete {
            try Self.printCompletions(complete)
            return
        }
        let (registry, pluginFiles) = try Self.registry(builtinOnly: builtin)
        var selected = registry.all
        if !types.isEmpty {
            for name in types where registry.type(named: name) == nil {
                let close = registry.suggestions(for: name)
                printError("error: unknown node type '\(name)'" + (close.isEmpty ? "" : "; did you mean '\(close[0])'?"))
                throw ExitCode(1)
            }
            selected = selected.filter { types.contains($0.descriptor.typeName) }
        }
        if markdown {
            print(NodeReference.markdown(of: selected.map(\.descriptor)), terminator: "")
        } else if json {
            print(JSONValue.array(selected.map { type in
                var entry = NodeReference.json(of: type.descriptor)
                if let file = pluginFiles[type.descriptor.typeName], case .object(var members) = entry {
                    members.insert(JSONValue.Member("plugin", .string(file)), at: 2)
                    entry = .object(members)
                }
                return entry
            }).text)
        } else {
            print(selected.map { type in
                Self.text(of: type.descriptor, plugin: pluginFiles[type.descriptor.typeName])
            }.joined(separator: "\n"), terminator: "")
        }
    }

    /// `--complete provider`: the node types that speak text (sources of PCM bytes, built in or
    /// from plugins); `--complete voice`: the voices espeak-ng knows, languages and files.
    static func printCompletions(_ kind: String) throws {
        switch kind {
        case "provider":
            let (registry, _) = try registry(builtinOnly: false)
            let names = registry.all.map(\.descriptor).filter { descriptor in
                descriptor.kind == .source && descriptor.outputs.contains { $0.medium == .bytes } && descriptor.typeName != "bytes.source"
            }.map(\.typeName)
            print(names.sorted().joined(separator: "\n"))
        case "voice":
            let names = Set(EspeakVoices.list().flatMap { [$0.language, $0.file] })
            print(names.sorted().joined(separator: "\n"))
        default:
            throw ValidationError("--complete takes provider or voice, not '\(kind)'")
        }
    }

    /// `NodeReference.text`, with a plugin type's file on the line after its name.
    static func text(of descriptor: NodeDescriptor, plugin: String?) -> String {
        let text = NodeReference.text(of: descriptor)
        guard let plugin, let newline = text.firstIndex(of: "\n") else { return text }
        return String(text[...newline]) + "  plugin  \(plugin)\n" + text[text.index(after: newline)...]
    }

    /// The built-in types, and unless `builtinOnly` every plugin's on the search path (without
    /// a graph folder), with the file each plugin type comes from. A plugin that fails to load
    /// is a warning; two naming one type end the command (exit 1).
    static func registry(builtinOnly: Bool) throws -> (NodeRegistry, [String: String]) {
        guard !builtinOnly else { return (GraphLoading.registry(), [:]) }
        let loaded = try GraphLoading.plugins(graphFolder: nil, trustGraphFolder: false, needing: nil)
        for failure in loaded.failures { log.warning("a plugin did not load: \(failure)") }
        return (loaded.registry, loaded.pluginFiles)
    }
}
