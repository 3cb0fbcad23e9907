/// A place in a graph file (or in a one-line graph), 1-based.
public struct SourceLocation: Sendable, Hashable, CustomStringConvertible {
    /// The file's path as the user gave it, or `<command line>` for a one-line graph.
    public var file: String
    public var line: Int
    public var column: Int

    public init(file: String, line: Int, column: Int) {
        self.file = file
        self.line = line
        self.column = column
    }

    /// A value given on the command line rather than in a file (`sluice speak --set rate=fast`):
    /// the option as the user typed it, in `file`, with line 0.
    public static func option(_ text: String) -> SourceLocation {
        SourceLocation(file: text, line: 0, column: 0)
    }

    /// Whether this names a command-line option (`option(_:)`), not a place in a file.
    public var isOption: Bool { line == 0 }

    public var description: String { isOption ? file : "\(file):\(line):\(column)" }
}

/// An error in a graph: where it is, what is wrong, and what would fix it. Printed in the
/// compilers' style, `file:line:column: error: message`, with the fix on the next line.
public struct GraphDiagnostic: Error, Sendable, Hashable, CustomStringConvertible {
    public var location: SourceLocation?
    public var message: String
    public var fix: String?

    public init(_ message: String, at location: SourceLocation?, fix: String? = nil) {
        self.location = location
        self.message = message
        self.fix = fix
    }

    /// `file:line:column: error: message`, or `error: --option value: message` for a value
    /// given on the command line.
    public var description: String {
        var text = location.map { $0.isOption ? "error: \($0): " : "\($0): error: " } ?? "error: "
        text += message
        if let fix { text += "\n  fix: " + fix }
        return text
    }
}

/// All the errors found in one graph, in file order.
public struct GraphDiagnostics: Error, Sendable, Hashable, CustomStringConvertible {
    public var diagnostics: [GraphDiagnostic]

    public init(_ diagnostics: [GraphDiagnostic]) {
        self.diagnostics = diagnostics
    }

    public var description: String { diagnostics.map(\.description).joined(separator: "\n") }

    /// How the compiler's error for a node type nobody provides begins.
    public static let unknownTypePrefix = "unknown node type "

    /// These diagnostics with `note` added to the fix of each unknown-type error: what the
    /// host knows about why a type may be missing (a plugin that did not load, one it did not
    /// open).
    public func addingToUnknownTypeFixes(_ note: String) -> GraphDiagnostics {
        GraphDiagnostics(diagnostics.map { diagnostic in
            guard diagnostic.message.hasPrefix(Self.unknownTypePrefix) else { return diagnostic }
            var noted = diagnostic
            noted.fix = (diagnostic.fix.map { $0 + "; " } ?? "") + note
            return noted
        })
    }
}
