import CLilv
import Glibc
import SluiceAudio
import SluiceGraph
import SluicePlugins

/// One installed LV2 plugin, read from its bundle's data: its ports, its control inputs as
/// Sluice parameters, the features it requires and what it reports.
public final class LV2Plugin: @unchecked Sendable {
    // SAFETY (@unchecked Sendable): read-only after `init`; `lilv` belongs to the world, which
    // lives as long as the process, and is used only inside `LV2World.with`.

    public let uri: String
    public let name: String
    public let author: String
    /// The plugin's shared library.
    public let libraryPath: String
    /// Every port, in the plugin's order.
    public let ports: [LV2Port]
    /// The control inputs: the node's live parameters, by symbol.
    public let controls: [LV2Control]
    /// The port whose output value is the latency the plugin adds (`lv2:reportsLatency`), if any.
    public let latencyPort: Int?
    /// The features the plugin requires, by URI.
    public let requiredFeatures: [String]
    /// Whether the plugin has the worker and state interfaces.
    public let hasWorker: Bool
    public let hasState: Bool
    let lilv: OpaquePointer

    init(_ plugin: OpaquePointer, world: OpaquePointer, nodes: LV2World.Nodes) throws(LV2Error) {
        lilv = plugin
        uri = string(lilv_plugin_get_uri(plugin)) ?? ""
        name = Self.taking(lilv_plugin_get_name(plugin)) ?? uri
        author = Self.taking(lilv_plugin_get_author_name(plugin)) ?? ""
        libraryPath = string(lilv_plugin_get_library_uri(plugin)).flatMap { uri in
            lilv_file_uri_parse(uri, nil).map { path in
                defer { lilv_free(path) }
                return String(cString: path)
            }
        } ?? ""

        let count = Int(lilv_plugin_get_num_ports(plugin))
        guard count <= LV2Plugin.portLimit else { throw .invalid(uri: uri, reason: "it has \(count) ports") }
        var ports: [LV2Port] = [], controls: [LV2Control] = []
        var symbols = Set(LV2NodeType.pickingParameters)
        for index in 0..<count {
            guard let port = lilv_plugin_get_port_by_index(plugin, UInt32(index)) else { continue }
            func isA(_ node: OpaquePointer) -> Bool { lilv_port_is_a(plugin, port, node) }
            func has(_ node: OpaquePointer) -> Bool { lilv_port_has_property(plugin, port, node) }
            let symbol = string(lilv_port_get_symbol(plugin, port)) ?? "port\(index)"
            let portName = Self.taking(lilv_port_get_name(plugin, port)) ?? symbol
            let kind: LV2Port.Kind =
                isA(nodes.audioPort) ? .audio : isA(nodes.controlPort) ? .control
                : isA(nodes.atomPort) ? .atom : isA(nodes.cvPort) ? .cv : .other
            let isInput = isA(nodes.inputPort)
            guard kind != .other || has(nodes.connectionOptional) else {
                throw .invalid(uri: uri, reason: "port '\(symbol)' is of a kind Sluice does not host (neither audio, control, CV nor atom)")
            }
            var minimumSize = 0
            if kind == .atom, let size = lilv_port_get(plugin, port, nodes.minimumSize) {
                minimumSize = Int(max(0, min(lilv_node_as_int(size), 1 << 24)))
                lilv_node_free(size)
            }
            ports.append(LV2Port(index: index, symbol: symbol, name: portName, kind: kind, isInput: isInput, minimumSize: minimumSize))
            if kind == .control && isInput {
                var defaultNode: OpaquePointer?, minimumNode: OpaquePointer?, maximumNode: OpaquePointer?
                lilv_port_get_range(plugin, port, &defaultNode, &minimumNode, &maximumNode)
                func number(_ node: OpaquePointer?) -> Double? {
                    guard let node else { return nil }
                    defer { lilv_node_free(node) }
                    guard lilv_node_is_float(node) || lilv_node_is_int(node) else { return nil }
                    return Self.decimal(lilv_node_as_float(node))
                }
                var scalePoints: [(label: String, value: Double)] = []
                if let points = lilv_port_get_scale_points(plugin, port) {
                    var iterator = lilv_scale_points_begin(points)
                    while !lilv_scale_points_is_end(points, iterator) {
                        if let point = lilv_scale_points_get(points, iterator),
                            let label = string(lilv_scale_point_get_label(point)),
                            let value = lilv_scale_point_get_value(point)
                        {
                            if let number = Self.decimal(lilv_node_as_float(value)) { scalePoints.append((label, number)) }
                        }
                        iterator = lilv_scale_points_next(points, iterator)
                    }
                    lilv_scale_points_free(points)
                }
                controls.append(LV2Control(
                    port: index, portSymbol: symbol,
                    symbol: Self.uniqueSymbol(for: symbol, among: &symbols), name: portName,
                    defaultValue: number(defaultNode), minimum: number(minimumNode), maximum: number(maximumNode),
                    isToggle: has(nodes.toggled), isInteger: has(nodes.integer), isEnumeration: has(nodes.enumeration),
                    isLogarithmic: has(nodes.logarithmic), isRateRelative: has(nodes.sampleRate),
                    scalePoints: scalePoints.sorted { $0.value < $1.value }))
            }
        }
        self.ports = ports
        self.controls = controls
        latencyPort = lilv_plugin_has_latency(plugin) ? Int(lilv_plugin_get_latency_port_index(plugin)) : nil

        var required: [String] = []
        if let features = lilv_plugin_get_required_features(plugin) {
            var iterator = lilv_nodes_begin(features)
            while !lilv_nodes_is_end(features, iterator) {
                if let feature = string(lilv_nodes_get(features, iterator)) { required.append(feature) }
                iterator = lilv_nodes_next(features, iterator)
            }
            lilv_nodes_free(features)
        }
        requiredFeatures = required
        hasWorker = lilv_plugin_has_extension_data(plugin, nodes.workerInterface)
        hasState = lilv_plugin_has_extension_data(plugin, nodes.stateInterface)
    }

    /// More ports than any real plugin has: a bundle claiming more is refused.
    static let portLimit = 4096

    public var audioInputs: [LV2Port] { ports.filter { $0.kind == .audio && $0.isInput } }
    public var audioOutputs: [LV2Port] { ports.filter { $0.kind == .audio && !$0.isInput } }
    /// The control outputs (meters, gain reduction, the reported latency).
    public var controlOutputs: [LV2Port] { ports.filter { $0.kind == .control && !$0.isInput } }

    /// The required features the host does not provide, by URI.
    public var unsupportedFeatures: [String] { requiredFeatures.filter { !LV2Features.supported.contains($0) } }

    /// The plugin's one-line description for listings.
    public var summary: String {
        "\(name) (LV2, \(audioInputs.count) in, \(audioOutputs.count) out\(author.isEmpty ? "" : ", by \(author)"))"
    }

    /// A symbol as a parameter name: itself, unless it is a picking parameter's or taken.
    private static func uniqueSymbol(for symbol: String, among taken: inout Set<String>) -> String {
        var candidate = symbol
        var suffix = 2
        while !taken.insert(candidate).inserted {
            candidate = "\(symbol)-\(suffix)"
            suffix += 1
        }
        return candidate
    }

    /// A float from the plugin's data as the decimal its Turtle wrote (0.7, not 0.69999998…).
    private static func decimal(_ value: Float) -> Double? {
        guard value.isFinite else { return nil }
        return Double("\(value)") ?? Double(value)
    }

    /// A node lilv made for the caller (to free), as text.
    private static func taking(_ node: OpaquePointer?) -> String? {
        defer { if let node { lilv_node_free(node) } }
        return string(node)
    }
}

/// One port of an LV2 plugin.
public struct LV2Port: Sendable, Hashable {
    public enum Kind: Sendable, Hashable { case audio, control, atom, cv, other }
    public let index: Int
    public let symbol: String
    public let name: String
    public let kind: Kind
    public let isInput: Bool
    /// For an atom port: the buffer size it asks for (`rsz:minimumSize`), 0 when it names none.
    public let minimumSize: Int
}

/// One control input of an LV2 plugin, as a Sluice parameter named by its symbol.
public struct LV2Control: @unchecked Sendable {
    // SAFETY (@unchecked Sendable): plain values; the tuple array is immutable.
    public let port: Int
    /// The port's symbol in the plugin (what presets and state name it by).
    public let portSymbol: String
    /// The parameter name in graph files and live changes: the symbol, unless taken.
    public let symbol: String
    public let name: String
    public let defaultValue: Double?
    public let minimum: Double?
    public let maximum: Double?
    public let isToggle: Bool
    public let isInteger: Bool
    public let isEnumeration: Bool
    public let isLogarithmic: Bool
    /// Whether the bounds and default are fractions of the sample rate (lv2:sampleRate).
    public let isRateRelative: Bool
    /// The labelled values the plugin names (an enumeration's choices), by value.
    public let scalePoints: [(label: String, value: Double)]

    /// Rate-relative bounds are checked against the widest rates a graph runs at, as LADSPA's.
    static let checkingRateRange = 1_000...384_000

    /// The range values are checked against (at `rate` for rate-relative ones; nil: checking).
    func range(rate: Int?) -> ClosedRange<Double> {
        let largest = Double(Float.greatestFiniteMagnitude)
        var low = minimum ?? -largest
        var high = maximum ?? largest
        if isToggle { low = 0; high = 1 }
        if isRateRelative {
            let lowRate = Double(rate ?? Self.checkingRateRange.lowerBound)
            let highRate = Double(rate ?? Self.checkingRateRange.upperBound)
            if let minimum { low = minimum * (minimum < 0 ? highRate : lowRate) }
            if let maximum { high = maximum * (maximum < 0 ? lowRate : highRate) }
        }
        return min(low, high)...max(low, high)
    }

    /// The plugin's default (at `rate` when rate-relative); the minimum, or 0, when it gives none.
    public func defaultValue(rate: Int) -> Double {
        let range = self.range(rate: rate)
        let value = defaultValue.map { isRateRelative ? $0 * Double(rate) : $0 } ?? (range.contains(0) ? 0 : range.lowerBound)
        let clamped = min(max(value, range.lowerBound), range.upperBound)
        return isInteger || isToggle || isEnumeration ? clamped.rounded() : clamped
    }

    /// This control as a live Sluice parameter.
    var parameter: ParameterDescriptor {
        let type: ParameterType
        var defaultValue: ParameterValue?
        let checking = range(rate: nil)
        let limit = Double(1 << 52)
        if (isToggle || isInteger || isEnumeration), checking.lowerBound >= -limit, checking.upperBound <= limit {
            let range = Int(checking.lowerBound.rounded(.up))...Int(checking.upperBound.rounded(.down))
            type = .integer(range)
            defaultValue = .integer(Int(self.defaultValue(rate: 48_000)))
        } else {
            type = .number(checking)
            defaultValue = .number(self.defaultValue(rate: 48_000))
        }
        var summary = name == symbol ? "LV2 control" : "LV2 control \"\(name)\""
        if symbol != portSymbol { summary += " (port '\(portSymbol)')" }
        if isToggle { summary += ", a toggle (0 off, 1 on)" }
        if isLogarithmic { summary += ", logarithmic" }
        if !scalePoints.isEmpty {
            summary += "; " + scalePoints.map { "\(ExternalNumber.text($0.value)) = \($0.label)" }.joined(separator: ", ")
        }
        if isRateRelative {
            // Its default depends on the node's rate: left absent, the node computes it.
            defaultValue = nil
            summary += "; its limits scale with the sample rate (checked at 384 kHz, clamped at the node's)"
        }
        var parameter = ParameterDescriptor(symbol, type, default: defaultValue, unit: isRateRelative ? "Hz" : nil, live: true, summary: summary)
        // An enumeration takes its scale points alone: a page offers them as a choice.
        if isEnumeration && !isRateRelative {
            parameter.namedValues = scalePoints.filter { checking.contains($0.value) }.map { .init(label: $0.label, value: $0.value) }
        }
        return parameter
    }
}
