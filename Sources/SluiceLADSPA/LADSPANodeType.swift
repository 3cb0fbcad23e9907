import Glibc
import SluiceGraph

/// The `ladspa` node type: `library:` and `label:` pick a plugin, whose control inputs become
/// the node's other parameters (`NodeType.resolve`). Nothing is opened until a graph names
/// the type, so graphs without one pay nothing for it.
public enum LADSPANodeType {
    /// The parameters that pick the plugin, first in every resolved descriptor.
    public static let pickingParameters = ["library", "label"]

    /// The type for a registry. [control-thread]
    public static func type(searchPath: LADSPASearchPath = .standard()) -> NodeType {
        NodeType(hosting: familyDescriptor) { parameters in
            let library = try open(parameters.string("library") ?? "", in: searchPath, base: parameters.baseDirectory)
            let label = parameters.string("label") ?? ""
            guard let plugin = library.plugin(label: label) else {
                let labels = library.plugins.map(\.label)
                let close = closestNames(to: label, among: labels)
                throw NodeCreationError(
                    "'\(library.path)' has no LADSPA plugin labelled '\(label)'",
                    fix: close.isEmpty ? "its plugins: " + labels.joined(separator: ", ")
                        : "did you mean " + close.map { "'\($0)'" }.joined(separator: " or ") + "?",
                    parameter: "label")
            }
            return try type(of: plugin)
        }
    }

    /// The type of one plugin: the picking parameters and a live parameter per control input.
    public static func type(of plugin: LADSPAPlugin) throws(NodeCreationError) -> NodeType {
        guard !plugin.audioInputs.isEmpty, !plugin.audioOutputs.isEmpty else {
            throw NodeCreationError(
                "LADSPA plugin '\(plugin.label)' has \(plugin.audioInputs.count) audio inputs and \(plugin.audioOutputs.count) outputs; a `ladspa` node is an effect, with both",
                fix: "pick an effect: `sluice nodes --ladspa` lists them", parameter: "label")
        }
        var descriptor = familyDescriptor
        descriptor.summary = plugin.summary
        descriptor.parameters += plugin.controls.map(\.parameter)
        descriptor.hostsPlugins = false
        return NodeType(descriptor) { parameters in
            let given = plugin.controls.map { control -> Double? in
                // Absent only for a rate-relative control the file leaves out: its default
                // depends on the node's rate.
                guard let value = parameters[control.symbol] else { return nil }
                return switch value {
                case .number(let number): number
                case .integer(let integer): Double(integer)
                default: nil
                }
            }
            return LADSPANode(plugin: plugin, given: given)
        }
    }

    static let familyDescriptor: NodeDescriptor = {
        var descriptor = NodeDescriptor(
            typeName: "ladspa", kind: .processor,
            summary: "A LADSPA plugin (an equaliser, a compressor, a delay…); its controls are live parameters named after its ports.",
            inputs: [PortDescriptor("in", .frames, summary: "Float32 frames: a channel per audio input (any number for a mono plugin, run once per channel)")],
            outputs: [PortDescriptor("out", .frames, summary: "A channel per audio output (per input channel for a mono plugin)")],
            parameters: [
                ParameterDescriptor(
                    "library", .string, default: nil, required: true,
                    summary: "The library: a file name found on LADSPA_PATH and the system's LADSPA folders (`amp.so`, `amp`), or a path."),
                ParameterDescriptor(
                    "label", .string, default: nil, required: true,
                    summary: "The plugin's label within the library (`amp_mono`); `sluice nodes --ladspa` lists them."),
            ])
        descriptor.hostsPlugins = true
        return descriptor
    }()

    /// The library a `library:` value names: a path (relative to the graph's folder) when it
    /// holds a slash, else a file on the search path (`.so` added when missing).
    static func open(_ name: String, in searchPath: LADSPASearchPath, base: String?) throws(NodeCreationError) -> LADSPALibrary {
        let path: String
        if name.contains("/") {
            path = name.hasPrefix("/") || base == nil ? name : base! + "/" + name
        } else if let found = searchPath.find(name) {
            path = found
        } else {
            let installed = searchPath.libraryNames()
            let close = closestNames(to: name, among: installed)
            throw NodeCreationError(
                "no LADSPA library '\(name)' in " + searchPath.folders.joined(separator: ":"),
                fix: close.isEmpty
                    ? "install one (Debian: `apt install swh-plugins`), set LADSPA_PATH, or give a path; `sluice nodes --ladspa` lists what is installed"
                    : "did you mean " + close.map { "'\($0)'" }.joined(separator: " or ") + "?",
                parameter: "library")
        }
        do throws(LADSPAError) {
            return try LADSPALibrary.open(path: path)
        } catch {
            throw NodeCreationError(error.description, fix: nil, parameter: "library")
        }
    }
}

/// Where `library:` names are looked up: each folder of `LADSPA_PATH`, then the system's
/// LADSPA folders (Debian installs to /usr/lib/ladspa).
public struct LADSPASearchPath: Sendable, Hashable {
    public var folders: [String]

    public init(folders: [String]) { self.folders = folders }

    public static let systemFolders = ["/usr/local/lib/ladspa", "/usr/lib/ladspa", "/usr/lib/x86_64-linux-gnu/ladspa"]

    /// `LADSPA_PATH`'s folders (by default read from the environment), then the system's.
    public static func standard(environment: String? = getenv("LADSPA_PATH").map { String(cString: $0) }) -> LADSPASearchPath {
        var folders = (environment ?? "").split(separator: ":").map(String.init)
        for folder in systemFolders where !folders.contains(folder) { folders.append(folder) }
        return LADSPASearchPath(folders: folders)
    }

    /// The first file named `name` (or `name.so`) in the folders.
    public func find(_ name: String) -> String? {
        let candidates = name.hasSuffix(".so") ? [name] : [name + ".so", name]
        for folder in folders {
            for candidate in candidates where access(folder + "/" + candidate, R_OK) == 0 {
                return folder + "/" + candidate
            }
        }
        return nil
    }

    /// Every `.so` file in the folders, by name (the first of each name), sorted.
    public func libraryNames() -> [String] {
        libraries().map { String($0.split(separator: "/").last ?? "") }
    }

    /// The path of every `.so` file in the folders, the first of each name, sorted by name.
    public func libraries() -> [String] {
        var seen: [String: String] = [:]
        for folder in folders {
            guard let directory = opendir(folder) else { continue }
            defer { closedir(directory) }
            while let entry = readdir(directory) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
                if name.hasSuffix(".so") && seen[name] == nil { seen[name] = folder + "/" + name }
            }
        }
        return seen.keys.sorted().map { seen[$0]! }
    }
}
