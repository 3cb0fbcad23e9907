import CLilv
import Glibc
import SluiceGraph
import Synchronization

/// lilv's world: every LV2 bundle on `LV2_PATH` (or lilv's default, `~/.lv2:/usr/local/lib/lv2:
/// /usr/lib/lv2`…), read once, the first time a graph, a listing or a test asks for a plugin.
/// A graph without an `lv2` node never touches it, so `sluice check` and `sluice run` of
/// such a graph pay nothing for the bundles installed.
///
/// lilv is not thread-safe: every call into it happens inside `with`, one thread at a time.
public final class LV2World: @unchecked Sendable {
    // SAFETY (@unchecked Sendable): `world` and `nodes` are used only inside `lock`.

    /// The process's world, loaded on first use. [control-thread]
    public static let shared = LV2World()

    private let lock = Mutex(())
    private let world: OpaquePointer
    /// The plugin libraries opened for good (inside the lock).
    private nonisolated(unsafe) var pinned: Set<String> = []
    let nodes: Nodes

    private init() {
        world = lilv_world_new()
        lilv_world_load_all(world)
        nodes = Nodes(world: world)
    }

    /// Runs `body` with the world, alone. [control-thread]
    func with<Result, Failure>(_ body: (OpaquePointer) throws(Failure) -> Result) throws(Failure) -> Result {
        try lock.withLock { (_) throws(Failure) -> Result in try body(world) }
    }

    /// Keeps a plugin's library loaded for the rest of the process: lilv closes a library when
    /// its last instance is freed, and many plugins do not survive being unloaded and loaded
    /// again (threads, static state), so it is opened once more, never to be unloaded, as
    /// LADSPA libraries are. Inside `with`.
    func pin(_ library: String) {
        guard !library.isEmpty, pinned.insert(library).inserted else { return }
        _ = dlopen(library, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE)
    }

    /// Every plugin installed, described; one sentence for each that could not be. [control-thread]
    public func installedPlugins() -> (plugins: [LV2Plugin], failures: [String]) {
        with { world in
            var plugins: [LV2Plugin] = [], failures: [String] = []
            let all = lilv_world_get_all_plugins(world)
            var iterator = lilv_plugins_begin(all)
            while !lilv_plugins_is_end(all, iterator) {
                if let plugin = lilv_plugins_get(all, iterator) {
                    do throws(LV2Error) {
                        plugins.append(try LV2Plugin(plugin, world: world, nodes: nodes))
                    } catch {
                        failures.append(error.description)
                    }
                }
                iterator = lilv_plugins_next(all, iterator)
            }
            return (plugins.sorted { $0.uri < $1.uri }, failures)
        }
    }

    /// The plugin `uri` names, described. [control-thread]
    public func plugin(uri: String) throws(LV2Error) -> LV2Plugin {
        try with { (world) throws(LV2Error) -> LV2Plugin in
            guard let plugin = lilvPlugin(uri: uri, world: world) else { throw .unknownPlugin(uri: uri) }
            return try LV2Plugin(plugin, world: world, nodes: nodes)
        }
    }

    /// Every installed plugin's URI, sorted (for suggestions). [control-thread]
    public func pluginURIs() -> [String] {
        with { world in
            var uris: [String] = []
            let all = lilv_world_get_all_plugins(world)
            var iterator = lilv_plugins_begin(all)
            while !lilv_plugins_is_end(all, iterator) {
                if let plugin = lilv_plugins_get(all, iterator) { uris.append(string(lilv_plugin_get_uri(plugin)) ?? "") }
                iterator = lilv_plugins_next(all, iterator)
            }
            return uris.sorted()
        }
    }

    /// lilv's plugin for `uri`; inside `with`.
    func lilvPlugin(uri: String, world: OpaquePointer) -> OpaquePointer? {
        guard let node = lilv_new_uri(world, uri) else { return nil }
        defer { lilv_node_free(node) }
        return lilv_plugins_get_by_uri(lilv_world_get_all_plugins(world), node)
    }

    /// The URI nodes the host asks lilv about, made once.
    struct Nodes: @unchecked Sendable {
        // SAFETY (@unchecked Sendable): immutable pointers into the world, read inside its lock.
        let audioPort, controlPort, atomPort, cvPort, inputPort, outputPort: OpaquePointer
        let toggled, integer, enumeration, logarithmic, sampleRate, connectionOptional, notOnGUI: OpaquePointer
        let reportsLatency, minimumSize, preset, label, workerInterface, stateInterface: OpaquePointer

        init(world: OpaquePointer) {
            func uri(_ text: String) -> OpaquePointer { lilv_new_uri(world, text) }
            audioPort = uri(LV2URI.core + "AudioPort")
            controlPort = uri(LV2URI.core + "ControlPort")
            atomPort = uri(LV2URI.atom + "AtomPort")
            cvPort = uri(LV2URI.core + "CVPort")
            inputPort = uri(LV2URI.core + "InputPort")
            outputPort = uri(LV2URI.core + "OutputPort")
            toggled = uri(LV2URI.core + "toggled")
            integer = uri(LV2URI.core + "integer")
            enumeration = uri(LV2URI.core + "enumeration")
            logarithmic = uri(LV2URI.portProps + "logarithmic")
            sampleRate = uri(LV2URI.core + "sampleRate")
            connectionOptional = uri(LV2URI.core + "connectionOptional")
            notOnGUI = uri(LV2URI.portProps + "notOnGUI")
            reportsLatency = uri(LV2URI.core + "reportsLatency")
            minimumSize = uri(LV2URI.resizePort + "minimumSize")
            preset = uri(LV2URI.presets + "Preset")
            label = uri("http://www.w3.org/2000/01/rdf-schema#label")
            workerInterface = uri(LV2URI.worker + "interface")
            stateInterface = uri(LV2URI.state + "interface")
        }
    }
}

/// A lilv node's text (a URI, a literal), or nil.
func string(_ node: OpaquePointer?) -> String? {
    guard let node, let text = lilv_node_as_string(node) else { return nil }
    return String(cString: text)
}

/// Why an LV2 plugin cannot be used, in a sentence.
public enum LV2Error: Error, Sendable, Hashable, CustomStringConvertible {
    case unknownPlugin(uri: String)
    case invalid(uri: String, reason: String)

    public var description: String {
        switch self {
        case .unknownPlugin(let uri): "no LV2 plugin <\(uri)> is installed"
        case .invalid(let uri, let reason): "LV2 plugin <\(uri)> cannot be hosted: \(reason)"
        }
    }
}

/// The LV2 namespaces the host names things in (the headers' macros are not visible to Swift).
enum LV2URI {
    static let core = "http://lv2plug.in/ns/lv2core#"
    static let atom = "http://lv2plug.in/ns/ext/atom#"
    static let portProps = "http://lv2plug.in/ns/ext/port-props#"
    static let resizePort = "http://lv2plug.in/ns/ext/resize-port#"
    static let presets = "http://lv2plug.in/ns/ext/presets#"
    static let worker = "http://lv2plug.in/ns/ext/worker#"
    static let state = "http://lv2plug.in/ns/ext/state#"
    static let urid = "http://lv2plug.in/ns/ext/urid#"
    static let options = "http://lv2plug.in/ns/ext/options#"
    static let bufSize = "http://lv2plug.in/ns/ext/buf-size#"
    static let log = "http://lv2plug.in/ns/ext/log#"
    static let parameters = "http://lv2plug.in/ns/ext/parameters#"
}

/// What an `lv2` node restores after instantiation: a preset (`preset:`, by URI or label) or
/// a state file (`state:`, Turtle as lilv, jalv and Ardour save it).
public enum LV2StateSource: Sendable, Hashable, CustomStringConvertible {
    case preset(String)
    case file(String)

    public var description: String {
        switch self {
        case .preset(let name): "preset '\(name)'"
        case .file(let path): "state from \(path)"
        }
    }
}

/// A preset of a plugin, for listings.
public struct LV2Preset: Sendable, Hashable {
    public var uri: String
    public var label: String
}

extension LV2World {
    /// The presets installed for `plugin`, by label. Reads each preset's file. [control-thread]
    public func presets(of plugin: LV2Plugin) -> [LV2Preset] {
        with { world in presets(of: plugin, world: world) }
    }

    private func presets(of plugin: LV2Plugin, world: OpaquePointer) -> [LV2Preset] {
        guard let related = lilv_plugin_get_related(plugin.lilv, nodes.preset) else { return [] }
        defer { lilv_nodes_free(related) }
        var presets: [LV2Preset] = []
        var iterator = lilv_nodes_begin(related)
        while !lilv_nodes_is_end(related, iterator) {
            if let preset = lilv_nodes_get(related, iterator), let uri = string(preset) {
                lilv_world_load_resource(world, preset)
                let labelNode = lilv_world_get(world, preset, nodes.label, nil)
                presets.append(LV2Preset(uri: uri, label: string(labelNode) ?? uri))
                if let labelNode { lilv_node_free(labelNode) }
            }
            iterator = lilv_nodes_next(related, iterator)
        }
        return presets.sorted { $0.label < $1.label }
    }

    /// Checks that `source` can be restored into `plugin`: the preset exists, the state file
    /// reads and is the plugin's. [control-thread]
    public func check(_ source: LV2StateSource, of plugin: LV2Plugin) throws(NodeCreationError) {
        let state = try loadState(source, of: plugin)
        free(state)
    }

    /// lilv's state for `source` (free it with `free`). [control-thread]
    func loadState(_ source: LV2StateSource, of plugin: LV2Plugin) throws(NodeCreationError) -> OpaquePointer {
        try with { (world) throws(NodeCreationError) -> OpaquePointer in
            switch source {
            case .preset(let name):
                let presets = presets(of: plugin, world: world)
                guard let preset = presets.first(where: { $0.uri == name || $0.label == name }) else {
                    let labels = presets.map(\.label)
                    throw NodeCreationError(
                        "LV2 plugin <\(plugin.uri)> has no preset '\(name)'",
                        fix: labels.isEmpty ? "it has no presets installed; leave `preset:` out"
                            : "its presets: " + labels.map { "'\($0)'" }.joined(separator: ", "),
                        parameter: "preset")
                }
                let node = lilv_new_uri(world, preset.uri)
                defer { lilv_node_free(node) }
                guard let state = lilv_state_new_from_world(world, URIDTable.mapFeature, node) else {
                    throw NodeCreationError("LV2 preset <\(preset.uri)> could not be read", fix: "reinstall the plugin", parameter: "preset")
                }
                return state
            case .file(let given):
                var isDirectory = false
                var status = stat()
                if stat(given, &status) == 0 { isDirectory = status.st_mode & S_IFMT == S_IFDIR }
                let path = isDirectory ? given + "/state.ttl" : given
                guard access(path, R_OK) == 0 else {
                    throw NodeCreationError(
                        "cannot read LV2 state file '\(path)'",
                        fix: "give a state file (Turtle) or a folder holding state.ttl, as jalv and lilv save them", parameter: "state")
                }
                guard let state = lilv_state_new_from_file(world, URIDTable.mapFeature, nil, path) else {
                    throw NodeCreationError(
                        "'\(path)' is not an LV2 state file", fix: "give the state.ttl jalv or lilv saved", parameter: "state")
                }
                let owner = string(lilv_state_get_plugin_uri(state)) ?? ""
                guard owner == plugin.uri else {
                    lilv_state_free(state)
                    throw NodeCreationError(
                        "'\(path)' is the state of <\(owner)>, not of <\(plugin.uri)>",
                        fix: "give this plugin's state, or change `uri:`", parameter: "state")
                }
                return state
            }
        }
    }

    func free(_ state: OpaquePointer) {
        with { _ in lilv_state_free(state) }
    }

    /// The plugin's default state (state:loadDefaultState), if its data has one. [control-thread]
    func restoreDefaultState(into instance: LV2Instance) {
        let state = with { world in lilv_state_new_from_world(world, URIDTable.mapFeature, lilv_plugin_get_uri(instance.plugin.lilv)) }
        guard let state else { return }
        restore(state, into: instance) { _, _ in }
        free(state)
    }

    /// Restores `state` into `instance`: its properties through the plugin's state interface
    /// (work it schedules is done at once), its port values to `setControl` (port symbol, value).
    func restore(_ state: OpaquePointer, into instance: LV2Instance, setControl: (String, Float) -> Void) {
        withoutActuallyEscaping(setControl) { setControl in
            var receiver = PortValueReceiver(set: setControl)
            // Work the plugin schedules while restoring is done at once.
            Self.withStateFeatures(of: instance, scheduling: true) { features in
                withUnsafeMutablePointer(to: &receiver) { receiver in
                    with { _ in
                        lilv_state_restore(state, instance.lilvInstance, { symbol, context, value, size, type in
                            // SAFETY: `context` is the receiver, alive for the restore.
                            guard let symbol, let context, let value else { return }
                            context.assumingMemoryBound(to: PortValueReceiver.self).pointee
                                .receive(String(cString: symbol), value, size: Int(size), type: type)
                        }, receiver, 0, features)
                    }
                }
            }
        }
    }

    /// Calls `body` with the features lilv's state functions hand a plugin, as a NULL-ended
    /// array: URID map and unmap, the log, and with `scheduling` the worker's schedule (done
    /// at once: restore runs the work itself; save has no worker to offer).
    static func withStateFeatures<R>(
        of instance: LV2Instance, scheduling: Bool, _ body: (UnsafePointer<UnsafePointer<LV2_Feature>?>) -> R
    ) -> R {
        var features: [LV2_Feature] = [
            LV2_Feature(URI: LV2FeatureURIs.map, data: UnsafeMutableRawPointer(URIDTable.mapFeature)),
            LV2_Feature(URI: LV2FeatureURIs.unmap, data: UnsafeMutableRawPointer(URIDTable.unmapFeature)),
            LV2_Feature(URI: LV2FeatureURIs.log, data: UnsafeMutableRawPointer(instance.log.feature)),
        ]
        if scheduling {
            features.append(LV2_Feature(URI: LV2FeatureURIs.schedule, data: UnsafeMutableRawPointer(instance.worker.immediateSchedule)))
        }
        // SAFETY: the array of pointers into `features` lives inside `features`' buffer
        // closure, and `body` uses it only for the call it makes.
        return features.withUnsafeBufferPointer { features in
            var array: [UnsafePointer<LV2_Feature>?] = (0..<features.count).map { features.baseAddress! + $0 }
            array.append(nil)
            return array.withUnsafeBufferPointer { body($0.baseAddress!) }
        }
    }
}

/// The features' URIs as C strings, for the few arrays made in Swift.
enum LV2FeatureURIs {
    nonisolated(unsafe) static let map = UnsafePointer(strdup(LV2URI.urid + "map")!)
    nonisolated(unsafe) static let unmap = UnsafePointer(strdup(LV2URI.urid + "unmap")!)
    nonisolated(unsafe) static let schedule = UnsafePointer(strdup(LV2URI.worker + "schedule")!)
    nonisolated(unsafe) static let log = UnsafePointer(strdup(LV2URI.log + "log")!)
}

/// Turns the port values lilv restores (floats, doubles, ints, booleans) into numbers.
private struct PortValueReceiver {
    let set: (String, Float) -> Void
    let floatType = URIDTable.map(LV2URI.atom + "Float")
    let doubleType = URIDTable.map(LV2URI.atom + "Double")
    let intType = URIDTable.map(LV2URI.atom + "Int")
    let longType = URIDTable.map(LV2URI.atom + "Long")
    let boolType = URIDTable.map(LV2URI.atom + "Bool")

    func receive(_ symbol: String, _ value: UnsafeRawPointer, size: Int, type: UInt32) {
        let number: Double? =
            switch type {
            case floatType where size >= 4: Double(value.loadUnaligned(as: Float.self))
            case doubleType where size >= 8: value.loadUnaligned(as: Double.self)
            case intType where size >= 4, boolType where size >= 4: Double(value.loadUnaligned(as: Int32.self))
            case longType where size >= 8: Double(value.loadUnaligned(as: Int64.self))
            default: nil
            }
        if let number, number.isFinite { set(symbol, Float(number)) }
    }
}
