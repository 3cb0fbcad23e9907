import SluiceAudio

/// A checked parameter value. Graph files give text; the compiler turns it into one of these
/// according to the parameter's `ParameterType`, or reports where and why it cannot.
public enum ParameterValue: Sendable, Hashable, CustomStringConvertible {
    case number(Double)
    case integer(Int)
    case boolean(Bool)
    /// Strings, paths and choices.
    case string(String)
    case list([String])
    /// A rate left to the downstream sink.
    case auto

    public var description: String {
        switch self {
        case .number(let value): format(value)
        case .integer(let value): String(value)
        case .boolean(let value): String(value)
        case .string(let value): value
        case .list(let values): "[" + values.joined(separator: ", ") + "]"
        case .auto: "auto"
        }
    }
}

/// The parameters a node is created with: every parameter of its descriptor, checked against
/// its type and range, defaults filled in. Accessors trap on a name the descriptor does not
/// declare (a programming error in the node, not a user error).
public struct NodeParameters: Sendable, Hashable {
    public private(set) var values: [String: ParameterValue]
    /// The folder relative paths resolve against (the graph file's folder), or nil for the
    /// current directory.
    public var baseDirectory: String?
    /// The names the graph file gave, as opposed to defaults filled in; nil when the values
    /// were not read from a file (then every one counts as given). A node that restores
    /// values from elsewhere (an `lv2` node's preset) lets only these override them.
    public var given: Set<String>?

    public init(_ values: [String: ParameterValue] = [:], baseDirectory: String? = nil) {
        self.values = values
        self.baseDirectory = baseDirectory
    }

    /// Whether the graph file gave `name` (not only its default).
    public func isGiven(_ name: String) -> Bool { values[name] != nil && given?.contains(name) ?? true }

    public subscript(name: String) -> ParameterValue? {
        get { values[name] }
        set { values[name] = newValue }
    }

    public func double(_ name: String) -> Double {
        switch values[name] {
        case .number(let value): value
        case .integer(let value): Double(value)
        default: preconditionFailure("parameter '\(name)' is not a number")
        }
    }

    public func integer(_ name: String) -> Int {
        switch values[name] {
        case .integer(let value): value
        // Checked against the parameter's range when the graph was compiled; clamped all the
        // same, so a number read as an integer can never trap.
        case .number(let value): ExternalNumber.clamped(value, to: Int.min...Int.max) ?? 0
        default: preconditionFailure("parameter '\(name)' is not an integer")
        }
    }

    public func boolean(_ name: String) -> Bool {
        guard case .boolean(let value) = values[name] else {
            preconditionFailure("parameter '\(name)' is not a boolean")
        }
        return value
    }

    /// Strings, paths and choices. Nil when the parameter is optional and absent.
    public func string(_ name: String) -> String? {
        switch values[name] {
        case .string(let value): value
        case nil: nil
        default: preconditionFailure("parameter '\(name)' is not a string")
        }
    }

    public func list(_ name: String) -> [String] {
        switch values[name] {
        case .list(let values): values
        case .string(let value): [value]
        default: []
        }
    }

    /// A rate in Hz, or nil for `auto`.
    public func rate(_ name: String) -> Int? {
        switch values[name] {
        case .integer(let value): value
        case .auto, nil: nil
        default: preconditionFailure("parameter '\(name)' is not a rate")
        }
    }

    /// A path parameter resolved against `baseDirectory`: absolute paths and `-` stay as
    /// they are.
    public func path(_ name: String) -> String? {
        guard let path = string(name) else { return nil }
        guard let base = baseDirectory, !path.hasPrefix("/"), path != "-" else { return path }
        return base.hasSuffix("/") ? base + path : base + "/" + path
    }
}
