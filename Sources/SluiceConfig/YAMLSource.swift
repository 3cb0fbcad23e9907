import SluiceGraph
import Yams

/// A graph file's text as lines of Unicode scalars, the unit libyaml (and so Yams' `Mark`)
/// counts columns in. It lets the reader point inside a scalar (a link chain's second node)
/// and rename duplicate keys in place, which Yams cannot be told to allow.
struct YAMLSource {
    /// The lines without their "\n" (a "\r" before it stays, so joining restores the text).
    private(set) var lines: [[Unicode.Scalar]]

    init(_ text: String) {
        var lines: [[Unicode.Scalar]] = [[]]
        for scalar in text.unicodeScalars {
            if scalar == "\n" { lines.append([]) } else { lines[lines.count - 1].append(scalar) }
        }
        self.lines = lines
    }

    var text: String {
        var result = String.UnicodeScalarView()
        for (index, line) in lines.enumerated() {
            if index > 0 { result.append("\n") }
            result.append(contentsOf: line)
        }
        return String(result)
    }

    /// Whether `content` is written verbatim at 1-based `line`/`column` (so columns inside it
    /// are the column of its first scalar plus an offset).
    func holds(_ content: [Unicode.Scalar], line: Int, column: Int) -> Bool {
        guard line >= 1, line <= lines.count, column >= 1 else { return false }
        let row = lines[line - 1]
        let start = column - 1
        guard start + content.count <= row.count else { return false }
        return Array(row[start ..< start + content.count]) == content
    }

    /// Where a scalar's content starts, when its text is written on one line as it reads
    /// (plain, or quoted without escapes); nil when offsets inside it cannot be trusted.
    func contentColumn(of scalar: Yams.Node.Scalar) -> (line: Int, column: Int)? {
        guard let mark = scalar.mark else { return nil }
        let column: Int
        switch scalar.style {
        case .plain, .any: column = mark.column
        case .singleQuoted, .doubleQuoted: column = mark.column + 1
        case .literal, .folded: return nil
        }
        let content = Array(scalar.string.unicodeScalars)
        return holds(content, line: mark.line, column: column) ? (mark.line, column) : nil
    }

    mutating func replace(line: Int, column: Int, count: Int, with replacement: [Unicode.Scalar]) {
        let start = column - 1
        lines[line - 1].replaceSubrange(start ..< start + count, with: replacement)
    }

    /// 1-based line and column (in scalars, as marks count) of a character offset into the
    /// whole text: libyaml's reader errors come as such an offset, not as a mark.
    func position(ofCharacterOffset offset: Int) -> (line: Int, column: Int) {
        var line = 1, column = 1
        for character in text.prefix(max(0, offset)) {
            if character == "\n" || character == "\r\n" {
                line += 1
                column = 1
            } else {
                column += character.unicodeScalars.count
            }
        }
        return (line, column)
    }
}

/// Composes a YAML document, keeping duplicate mapping keys. Yams refuses a mapping whose
/// keys repeat, but a graph file's duplicate node names and parameters are the compiler's to
/// report (with both places), so each repeat Yams finds is renamed in the text to a
/// same-length stand-in of private-use characters (columns stay exact) and the text is
/// composed again. `originalKeys` maps each stand-in back to the key as written.
struct DuplicateTolerantComposer {
    private(set) var source: YAMLSource
    private(set) var originalKeys: [String: String] = [:]
    private var counter = 0

    init(_ text: String) {
        source = YAMLSource(text)
    }

    enum Failure: Error {
        /// A YAML error other than duplicate keys.
        case yaml(any Error)
        /// A duplicate key that could not be found in the text to rename.
        case duplicate(key: String, mark: Yams.Mark)
    }

    mutating func compose() -> Result<Yams.Node?, Failure> {
        // Each pass renames one repeat to a key found nowhere else, so every pass leaves one
        // repeat fewer and the loop ends.
        while true {
            do {
                return .success(try Yams.compose(yaml: source.text))
            } catch YamlError.duplicatedKeysInMapping(let duplicates, let context) {
                // Yams names the duplicated keys sorted, and gives the place of the first
                // one's first occurrence.
                guard let key = duplicates.first, rename(key, at: context.mark) else {
                    return .failure(.duplicate(key: duplicates.first ?? "", mark: context.mark))
                }
            } catch {
                return .failure(.yaml(error))
            }
        }
    }

    private mutating func rename(_ key: String, at mark: Yams.Mark) -> Bool {
        let content = Array(key.unicodeScalars)
        guard !content.isEmpty, mark.line >= 1, mark.line <= source.lines.count,
              mark.column >= 1, mark.column <= source.lines[mark.line - 1].count else { return false }
        let first = source.lines[mark.line - 1][mark.column - 1]
        // A plain key cannot start with a quote, so a quote here opens a quoted key.
        let column = first == "\"" || first == "'" ? mark.column + 1 : mark.column
        guard source.holds(content, line: mark.line, column: column),
              let standIn = nextStandIn(length: content.count) else { return false }
        source.replace(line: mark.line, column: column, count: content.count, with: standIn)
        originalKeys[String(String.UnicodeScalarView(standIn))] = key
        return true
    }

    /// A string of `length` characters from U+E000…U+F8FF (which libyaml accepts in plain
    /// scalars) that appears nowhere in the text.
    private mutating func nextStandIn(length: Int) -> [Unicode.Scalar]? {
        let base = 0xF900 - 0xE000
        let text = source.text
        while true {
            var value = counter
            counter += 1
            var scalars: [Unicode.Scalar] = []
            for _ in 0 ..< length {
                scalars.append(Unicode.Scalar(UInt32(0xE000 + value % base))!)
                value /= base
            }
            guard value == 0 else { return nil }  // no stand-in of this length is left
            let candidate = String(String.UnicodeScalarView(scalars))
            if originalKeys[candidate] == nil && !text.contains(candidate) { return scalars }
        }
    }
}
