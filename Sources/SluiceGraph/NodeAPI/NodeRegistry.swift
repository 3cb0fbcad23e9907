/// A node type: its descriptor and the factory that creates a node from checked parameters.
public struct NodeType: Sendable {
    public var descriptor: NodeDescriptor
    /// [control-thread] Creates a node. Throw `NodeCreationError` with a sentence a user can act on
    /// ("cannot open 'voice.wav': no such file"); the graph reports it at the node's line.
    public var make: @Sendable (NodeParameters) throws -> any Node
    /// [control-thread] For a type that hosts another plugin format (`ladspa`, `lv2`): its
    /// descriptor declares only the parameters that pick the plugin (a library and a label, a
    /// URI); given their checked values, this returns the type of that one plugin, whose
    /// descriptor adds the plugin's own parameters and ports (its `typeName` stays this
    /// type's). Throw `NodeCreationError` naming the picking parameter at fault. Nil for every
    /// other type.
    public var resolve: (@Sendable (NodeParameters) throws -> NodeType)?

    public init(_ descriptor: NodeDescriptor, make: @escaping @Sendable (NodeParameters) throws -> any Node) {
        self.descriptor = descriptor
        self.make = make
        self.resolve = nil
    }

    /// A type whose parameters beyond `descriptor`'s come from the plugin those pick
    /// (`resolve`); `make` is never called on it, only on what `resolve` returns.
    public init(hosting descriptor: NodeDescriptor, resolve: @escaping @Sendable (NodeParameters) throws -> NodeType) {
        self.descriptor = descriptor
        self.make = { _ in throw NodeCreationError("'\(descriptor.typeName)' needs its plugin picked first") }
        self.resolve = resolve
    }
}

/// Why a factory could not create a node.
public struct NodeCreationError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    /// What would fix it, or nil.
    public var fix: String?
    /// The parameter at fault, when there is one; the error points at its value.
    public var parameter: String?

    public init(_ message: String, fix: String? = nil, parameter: String? = nil) {
        self.message = message
        self.fix = fix
        self.parameter = parameter
    }

    public var description: String { message }
}

/// The node types a graph file can name by `type:`. Built-in nodes, plugins and a program's
/// own custom nodes all register here.
public struct NodeRegistry: Sendable {
    private var types: [String: NodeType] = [:]

    public init() {}

    public enum RegistrationError: Error, Sendable, Hashable, CustomStringConvertible {
        case duplicate(String)

        public var description: String {
            switch self {
            case .duplicate(let name): "a node type named '\(name)' is already registered"
            }
        }
    }

    /// Adds a node type; a second type with the same name is refused.
    public mutating func register(_ type: NodeType) throws(RegistrationError) {
        let name = type.descriptor.typeName
        guard types[name] == nil else { throw .duplicate(name) }
        types[name] = Self.addingSinkMeter(to: type)
    }

    public func type(named name: String) -> NodeType? { types[name] }

    /// Every registered type, sorted by name.
    public var all: [NodeType] { types.values.sorted { $0.descriptor.typeName < $1.descriptor.typeName } }

    /// Registered names close to `name`, closest first: for "did you mean" hints.
    public func suggestions(for name: String) -> [String] {
        closestNames(to: name, among: types.keys)
    }
}

/// The names nearest to `name` within a small edit distance (a shared prefix counts as one
/// edit), sorted; ties are all returned, up to `limit`.
public func closestNames(to name: String, among candidates: some Sequence<String>, limit: Int = 3) -> [String] {
    let lowered = name.lowercased()
    let scored = candidates.map { candidate -> (String, Int) in
        let distance = editDistance(lowered, candidate.lowercased())
        let prefix = candidate.lowercased().hasPrefix(lowered) || lowered.hasPrefix(candidate.lowercased())
        return (candidate, prefix ? min(distance, 1) : distance)
    }
    // Only the closest: "tonee" suggests "tone", not also "tee".
    let threshold = max(2, name.count / 3)
    let close = scored.filter { $0.1 <= threshold }
    guard let best = close.map(\.1).min() else { return [] }
    return close.filter { $0.1 == best }.map(\.0).sorted().prefix(limit).map { $0 }
}

/// Levenshtein distance, with a transposition of neighbours counted as one edit.
func editDistance(_ a: String, _ b: String) -> Int {
    let a = Array(a), b = Array(b)
    if a.isEmpty { return b.count }
    if b.isEmpty { return a.count }
    var previous2 = [Int](repeating: 0, count: b.count + 1)
    var previous = Array(0...b.count)
    var current = [Int](repeating: 0, count: b.count + 1)
    for i in 1...a.count {
        current[0] = i
        for j in 1...b.count {
            let cost = a[i - 1] == b[j - 1] ? 0 : 1
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                current[j] = min(current[j], previous2[j - 2] + 1)
            }
        }
        (previous2, previous, current) = (previous, current, previous2)
    }
    return previous[b.count]
}
