import ArgumentParser
import Foundation
import SluiceGraph

/// `--text`, `--text-file` and `-`: the text a graph's text-driven sources speak.
struct TextOptions: ParsableArguments {
    @Option(name: .long, help: "Text for the graph's text-driven sources.")
    var text: String?

    @Option(name: .customLong("text-file"), help: "Read the text from this file (`-`: standard input).", completion: .file())
    var textFile: String?

    @Argument(help: "`-` reads the text from standard input.")
    var standardInput: String?

    func validate() throws {
        if let standardInput, standardInput != "-" {
            throw ValidationError("unexpected argument '\(standardInput)'; only `-` (standard input) may follow the graph")
        }
        let given = [text != nil, textFile != nil, standardInput != nil].filter { $0 }.count
        if given > 1 { throw ValidationError("give the text once: --text, --text-file or -") }
    }

    /// The text, or nil when none was given.
    func read() throws -> String? {
        if let text { return text }
        let path = textFile ?? standardInput
        guard let path else { return nil }
        if path == "-" {
            return String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
        }
        do {
            return try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw ValidationError("cannot read text file '\(path)': \(error.localizedDescription)")
        }
    }

    /// Gives the text to the graph's text-driven sources, one line per piece, then ends it,
    /// and returns it (the sources' text spans are UTF-8 offsets into it). A graph with such
    /// sources needs text; text for a graph without them is an error.
    @discardableResult
    func feed(_ graph: CompiledGraph) throws -> String? {
        let sources = graph.textSources
        let text = try read()
        guard !sources.isEmpty else {
            if text != nil {
                printError("error: graph '\(graph.description.name)' has no text-driven source to speak the text (morse, or a speech provider)")
                throw ExitCode(1)
            }
            return nil
        }
        guard let text else {
            let names = graph.nodes.filter { $0.instance is any TextDrivenSource }.map { "'\($0.name)'" }
            printError("error: \(names.joined(separator: ", ")) speaks text: give --text, --text-file or -")
            throw ExitCode(1)
        }
        for source in sources {
            for line in text.split(whereSeparator: \.isNewline) where !line.allSatisfy(\.isWhitespace) {
                source.receive(text: String(line), at: text.utf8.distance(from: text.startIndex, to: line.startIndex))
            }
            source.finishText()
        }
        return text
    }
}

/// `--stats json`.
enum StatsFormat: String, ExpressibleByArgument {
    case json
}

enum StatsOutput {
    /// One JSON object: the report's fields, plus `extra` (a live run's JACK figures).
    static func print(_ report: RunReport, extra: [String: Any] = [:]) throws {
        var object = try JSONSerialization.jsonObject(with: JSONEncoder().encode(report)) as? [String: Any] ?? [:]
        object.merge(extra) { _, new in new }
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        Swift.print(String(decoding: data, as: UTF8.self))
    }
}
