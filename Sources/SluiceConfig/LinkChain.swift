/// A `links:` entry: `a -> b.in2 -> c`, read into references with their offsets so each can
/// be reported at its own column. Node and port names follow `Names.isIdentifier`.
enum LinkChain {
    /// One `node` or `node.port`, at `offset` Unicode scalars into the chain's text.
    struct Reference: Equatable {
        var node: String
        var port: String?
        var offset: Int
    }

    /// What is wrong, where (scalars into the text), and how to write it instead.
    struct Problem: Error, Equatable {
        var message: String
        var offset: Int
        var fix: String
    }

    static let form = "write a link as `a -> b -> c`, naming a port as `mix.in2`"
    static let nameFix = Names.nodeNameFix + ", as in `voice -> mix.in2`"

    /// The references in order (at least two), or the first problem.
    static func parse(_ text: String) -> Result<[Reference], Problem> {
        let scalars = Array(text.unicodeScalars)
        var references: [Reference] = []
        var expectingReference = true
        var lastArrow: Int?
        var index = 0

        func isArrow(at position: Int) -> Bool {
            position + 1 < scalars.count && scalars[position] == "-" && scalars[position + 1] == ">"
        }
        func isReferenceScalar(_ scalar: Unicode.Scalar) -> Bool {
            Names.isLetter(scalar) || Names.isDigit(scalar) || scalar == "_" || scalar == "-" || scalar == "."
        }

        while true {
            while index < scalars.count, scalars[index] == " " || scalars[index] == "\t" { index += 1 }
            if index == scalars.count {
                if let lastArrow, expectingReference {
                    return .failure(Problem(message: "link ends with '->': a node must follow it",
                                            offset: lastArrow, fix: form))
                }
                break
            }
            if isArrow(at: index) {
                if expectingReference {
                    return .failure(lastArrow == nil
                        ? Problem(message: "link starts with '->': a node must come before it", offset: index, fix: form)
                        : Problem(message: "missing node between '->' and '->'", offset: index, fix: form))
                }
                expectingReference = true
                lastArrow = index
                index += 2
                continue
            }
            guard isReferenceScalar(scalars[index]) else {
                return .failure(Problem(message: "unexpected character '\(scalars[index])' in link",
                                        offset: index, fix: form))
            }
            let start = index
            while index < scalars.count, isReferenceScalar(scalars[index]), !isArrow(at: index) { index += 1 }
            let token = String(String.UnicodeScalarView(scalars[start ..< index]))
            guard expectingReference else {
                return .failure(Problem(message: "expected '->' before '\(token)'", offset: start, fix: form))
            }
            switch reference(token, at: start) {
            case .success(let reference): references.append(reference)
            case .failure(let problem): return .failure(problem)
            }
            expectingReference = false
        }

        guard let first = references.first else {
            return .failure(Problem(message: "empty link", offset: 0, fix: form))
        }
        guard references.count >= 2 else {
            return .failure(Problem(message: "link '\(text.trimmingSpaces)' names only one node: a link joins two",
                                    offset: first.offset, fix: form))
        }
        return .success(references)
    }

    /// `node` or `node.port`, checked.
    private static func reference(_ token: String, at offset: Int) -> Result<Reference, Problem> {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        let portFix = "name a port as `node.port`, e.g. `mix.in2`"
        if parts.count > 2 {
            let secondDot = parts[0].unicodeScalars.count + 1 + parts[1].unicodeScalars.count
            return .failure(Problem(message: "too many '.' in '\(token)'", offset: offset + secondDot, fix: portFix))
        }
        let node = String(parts[0])
        if node.isEmpty {
            return .failure(Problem(message: "missing node name before '\(token)'", offset: offset, fix: portFix))
        }
        guard Names.isIdentifier(node) else {
            return .failure(Problem(message: "invalid node name '\(node)' in link", offset: offset, fix: nameFix))
        }
        guard parts.count == 2 else { return .success(Reference(node: node, port: nil, offset: offset)) }
        let port = String(parts[1])
        let portOffset = offset + node.unicodeScalars.count + 1
        if port.isEmpty {
            return .failure(Problem(message: "missing port name after '\(token)'", offset: portOffset - 1, fix: portFix))
        }
        guard Names.isIdentifier(port) else {
            return .failure(Problem(message: "invalid port name '\(port)' in link", offset: portOffset, fix: nameFix))
        }
        return .success(Reference(node: node, port: port, offset: offset))
    }
}

extension String {
    var trimmingSpaces: String {
        let scalars = unicodeScalars.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed()
        return String(String.UnicodeScalarView(scalars))
    }
}
