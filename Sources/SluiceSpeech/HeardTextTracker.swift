import SluiceAudio
import SluiceGraph

/// Follows the sink's drain events to learn which utterances played: where each started and
/// ended (in frames played) and which part of the text each speaks (its `textSpan` markers).
struct HeardTextTracker {
    private struct Entry {
        var span: Range<Int>?
        var startFrame: Int?
        var endFrame: Int?
    }

    private var entries: [UInt32: Entry] = [:]

    mutating func record(_ event: DrainEvent) {
        guard event.kind == .marker, let marker = event.marker else { return }
        switch marker.event {
        case .utteranceStart(let id):
            entries[id.rawValue, default: Entry()].startFrame = event.streamFrame
        case .utteranceEnd(let id):
            entries[id.rawValue, default: Entry()].endFrame = event.streamFrame
        case .textSpan(let span):
            // The latest span wins: an utterance still taking text when it began to play
            // announces its final span at its end.
            entries[span.utterance.rawValue, default: Entry()].span = Int(span.start)..<Int(span.end)
        case .discontinuity, .endOfStream, .word:
            break
        }
    }

    /// What was heard of `feeder`'s text, and each utterance's timing at `rate`.
    func heard(_ feeder: TextFeeder, rate: Int) -> (HeardText, [PlayedUtterance]) {
        var played: [PlayedUtterance] = []
        var heardEnd = 0
        var completed = 0
        var interrupted: Range<Int>?
        for id in entries.keys.sorted() {
            let entry = entries[id]!
            guard let start = entry.startFrame, let span = entry.span else { continue }
            played.append(PlayedUtterance(
                text: feeder.text(utf8: span), textRange: span, start: Double(start) / Double(rate),
                end: entry.endFrame.map { Double($0) / Double(rate) }))
            if entry.endFrame != nil {
                heardEnd = max(heardEnd, span.upperBound)
                completed += 1
            } else if interrupted == nil {
                interrupted = span
            }
        }
        let remainder = feeder.text(utf8: heardEnd..<feeder.utf8.count)
        let heard = HeardText(
            heard: feeder.text(utf8: 0..<heardEnd),
            interrupted: interrupted.map { feeder.text(utf8: $0) },
            remainder: String(remainder.drop(while: \.isWhitespace)),
            completedUtterances: completed)
        return (heard, played)
    }
}
