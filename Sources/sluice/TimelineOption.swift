import ArgumentParser
import Foundation
import SluiceGraph
import SluiceTimeline

/// `--timeline FILE.svg` on `run`, `launch`, `render` and `speak`: the run drawn over time
/// (`TimelineDrawing`), written once the run has ended — cancelled or failed runs included,
/// which are the ones worth a look.
struct TimelineOption: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Draw the run into this SVG file: the buffer's fill against the watermark, the utterances with their text, underruns, xruns and first audio.",
            valueName: "file.svg"),
        completion: .file(extensions: ["svg"]))
    var timeline: String?

    func validate() throws {
        if let timeline, !timeline.lowercased().hasSuffix(".svg") {
            throw ValidationError("--timeline draws SVG: give a file name ending in .svg, not '\(timeline)'")
        }
    }

    var isRequested: Bool { timeline != nil }

    /// Writes the drawing of `report`'s timeline; a report without one (the run failed before
    /// it started) writes nothing. An unwritable file is an error after the run: exit 1.
    func write(_ report: RunReport, title: String, spans: [TimelineDrawing.Span]) throws {
        guard let timeline, let recorded = report.timeline else { return }
        let drawing = TimelineDrawing(timeline: recorded, title: title, spans: spans)
        do {
            try Data(drawing.svg().utf8).write(to: URL(fileURLWithPath: timeline))
        } catch {
            printError("error: cannot write the timeline '\(timeline)': \(error.localizedDescription)")
            throw ExitCode(ExitStatus.failure)
        }
    }

    /// The spans of a run's utterances, their text cut from `text` (the text the graph was fed,
    /// whose UTF-8 offsets the sources' text spans count); utterances without spans are named
    /// by their number.
    static func spans(of report: RunReport, text: String?) -> [TimelineDrawing.Span] {
        guard let utterances = report.timeline?.utterances else { return [] }
        let bytes = text.map { Array($0.utf8) } ?? []
        return utterances.map { utterance in
            var words = "utterance \(utterance.id)"
            if let range = utterance.textRange, range.lowerBound >= 0, range.upperBound <= bytes.count {
                words = String(decoding: bytes[range], as: UTF8.self)
            }
            return TimelineDrawing.Span(text: words, start: utterance.start, end: utterance.end)
        }
    }
}
