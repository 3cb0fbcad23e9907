import SluiceAudio
import SluiceGraph

/// Follows the sink's drain events to learn which utterances played: where each started and
/// ended (in frames played), which part of the text each speaks (its `textSpan` markers) and,
/// from providers with word timing, which of its words began (its `word` markers).
struct HeardTextTracker {
    private struct Entry {
        var span: Range<Int>?
        var startFrame: Int?
        var endFrame: Int?
        /// Byte ranges in the whole text, like `span`.
        var words = HeardWords()
        /// Each word begun: its range and the frame it began at.
        var wordStarts: [(range: Range<Int>, frame: Int)] = []
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
        case .word(let span):
            let range = Int(span.start)..<Int(span.end)
            entries[span.utterance.rawValue, default: Entry()].words.begin(range)
            entries[span.utterance.rawValue, default: Entry()].wordStarts.append((range, event.streamFrame))
        case .discontinuity, .endOfStream:
            break
        }
    }

    /// What was heard of `feeder`'s text, and each utterance's timing at `rate`. With
    /// `wordTiming`, the interrupted utterance's words heard to their end count as heard and
    /// the word playing is named; without, what was heard ends with the last whole utterance.
    func heard(_ feeder: TextFeeder, rate: Int, wordTiming: Bool = false) -> (HeardText, [PlayedUtterance]) {
        var played: [PlayedUtterance] = []
        var heardEnd = 0
        var completed = 0
        var interrupted: Range<Int>?
        var interruptedWords: HeardWords?
        for id in entries.keys.sorted() {
            let entry = entries[id]!
            guard let start = entry.startFrame, let span = entry.span else { continue }
            played.append(PlayedUtterance(
                text: feeder.text(utf8: span), textRange: span, start: Double(start) / Double(rate),
                end: entry.endFrame.map { Double($0) / Double(rate) },
                words: entry.wordStarts.map {
                    PlayedWord(text: feeder.text(utf8: $0.range), textRange: $0.range, start: Double($0.frame) / Double(rate))
                }))
            if entry.endFrame != nil {
                heardEnd = max(heardEnd, span.upperBound)
                completed += 1
            } else if interrupted == nil {
                interrupted = span
                interruptedWords = entry.words
            }
        }
        var interruptedWord: String?
        if wordTiming, let words = interruptedWords, let playing = words.playing {
            heardEnd = max(heardEnd, words.completedEnd)
            interruptedWord = feeder.text(utf8: playing)
        }
        let remainder = feeder.text(utf8: heardEnd..<feeder.utf8.count)
        let heard = HeardText(
            heard: feeder.text(utf8: 0..<heardEnd),
            interrupted: interrupted.map { feeder.text(utf8: $0) },
            interruptedWord: interruptedWord,
            granularity: wordTiming ? .word : .utterance,
            remainder: String(remainder.drop(while: \.isWhitespace)),
            completedUtterances: completed)
        return (heard, played)
    }
}
