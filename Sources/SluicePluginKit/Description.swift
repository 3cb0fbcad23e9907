/// What a node type is, as data: the Swift side of `sluice_node_descriptor_t`.
public struct NodeDescription: Sendable, Hashable {
    public enum Kind: Sendable, Hashable {
        /// Text in, PCM bytes out: no inputs, one output of `.bytes`.
        case provider
        /// Float32 frames in and out: 1…16 inputs and outputs, all `.frames`.
        case processor
    }

    /// The `type:` in graph files.
    public var typeName: String
    public var kind: Kind
    /// One line: what the node does.
    public var summary: String
    public var inputs: [Port]
    public var outputs: [Port]
    public var parameters: [Parameter]

    public init(
        typeName: String, kind: Kind, summary: String, inputs: [Port] = [], outputs: [Port],
        parameters: [Parameter] = []
    ) {
        self.typeName = typeName
        self.kind = kind
        self.summary = summary
        self.inputs = inputs
        self.outputs = outputs
        self.parameters = parameters
    }
}

/// One input or output.
public struct Port: Sendable, Hashable {
    public enum Medium: Sendable, Hashable {
        /// Raw PCM bytes (a provider's output).
        case bytes
        /// Interleaved Float32 frames.
        case frames
    }

    public var name: String
    public var medium: Medium
    public var summary: String

    public init(_ name: String, _ medium: Medium, summary: String = "") {
        self.name = name
        self.medium = medium
        self.summary = summary
    }
}

/// One parameter: name, type with its range, default, unit, one-line summary.
public struct Parameter: Sendable, Hashable {
    public enum Kind: Sendable, Hashable {
        case number(ClosedRange<Double>)
        case integer(ClosedRange<Int>)
        case boolean
        case string
        /// A string; relative paths arrive resolved against the graph file's folder.
        case path
        case choice([String])
    }

    public var name: String
    public var kind: Kind
    public var defaultValue: Value?
    public var isRequired: Bool
    public var unit: String?
    /// The parameter may change while the graph plays (`SLUICE_PARAM_LIVE`): each change
    /// reaches the processor as a `ProcessEvent.parameter` in `process`. Numbers and integers
    /// of processors only; move to a new value by a ramp, so it never clicks.
    public var isLive: Bool
    public var summary: String

    public init(
        _ name: String, _ kind: Kind, default defaultValue: Value?, required: Bool = false, unit: String? = nil,
        live: Bool = false, summary: String
    ) {
        self.name = name
        self.kind = kind
        self.defaultValue = defaultValue
        self.isRequired = required
        self.unit = unit
        self.isLive = live
        self.summary = summary
    }
}

/// A parameter value.
public enum Value: Sendable, Hashable {
    case number(Double)
    case integer(Int)
    case boolean(Bool)
    /// Strings, paths and choices.
    case string(String)
}

/// The values a node is created with: every parameter the graph gave or that has a default,
/// already checked by the host against its type and range.
public struct Parameters: Sendable, Hashable {
    public var values: [String: Value]

    public init(_ values: [String: Value] = [:]) {
        self.values = values
    }

    public subscript(name: String) -> Value? { values[name] }

    /// A number (or an integer, widened); nil when absent.
    public func double(_ name: String) -> Double? {
        switch values[name] {
        case .number(let value): value
        case .integer(let value): Double(value)
        default: nil
        }
    }

    public func integer(_ name: String) -> Int? {
        if case .integer(let value) = values[name] { return value }
        return nil
    }

    public func boolean(_ name: String) -> Bool? {
        if case .boolean(let value) = values[name] { return value }
        return nil
    }

    /// Strings, paths and choices.
    public func string(_ name: String) -> String? {
        if case .string(let value) = values[name] { return value }
        return nil
    }
}

/// A failure a plugin reports: a stable code ("http-401") and a sentence.
public struct PluginError: Error, Sendable, Hashable, CustomStringConvertible {
    public var code: String
    public var message: String

    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}

/// A provider's output layout.
public struct PCMFormat: Sendable, Hashable {
    public enum SampleFormat: Sendable, Hashable {
        case s16le, s24le, s32le, f32le
    }

    public var sampleFormat: SampleFormat
    public var sampleRate: Int
    public var channels: Int

    public init(_ sampleFormat: SampleFormat, sampleRate: Int, channels: Int) {
        self.sampleFormat = sampleFormat
        self.sampleRate = sampleRate
        self.channels = channels
    }
}
