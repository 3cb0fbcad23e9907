import SluiceGraph
import Yams

/// A graph file's text as lines of Unicode scalars, the unit libyaml (and so Yams' `Mark`)
/// counts columns in. It lets the reader point inside a scalar (a link chain's second node)
/// and rename duplicate keys in place, which Yams cannot be told to allow.
struct YAMLSource {
    /// The lines without their "\n" (a "\r" before it stays, so joining restores the text).
    private(set) var lines: [[Unicode.Scalar]]
    /// The text, kept as read and rebuilt only after an edit (joining lines per call would
    /// make every caller linear in the file, and some call it per key).
    private(set) var text: String
    /// Whether the text holds private-use characters (U+E000…U+F8FF), the stand-ins' range.
    let hasPrivateUse: Bool

    init(_ text: String) {
        var lines: [[Unicode.Scalar]] = [[]]
        var privateUse = false
        for scalar in text.unicodeScalars {
            if scalar == "\n" { lines.append([]) } else { lines[lines.count - 1].append(scalar) }
            if (0xE000...0xF8FF).contains(scalar.value) { privateUse = true }
        }
        self.lines = lines
        self.text = text
        hasPrivateUse = privateUse
    }

    /// The lines joined again, in one UTF-8 buffer.
    private static func join(_ lines: [[Unicode.Scalar]]) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(lines.reduce(lines.count) { $0 + $1.count })
        for (index, line) in lines.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: "\n")) }
            for scalar in line { UTF8.encode(scalar) { bytes.append($0) } }
        }
        return String(decoding: bytes, as: UTF8.self)
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

    /// Replaces scalars in place; `rejoin()` brings `text` up to date after a batch of edits.
    mutating func replace(line: Int, column: Int, count: Int, with replacement: [Unicode.Scalar]) {
        let start = column - 1
        lines[line - 1].replaceSubrange(start ..< start + count, with: replacement)
    }

    mutating func rejoin() {
        text = Self.join(lines)
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
/// report (with both places), so each repeat is renamed in the text to a same-length stand-in
/// of private-use characters (columns stay exact) and the text is composed again.
/// `originalKeys` maps each stand-in back to the key as written.
///
/// Linear in the file: one pass of libyaml's event parser finds every repeated scalar key of
/// every mapping, all are renamed at once, and the text is composed once more. Only a repeat
/// that pass cannot see (Yams comparing keys it does not) falls back to one rename per
/// compose, and that fallback is bounded.
struct DuplicateTolerantComposer {
    private(set) var source: YAMLSource
    private(set) var originalKeys: [String: String] = [:]
    private var counter = 0

    /// Composes after a bulk rename that leave repeats are retried one at a time, at most
    /// this often (each is a whole parse).
    static let fallbackRenames = 64

    init(_ text: String) {
        source = YAMLSource(text)
    }

    enum Failure: Error {
        /// A YAML error other than duplicate keys.
        case yaml(any Error)
        /// A duplicate key that could not be found in the text to rename.
        case duplicate(key: String, mark: Yams.Mark)
        /// Collections nested deeper than `GraphLimits.nesting`, first at this place.
        case tooDeep(line: Int, column: Int)
    }

    mutating func compose() -> Result<Yams.Node?, Failure> {
        let scan = YAMLEventScan(source.text, maximumDepth: GraphLimits.nesting)
        if let place = scan.tooDeep { return .failure(.tooDeep(line: place.line, column: place.column)) }
        var renamed = 0
        for key in scan.repeats where rename(key.name, line: key.line, column: key.column) { renamed += 1 }
        if renamed > 0 { source.rejoin() }
        var fallbacks = 0
        while true {
            do {
                return .success(try Yams.compose(yaml: source.text))
            } catch YamlError.duplicatedKeysInMapping(let duplicates, let context) {
                // Yams names the duplicated keys sorted, and gives the place of the first
                // one's first occurrence; each pass renames one, so the loop ends.
                fallbacks += 1
                guard fallbacks <= Self.fallbackRenames, let key = duplicates.first, rename(key, line: context.mark.line, column: context.mark.column) else {
                    return .failure(.duplicate(key: duplicates.first ?? "", mark: context.mark))
                }
                source.rejoin()
            } catch {
                return .failure(.yaml(error))
            }
        }
    }

    private mutating func rename(_ key: String, line: Int, column start: Int) -> Bool {
        let content = Array(key.unicodeScalars)
        guard !content.isEmpty, line >= 1, line <= source.lines.count,
              start >= 1, start <= source.lines[line - 1].count else { return false }
        let first = source.lines[line - 1][start - 1]
        // A plain key cannot start with a quote, so a quote here opens a quoted key.
        let column = first == "\"" || first == "'" ? start + 1 : start
        guard source.holds(content, line: line, column: column),
              let standIn = nextStandIn(length: content.count) else { return false }
        source.replace(line: line, column: column, count: content.count, with: standIn)
        originalKeys[String(String.UnicodeScalarView(standIn))] = key
        return true
    }

    /// A string of `length` characters from U+E000…U+F8FF (which libyaml accepts in plain
    /// scalars) that no key of the text can equal. A text without private-use characters
    /// cannot hold one, so only such (rare) texts are searched.
    private mutating func nextStandIn(length: Int) -> [Unicode.Scalar]? {
        let base = 0xF900 - 0xE000
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
            if originalKeys[candidate] == nil && !(source.hasPrivateUse && source.text.contains(candidate)) { return scalars }
        }
    }
}
