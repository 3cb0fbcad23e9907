import SluiceGraph

/// The rules for names a graph text declares. Node names appear in links as `node.port`, so
/// they may not contain a dot; the same rule keeps them easy to type on a command line.
enum Names {
    /// What to tell a user whose node name breaks the rule.
    static let nodeNameFix = "use letters, digits, '-' and '_', starting with a letter or '_'"

    /// `[A-Za-z_][A-Za-z0-9_-]*`: node and port names.
    static func isIdentifier(_ text: some StringProtocol) -> Bool {
        guard let first = text.unicodeScalars.first, isLetter(first) || first == "_" else { return false }
        return text.unicodeScalars.allSatisfy { isLetter($0) || isDigit($0) || $0 == "_" || $0 == "-" }
    }

    static func isLetter(_ scalar: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar)
    }

    static func isDigit(_ scalar: Unicode.Scalar) -> Bool {
        ("0"..."9").contains(scalar)
    }

    /// "did you mean 'a' or 'b'?", or `otherwise` when nothing is close.
    static func suggestion(for name: String, among candidates: [String], otherwise: String) -> String {
        let close = closestNames(to: name, among: candidates)
        guard !close.isEmpty else { return otherwise }
        return "did you mean " + close.map { "'\($0)'" }.joined(separator: " or ") + "?"
    }
}

extension [GraphDiagnostic] {
    /// File order: by line, then column; diagnostics without a place first, and ties keep
    /// the order they were found in.
    func sortedInFileOrder() -> [GraphDiagnostic] {
        enumerated().sorted { lhs, rhs in
            let a = lhs.element.location, b = rhs.element.location
            let keyA = (a?.line ?? 0, a?.column ?? 0), keyB = (b?.line ?? 0, b?.column ?? 0)
            return keyA != keyB ? keyA < keyB : lhs.offset < rhs.offset
        }.map(\.element)
    }
}
