import Glibc
import SluiceGraph
import SluicePlugins

/// The `lv2` node type: `uri:` picks an installed LV2 plugin, whose control inputs become the
/// node's other parameters (`NodeType.resolve`); `preset:` or `state:` restores it. The LV2
/// world is read only when a graph names the type, so graphs without one pay nothing for it.
public enum LV2NodeType {
    /// The parameters that pick and restore the plugin, first in every resolved descriptor.
    public static let pickingParameters = ["uri", "preset", "state"]

    /// The type for a registry. [control-thread]
    public static func type() -> NodeType {
        NodeType(hosting: familyDescriptor) { parameters in
            let uri = parameters.string("uri") ?? ""
            let plugin: LV2Plugin
            do throws(LV2Error) {
                plugin = try LV2World.shared.plugin(uri: uri)
            } catch {
                let close = closestNames(to: uri, among: LV2World.shared.pluginURIs())
                throw NodeCreationError(
                    error.description,
                    fix: close.isEmpty
                        ? "install it (Debian: `apt install swh-lv2`, `x42-plugins`…) or set LV2_PATH; `sluice nodes --lv2` lists what is installed"
                        : "did you mean " + close.map { "<\($0)>" }.joined(separator: " or ") + "?",
                    parameter: "uri")
            }
            return try type(of: plugin)
        }
    }

    /// The type of one plugin: the picking parameters and a live parameter per control input.
    /// Refuses a plugin Sluice cannot host, naming why.
    public static func type(of plugin: LV2Plugin) throws(NodeCreationError) -> NodeType {
        let unsupported = plugin.unsupportedFeatures
        guard unsupported.isEmpty else {
            throw NodeCreationError(
                "LV2 plugin <\(plugin.uri)> requires " + unsupported.map { "<\($0)>" }.joined(separator: ", ")
                    + ", which Sluice does not provide",
                fix: "pick another plugin; docs/effects.md lists the features Sluice provides", parameter: "uri")
        }
        guard !plugin.audioInputs.isEmpty, !plugin.audioOutputs.isEmpty else {
            throw NodeCreationError(
                "LV2 plugin <\(plugin.uri)> has \(plugin.audioInputs.count) audio inputs and \(plugin.audioOutputs.count) outputs; an `lv2` node is an effect, with both",
                fix: "pick an effect: `sluice nodes --lv2` lists them", parameter: "uri")
        }
        do throws(PluginError) {
            try PluginLibrary.checkPermissions(path: plugin.libraryPath, resolved: resolvedPath(plugin.libraryPath))
        } catch {
            throw NodeCreationError(error.description, fix: nil, parameter: "uri")
        }
        var descriptor = familyDescriptor
        descriptor.summary = plugin.summary
        descriptor.parameters += plugin.controls.map(\.parameter)
        descriptor.hostsPlugins = false
        return NodeType(descriptor) { parameters in
            let given = plugin.controls.map { control -> Double? in
                guard parameters.isGiven(control.symbol) else { return nil }
                return switch parameters[control.symbol] {
                case .number(let number): number
                case .integer(let integer): Double(integer)
                default: nil
                }
            }
            let preset = parameters.string("preset")
            let state = parameters.path("state")
            if preset != nil && state != nil {
                throw NodeCreationError(
                    "an `lv2` node restores a preset or a state, not both", fix: "leave out `preset:` or `state:`", parameter: "state")
            }
            let restoring = preset.map(LV2StateSource.preset) ?? state.map(LV2StateSource.file)
            if let restoring { try LV2World.shared.check(restoring, of: plugin) }
            return LV2Node(plugin: plugin, given: given, restoring: restoring)
        }
    }

    static let familyDescriptor: NodeDescriptor = {
        var descriptor = NodeDescriptor(
            typeName: "lv2", kind: .processor,
            summary: "An LV2 plugin (an equaliser, a compressor, a convolver…); its controls are live parameters named by their symbols.",
            inputs: [PortDescriptor("in", .frames, summary: "Float32 frames: a channel per audio input (any number for a mono plugin, run once per channel)")],
            outputs: [PortDescriptor("out", .frames, summary: "A channel per audio output (per input channel for a mono plugin)")],
            parameters: [
                ParameterDescriptor(
                    "uri", .string, default: nil, required: true,
                    summary: "The plugin's URI (`http://lv2plug.in/plugins/eg-amp`); `sluice nodes --lv2` lists them."),
                ParameterDescriptor(
                    "preset", .string, default: nil,
                    summary: "A preset to restore, by label or URI (`sluice nodes lv2:<uri>` lists them); the node's own parameters override its values."),
                ParameterDescriptor(
                    "state", .path, default: nil,
                    summary: "A state file to restore (Turtle, or a folder holding state.ttl, as jalv and lilv save them); the node's own parameters override its values."),
            ])
        descriptor.hostsPlugins = true
        return descriptor
    }()

    private static func resolvedPath(_ path: String) -> String {
        realpath(path, nil).map { pointer in
            defer { free(pointer) }
            return String(cString: pointer)
        } ?? path
    }
}

extension LV2NodeType {
    /// The node type of the plugin `uri` names (`sluice nodes lv2:<uri>`). [control-thread]
    public static func type(named uri: String) throws(NodeCreationError) -> NodeType {
        let plugin: LV2Plugin
        do throws(LV2Error) {
            plugin = try LV2World.shared.plugin(uri: uri)
        } catch {
            throw NodeCreationError(error.description, fix: "`sluice nodes --lv2` lists the installed plugins")
        }
        return try type(of: plugin)
    }
}
