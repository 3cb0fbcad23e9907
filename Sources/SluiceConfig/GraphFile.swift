import Foundation
import SluiceGraph
import Yams

/// Graph files: YAML naming the nodes, the links between them and how playback starts.
///
/// ```yaml
/// name: speak
/// nodes:
///   voice: { type: tone, frequency: 440, duration: 2 }
///   out:   { type: wav.sink, path: out.wav }
/// links:
///   - voice -> out
/// playback: { strategy: auto, watermark: 0.5, max-buffered: 3.0, block: 256 }
/// ```
///
/// Reading checks the file's structure and syntax and records where every name and value
/// is; `GraphCompiler` then checks node types, parameters and links against those places,
/// so both report errors as `file:line:column`.
public enum GraphFile {
    /// Reads a graph from YAML text.
    ///
    /// - Parameters:
    ///   - file: The path to name in messages.
    ///   - baseDirectory: Where relative paths in the graph resolve from.
    /// - Throws: every problem found, in file order.
    public static func parse(_ text: String, file: String, baseDirectory: String? = nil) throws(GraphDiagnostics) -> GraphDescription {
        try read(text, file: file, baseDirectory: baseDirectory).graph()
    }

    /// Reads a graph from YAML text, keeping what was read beside the problems found: with
    /// only skipped keys among them (`GraphFileReading.onlySkippedKeys`), the description is
    /// the file's as written, and checking it finds the file's other errors.
    public static func read(_ text: String, file: String, baseDirectory: String? = nil) -> GraphFileReading {
        func failed(_ diagnostic: GraphDiagnostic) -> GraphFileReading {
            GraphFileReading(
                partial: GraphDescription(name: defaultName(for: file), file: file, baseDirectory: baseDirectory),
                diagnostics: [diagnostic], onlySkippedKeys: false)
        }
        var composer = DuplicateTolerantComposer(text)
        let root: Yams.Node?
        switch composer.compose() {
        case .success(let node):
            root = node
        case .failure(.yaml(let error)):
            return failed(yamlDiagnostic(error, file: file, source: composer.source))
        case .failure(.duplicate(let key, let mark)):
            // Only when the key could not be found in the text (a key that is not a scalar).
            let place = mark.line >= 1 ? SourceLocation(file: file, line: mark.line, column: mark.column) : nil
            return failed(GraphDiagnostic("duplicate key '\(key)'", at: place, fix: "keep one of them"))
        case .failure(.tooDeep(let line, let column)):
            return failed(GraphDiagnostic(
                "lists and mappings nest more than \(GraphLimits.nesting) deep (the limit of a graph file)",
                at: SourceLocation(file: file, line: line, column: column), fix: "a graph file needs 4 levels: nodes, a node, its parameters, a list"))
        }
        var reader = YAMLGraphReader(file: file, source: composer.source, originalKeys: composer.originalKeys)
        let description = reader.read(root, defaultName: defaultName(for: file), baseDirectory: baseDirectory)
        return GraphFileReading(
            partial: description, diagnostics: reader.diagnostics.sortedInFileOrder(), onlySkippedKeys: reader.onlySkippedKeys)
    }

    /// Reads the graph file at `path`; relative paths in it resolve from its folder.
    ///
    /// - Throws: every problem found, in file order, or one without a place when the file
    ///   cannot be read.
    public static func load(path: String) throws(GraphDiagnostics) -> GraphDescription {
        try read(path: path).graph()
    }

    /// `read(_:file:baseDirectory:)` for the graph file at `path`; relative paths in it
    /// resolve from its folder.
    public static func read(path: String) -> GraphFileReading {
        do throws(GraphDiagnostics) {
            return try readFile(path: path)
        } catch {
            return GraphFileReading(partial: GraphDescription(name: defaultName(for: path), file: path), diagnostics: error.diagnostics, onlySkippedKeys: false)
        }
    }

    private static func readFile(path: String) throws(GraphDiagnostics) -> GraphFileReading {
        let url = URL(fileURLWithPath: path)
        func unreadable(_ reason: String) -> GraphDiagnostics {
            GraphDiagnostics([GraphDiagnostic("cannot read graph file '\(path)': \(reason)", at: nil)])
        }
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else { throw unreadable("no such file") }
        guard !isFolder.boolValue else { throw unreadable("it is a folder") }
        guard FileManager.default.isReadableFile(atPath: path) else { throw unreadable("permission denied") }
        // Only a regular file, and only up to the limit: a FIFO or a device would block or
        // never end.
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        guard attributes?[.type] as? FileAttributeType == .typeRegular else { throw unreadable("it is not a regular file") }
        let size = (attributes?[.size] as? NSNumber)?.intValue ?? 0
        guard size <= GraphLimits.fileBytes else {
            throw unreadable("it is \(size) bytes; a graph file may be at most \(GraphLimits.fileBytes / (1 << 20)) MiB")
        }
        let data: Data
        do {
            let handle = try FileHandle(forReadingFrom: url)
            defer { try? handle.close() }
            data = try handle.read(upToCount: GraphLimits.fileBytes + 1) ?? Data()
        } catch {
            throw unreadable(error.localizedDescription)
        }
        guard data.count <= GraphLimits.fileBytes else {
            throw unreadable("it grew past \(GraphLimits.fileBytes / (1 << 20)) MiB while being read")
        }
        guard let text = String(data: data, encoding: .utf8) else { throw unreadable("it is not UTF-8 text") }
        return read(text, file: path, baseDirectory: url.deletingLastPathComponent().path)
    }

    /// The file name without its extension: `graphs/speak.yaml` is `speak`.
    static func defaultName(for file: String) -> String {
        let base = file.split(separator: "/").last.map(String.init) ?? file
        guard let dot = base.lastIndex(of: "."), dot != base.startIndex else { return base.isEmpty ? "graph" : base }
        return String(base[..<dot])
    }

    /// A Yams syntax error as one diagnostic at the place libyaml reports.
    static func yamlDiagnostic(_ error: any Error, file: String, source: YAMLSource) -> GraphDiagnostic {
        func at(_ mark: Yams.Mark) -> SourceLocation {
            // At the end of a text without a final newline libyaml counts one line more: the
            // place is then the end of the last line, inside the file an editor shows.
            let lines = source.lines
            if mark.line > lines.count, let last = lines.last {
                return SourceLocation(file: file, line: lines.count, column: last.count + 1)
            }
            return SourceLocation(file: file, line: mark.line, column: mark.column)
        }
        guard let error = error as? YamlError else {
            return GraphDiagnostic("invalid YAML: \(error)", at: nil)
        }
        switch error {
        case .scanner(let context, let problem, let mark, _),
             .parser(let context, let problem, let mark, _),
             .composer(let context, let problem, let mark, _):
            // libyaml's context is either what it was doing ("while parsing a flow mapping",
            // placed where that began) or the first half of the sentence ("expected a single
            // document in the stream" + "but found another document").
            let message = switch context {
            case .some(let context) where context.text.hasPrefix("while "):
                "\(problem) (\(context.text) at line \(context.mark.line), column \(context.mark.column))"
            case .some(let context): "\(context.text), \(problem)"
            case .none: problem
            }
            return GraphDiagnostic("invalid YAML: \(message)", at: at(mark),
                                   fix: syntaxFix(problem: problem, context: context?.text, at: mark, source: source))
        case .reader(let problem, let offset, _, _):
            let place = offset.map { source.position(ofCharacterOffset: $0) }
            return GraphDiagnostic("invalid YAML: \(problem)",
                                   at: place.map { SourceLocation(file: file, line: $0.line, column: $0.column) },
                                   fix: "remove the control character or save the file as UTF-8 text")
        default:
            return GraphDiagnostic("invalid YAML: \(error)", at: nil)
        }
    }

    /// What usually fixes libyaml's commonest complaints.
    static func syntaxFix(problem: String, context: String?, at mark: Yams.Mark, source: YAMLSource) -> String {
        if problem.contains("cannot start any token"), source.holds(["\t"], line: mark.line, column: mark.column) {
            return "indent with spaces: YAML does not allow tabs"
        }
        if problem.contains("mapping values are not allowed") {
            return "put each `key: value` on its own line at its parent's indent, and quote values containing ': '"
        }
        if problem.contains("expected ',' or '}'") { return "close the `{` with `}` and separate its entries with ','" }
        if problem.contains("expected ',' or ']'") { return "close the `[` with `]` and separate its items with ','" }
        if context?.contains("quoted scalar") == true { return "close the quote" }
        if context?.contains("single document") == true { return "a graph file holds one document: remove the `---` line" }
        return "check the indentation, brackets and quotes here"
    }
}

/// A graph file as read: the description and every problem the reader found, in file order.
public struct GraphFileReading: Sendable {
    /// What was read; the whole file as written when `diagnostics` is empty or
    /// `onlySkippedKeys`, else only a part.
    public var partial: GraphDescription
    public var diagnostics: [GraphDiagnostic]
    /// Whether every problem is a key the reader skipped (an unknown top-level key or playback
    /// setting): the rest was read as written, so a checker may go on and report the file's
    /// other errors beside these (`combined(with:)`).
    public var onlySkippedKeys: Bool

    public init(partial: GraphDescription, diagnostics: [GraphDiagnostic], onlySkippedKeys: Bool) {
        self.partial = partial
        self.diagnostics = diagnostics
        self.onlySkippedKeys = onlySkippedKeys
    }

    /// The description, or every problem.
    public func graph() throws(GraphDiagnostics) -> GraphDescription {
        guard diagnostics.isEmpty else { throw GraphDiagnostics(diagnostics) }
        return partial
    }

    /// These problems and a checker's (`GraphCompiler`'s) together, in file order.
    public func combined(with others: GraphDiagnostics) -> GraphDiagnostics {
        GraphDiagnostics((diagnostics + others.diagnostics).sortedInFileOrder())
    }
}
