import ArgumentParser
import Foundation
import SluiceGraph
import SluiceHost
import SluiceLADSPA
import SluiceLV2
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

            LADSPA plugins are hosted by the `ladspa` node type: `--ladspa` lists every one \
            installed (LADSPA_PATH, then the system's folders), and `sluice nodes \
            ladspa:<library>:<label>` shows one with its parameters, as a graph file gives them.

            LV2 plugins are hosted by the `lv2` node type: `--lv2` lists every one installed \
            (LV2_PATH, or lilv's default folders), and `sluice nodes lv2:<uri>` shows one with its \
            parameters and presets. Only these read the LV2 bundles; nothing else here does.
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

    @Flag(name: .long, help: "List the installed LADSPA plugins (library:label and what each is).")
    var ladspa = false

    @Flag(name: .long, help: "List the installed LV2 plugins (URI and what each is).")
    var lv2 = false

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
        if ladspa {
            Self.printLADSPAPlugins(json: json)
            return
        }
        if lv2 {
            Self.printLV2Plugins(json: json)
            return
        }
        let (registry, pluginFiles) = try Self.registry(builtinOnly: builtin)
        var selected = registry.all
        var hosted: [NodeType] = []
        /// Per hosted type, in order: the presets an `lv2:<uri>` has (none for LADSPA).
        var presets: [[LV2Preset]] = []
        for name in types where name.hasPrefix("ladspa:") || name.hasPrefix("lv2:") {
            do throws(NodeCreationError) {
                if name.hasPrefix("lv2:") {
                    let uri = String(name.dropFirst("lv2:".count))
                    hosted.append(try LV2NodeType.type(named: uri))
                    presets.append((try? LV2World.shared.plugin(uri: uri)).map(LV2World.shared.presets(of:)) ?? [])
                } else {
                    hosted.append(try LADSPACatalog.type(named: name))
                    presets.append([])
                }
            } catch {
                printError("error: \(error.message)" + (error.fix.map { "\n  fix: \($0)" } ?? ""))
                throw ExitCode(1)
            }
        }
        let types = types.filter { !$0.hasPrefix("ladspa:") && !$0.hasPrefix("lv2:") }
        if !types.isEmpty || !hosted.isEmpty {
            for name in types where registry.type(named: name) == nil {
                let close = registry.suggestions(for: name)
                printError("error: unknown node type '\(name)'" + (close.isEmpty ? "" : "; did you mean '\(close[0])'?"))
                throw ExitCode(1)
            }
            selected = selected.filter { types.contains($0.descriptor.typeName) } + hosted
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
            // The hosted types come last in `selected`.
            let firstHosted = selected.count - hosted.count
            print(selected.enumerated().map { index, type in
                var text = Self.text(of: type.descriptor, plugin: pluginFiles[type.descriptor.typeName])
                let typePresets = index >= firstHosted ? presets[index - firstHosted] : []
                if !typePresets.isEmpty {
                    text += "  presets (preset: <label>)\n" + typePresets.map { "    \($0.label)  <\($0.uri)>\n" }.joined()
                }
                return text
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

    /// `--ladspa`: one line a plugin (`amp.so:amp_mono  Mono Amplifier (…)`), or JSON; the
    /// libraries that did not open as warnings.
    static func printLADSPAPlugins(json: Bool) {
        let catalog = LADSPACatalog.installed()
        for failure in catalog.failures { log.warning("a LADSPA library did not open: \(failure)") }
        if json {
            print(JSONValue.array(catalog.plugins.map { plugin in
                .object([
                    JSONValue.Member("reference", .string(LADSPACatalog.reference(of: plugin))),
                    JSONValue.Member("library", .string(plugin.libraryPath)),
                    JSONValue.Member("label", .string(plugin.label)),
                    JSONValue.Member("name", .string(plugin.name)),
                    JSONValue.Member("maker", .string(plugin.maker)),
                    JSONValue.Member("id", .number(Double(plugin.uniqueID))),
                    JSONValue.Member("audio-inputs", .number(Double(plugin.audioInputs.count))),
                    JSONValue.Member("audio-outputs", .number(Double(plugin.audioOutputs.count))),
                    JSONValue.Member("parameters", .array(plugin.controls.map { .string($0.symbol) })),
                ])
            }).text)
            return
        }
        let references = catalog.plugins.map(LADSPACatalog.reference(of:))
        let width = references.map(\.count).max() ?? 0
        for (reference, plugin) in zip(references, catalog.plugins) {
            print(reference.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + plugin.summary)
        }
    }

    /// `--lv2`: one line a plugin (`<uri>  Name (LV2, 1 in, 1 out, by …)`), or JSON; the
    /// plugins that cannot be described as warnings. The only listing that reads every bundle.
    static func printLV2Plugins(json: Bool) {
        let (plugins, failures) = LV2World.shared.installedPlugins()
        for failure in failures { log.warning("an LV2 plugin cannot be hosted: \(failure)") }
        if json {
            print(JSONValue.array(plugins.map { plugin in
                .object([
                    JSONValue.Member("uri", .string(plugin.uri)),
                    JSONValue.Member("name", .string(plugin.name)),
                    JSONValue.Member("author", .string(plugin.author)),
                    JSONValue.Member("library", .string(plugin.libraryPath)),
                    JSONValue.Member("audio-inputs", .number(Double(plugin.audioInputs.count))),
                    JSONValue.Member("audio-outputs", .number(Double(plugin.audioOutputs.count))),
                    JSONValue.Member("parameters", .array(plugin.controls.map { .string($0.symbol) })),
                    JSONValue.Member("unsupported-features", .array(plugin.unsupportedFeatures.map { .string($0) })),
                ])
            }).text)
            return
        }
        let width = plugins.map(\.uri.count).max() ?? 0
        for plugin in plugins {
            var line = plugin.uri.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + plugin.summary
            if !plugin.unsupportedFeatures.isEmpty { line += " [not hostable: requires \(plugin.unsupportedFeatures.joined(separator: ", "))]" }
            print(line)
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
