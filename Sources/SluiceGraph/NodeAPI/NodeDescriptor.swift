import SluiceAudio

/// What a node type is, as data: its name in graph files, its kind, its ports and the formats
/// each accepts, and its parameters. `sluice nodes` prints these, graph files are checked
/// against them, and `sluice dot` labels edges with the formats they negotiate.
public struct NodeDescriptor: Sendable, Hashable {
    /// The `type:` name in graph files, e.g. `resampler`, `wav.sink`.
    public var typeName: String
    public var kind: NodeKind
    /// One line: what the node does.
    public var summary: String
    public var inputs: [PortDescriptor]
    public var outputs: [PortDescriptor]
    public var parameters: [ParameterDescriptor]
    /// Whether a node of this type has variable inputs (`in1`, `in2`, …); the count comes
    /// from the parameter named here (the mixer's `inputs`).
    public var inputCountParameter: String?
    /// The same for variable outputs (`out1`, `out2`, …; the tee's `outputs`).
    public var outputCountParameter: String?
    /// Whether the type hosts plugins of another format (`ladspa`, `lv2`): `parameters` are
    /// those that pick the plugin, and the plugin's own come with it (`NodeType.resolve`).
    public var hostsPlugins = false

    public init(
        typeName: String, kind: NodeKind, summary: String,
        inputs: [PortDescriptor] = [], outputs: [PortDescriptor] = [],
        parameters: [ParameterDescriptor] = [], inputCountParameter: String? = nil,
        outputCountParameter: String? = nil
    ) {
        self.typeName = typeName
        self.kind = kind
        self.summary = summary
        self.inputs = inputs
        self.outputs = outputs
        self.parameters = parameters
        self.inputCountParameter = inputCountParameter
        self.outputCountParameter = outputCountParameter
    }

    public func parameter(named name: String) -> ParameterDescriptor? {
        parameters.first { $0.name == name }
    }
}

/// Where a node sits in a graph, which decides the thread it runs on.
public enum NodeKind: String, Sendable, Hashable, CaseIterable {
    /// Produces audio on its own thread (providers, files, test signals).
    case source
    /// Moves audio from inputs to outputs on the graph worker thread.
    case processor
    /// Ends the graph; its playhead is driven by a device clock (JACK) or by a driver.
    case sink
}

/// What kind of stream a port carries.
public enum PortMedium: String, Sendable, Hashable {
    /// Raw PCM bytes in a declared sample format (before the aligner).
    case bytes
    /// Interleaved Float32 frames at a known rate and channel count.
    case frames
}

/// One input or output of a node type.
public struct PortDescriptor: Sendable, Hashable {
    /// The name used in links (`mix.in2`). The first port is also reached by the node's name
    /// alone.
    public var name: String
    public var medium: PortMedium
    /// An input that must be linked for the graph to run.
    public var isRequired: Bool
    public var summary: String

    public init(_ name: String, _ medium: PortMedium, required: Bool = true, summary: String = "") {
        self.name = name
        self.medium = medium
        self.isRequired = required
        self.summary = summary
    }
}

/// One parameter of a node type, as data.
public struct ParameterDescriptor: Sendable, Hashable {
    public var name: String
    public var type: ParameterType
    /// Used when the graph file leaves the parameter out; nil leaves it absent.
    public var defaultValue: ParameterValue?
    /// A parameter the graph file must give.
    public var isRequired: Bool
    /// The unit shown beside values ("Hz", "s", "frames"), or nil.
    public var unit: String?
    /// One line: what the parameter does.
    public var summary: String
    /// Whether the parameter may change while the graph plays (`sluice ctl set`, OSC): the
    /// node is a `LiveParameterNode` and applies the change at an exact frame, ramped where a
    /// jump would click. Live parameters are numbers.
    public var isLive: Bool
    /// The only values it takes, each with a name, for a number that picks one of a set (an
    /// LV2 enumeration's scale points): a control offers these as a choice. Empty otherwise.
    public var namedValues: [NamedValue] = []

    /// One value of a parameter that picks one of a set, and its name.
    public struct NamedValue: Sendable, Hashable {
        public var label: String
        public var value: Double

        public init(label: String, value: Double) {
            self.label = label
            self.value = value
        }
    }

    public init(
        _ name: String, _ type: ParameterType, default defaultValue: ParameterValue?,
        required: Bool = false, unit: String? = nil, live: Bool = false, summary: String
    ) {
        self.name = name
        self.isLive = live
        self.isRequired = required
        self.type = type
        self.defaultValue = defaultValue
        self.unit = unit
        self.summary = summary
    }
}

/// The values a parameter accepts. Ranges are inclusive.
public enum ParameterType: Sendable, Hashable, CustomStringConvertible {
    case number(ClosedRange<Double>)
    case integer(ClosedRange<Int>)
    case boolean
    case string
    /// A file path; relative paths resolve against the graph file's folder.
    case path
    /// One of a fixed set of names.
    case choice([String])
    /// A sample rate in Hz within the range, or `auto`: the rate the downstream sink decides.
    case rate(ClosedRange<Int>)
    /// A list of strings (YAML sequence, or comma-separated in the one-line form).
    case list

    public var description: String {
        switch self {
        case .number(let range): "number in \(format(range.lowerBound))…\(format(range.upperBound))"
        case .integer(let range): "integer in \(range.lowerBound)…\(range.upperBound)"
        case .boolean: "true or false"
        case .string: "string"
        case .path: "path"
        case .choice(let names): "one of " + names.joined(separator: ", ")
        case .rate(let range): "rate in \(range.lowerBound)…\(range.upperBound), or auto"
        case .list: "list of strings"
        }
    }
}

/// Formats a Double without a trailing ".0" when it is whole.
func format(_ value: Double) -> String {
    ExternalNumber.text(value)
}
