import SluiceGraph

/// The one-line form, in the manner of gst-launch: a chain of elements separated by `!`,
/// each a node type followed by `key=value` parameters.
///
/// ```
/// tone frequency=440 duration=2 ! fader ! wav.sink path=out.wav title="Hello world"
/// ```
///
/// Each element links its first output to the next element's first input. `name=x` names
/// a node; otherwise it is named after its type, with `-2`, `-3`… for repeats (`fader`,
/// `fader-2`). Values may be quoted with `'…'` or `"…"` to hold spaces; a value with commas
/// stays one value (the compiler splits it where a list is wanted). Columns count characters
/// from 1, all on line 1.
public enum OneLineGraph {
    /// The graph name a one-line graph gets.
    public static let graphName = "one-line"

    /// Reads a one-line graph.
    ///
    /// - Parameter file: What to name in messages.
    /// - Throws: every problem found, left to right.
    public static func parse(_ text: String, file: String = "<command line>") throws(GraphDiagnostics) -> GraphDescription {
        var parser = OneLineParser(file: file)
        let description = parser.parse(text)
        guard parser.diagnostics.isEmpty else { throw GraphDiagnostics(parser.diagnostics.sortedInFileOrder()) }
        return description
    }
}

/// The work behind `OneLineGraph.parse`: words, then elements, then nodes and links.
struct OneLineParser {
    let file: String
    private(set) var diagnostics: [GraphDiagnostic] = []

    init(file: String) {
        self.file = file
    }

    static let example = "`tone frequency=440 ! wav.sink path=out.wav`"

    /// One whitespace-separated word: its characters with their columns, which of them were
    /// quoted, and where quotes opened (so `x=""` is known to be quoted and empty).
    struct Word {
        var characters: [(character: Character, column: Int, quoted: Bool)] = []
        var column: Int
        var quoteOpenings: [Int] = []

        var text: String { String(characters.map(\.character)) }

        /// The index of the first `=` outside quotes.
        var equalsIndex: Int? { characters.firstIndex { $0.character == "=" && !$0.quoted } }
    }

    enum Piece {
        case word(Word)
        case bang(column: Int)
    }

    func place(_ column: Int) -> SourceLocation { SourceLocation(file: file, line: 1, column: column) }

    mutating func error(_ message: String, at column: Int, fix: String) {
        diagnostics.append(GraphDiagnostic(message, at: place(column), fix: fix))
    }

    mutating func parse(_ text: String) -> GraphDescription {
        let elements = split(pieces(text))
        var description = GraphDescription(name: OneLineGraph.graphName, file: file)
        if elements.isEmpty && diagnostics.isEmpty {
            error("empty graph: no elements", at: 1, fix: "write elements like \(Self.example)")
        }
        var nodes: [NodeDeclaration] = []
        var explicitNames: [String?] = []
        for element in elements {
            let (node, explicitName) = read(element)
            nodes.append(node)
            explicitNames.append(explicitName)
        }
        // Automatic names avoid every name given with `name=`, wherever it is.
        var taken = Set(explicitNames.compactMap { $0 })
        for index in nodes.indices where explicitNames[index] == nil {
            let type = nodes[index].type
            var name = type
            var count = 2
            while taken.contains(name) {
                name = "\(type)-\(count)"
                count += 1
            }
            taken.insert(name)
            nodes[index].name = name
        }
        description.nodes = nodes
        description.links = zip(nodes, nodes.dropFirst()).map { from, to in
            LinkDeclaration(from: PortReference(node: from.name, location: from.typeLocation),
                            to: PortReference(node: to.name, location: to.typeLocation))
        }
        return description
    }

    /// Words and `!`s; stops at an unterminated quote, which swallows the rest of the line.
    mutating func pieces(_ text: String) -> [Piece] {
        let characters = Array(text)
        var pieces: [Piece] = []
        var index = 0
        while index < characters.count {
            let character = characters[index]
            if character.isWhitespace {
                index += 1
                continue
            }
            if character == "!" {
                pieces.append(.bang(column: index + 1))
                index += 1
                continue
            }
            var word = Word(column: index + 1)
            while index < characters.count, !characters[index].isWhitespace, characters[index] != "!" {
                let character = characters[index]
                guard character == "\"" || character == "'" else {
                    word.characters.append((character, index + 1, false))
                    index += 1
                    continue
                }
                guard let close = characters[(index + 1)...].firstIndex(of: character) else {
                    error("unterminated quote", at: index + 1,
                          fix: "close the value with a matching \(character) (put the other kind of quote inside it if needed)")
                    return pieces
                }
                word.quoteOpenings.append(word.characters.count)
                for inner in (index + 1) ..< close { word.characters.append((characters[inner], inner + 1, true)) }
                index = close + 1
            }
            pieces.append(.word(word))
        }
        return pieces
    }

    /// The words of each element; an element with no words is reported at the `!` that
    /// shows it.
    mutating func split(_ pieces: [Piece]) -> [[Word]] {
        var elements: [[Word]] = []
        var current: [Word] = []
        var previousBang: Int?
        var reportedBang: Int?
        for piece in pieces {
            switch piece {
            case .word(let word):
                current.append(word)
            case .bang(let column):
                if current.isEmpty {
                    reportedBang = column
                    if previousBang == nil {
                        error("'!' with no element before it", at: column, fix: "start with a node type, as in \(Self.example)")
                    } else {
                        error("empty element between two '!'", at: column, fix: "remove the extra '!' or put an element between them")
                    }
                } else {
                    elements.append(current)
                }
                current = []
                previousBang = column
            }
        }
        if current.isEmpty, let previousBang, previousBang != reportedBang {
            error("'!' with no element after it", at: previousBang, fix: "end with a node, as in \(Self.example)")
        } else if !current.isEmpty {
            elements.append(current)
        }
        return elements
    }

    /// A node (named later unless `name=` names it) and its explicit name.
    mutating func read(_ words: [Word]) -> (NodeDeclaration, String?) {
        let typeWord = words[0]
        var node = NodeDeclaration(name: "", type: typeWord.text, location: place(typeWord.column), typeLocation: place(typeWord.column))
        if typeWord.equalsIndex != nil {
            error("element starts with '\(typeWord.text)' instead of a node type", at: typeWord.column,
                  fix: "begin each element with its node type, as in `tone frequency=440`")
        }
        var explicitName: String?
        var nameColumn: Int?
        for word in words.dropFirst() {
            guard let equals = word.equalsIndex else {
                error("expected key=value after node type '\(typeWord.text)', found '\(word.text)'", at: word.column,
                      fix: "write parameters as `key=value` (e.g. `frequency=440`) and separate elements with '!'")
                continue
            }
            let key = String(word.characters[..<equals].map(\.character))
            let value = String(word.characters[(equals + 1)...].map(\.character))
            let equalsColumn = word.characters[equals].column
            let quoted = word.quoteOpenings.contains { $0 > equals }
            if key.isEmpty {
                error("missing parameter name before '='", at: equalsColumn, fix: "write `key=value`, e.g. `frequency=440`")
                continue
            }
            if value.isEmpty && !quoted {
                error("parameter '\(key)' has no value after '='", at: equalsColumn,
                      fix: "write `\(key)=<value>`, or `\(key)=\"\"` for empty text")
                continue
            }
            if key == "name" {
                if let nameColumn {
                    error("node '\(explicitName ?? value)' is named twice (first at column \(nameColumn))", at: word.column,
                          fix: "keep one `name=`")
                    continue
                }
                if !Names.isIdentifier(value) {
                    error("invalid node name '\(value)'", at: equalsColumn + 1, fix: Names.nodeNameFix)
                }
                explicitName = value
                nameColumn = word.column
                node.name = value
                node.location = place(equalsColumn + 1)
                continue
            }
            node.parameters.append(ParameterDeclaration(
                name: key, value: .scalar(value, quoted: quoted),
                location: place(word.column), valueLocation: place(equalsColumn + 1)))
        }
        return (node, explicitName)
    }
}
