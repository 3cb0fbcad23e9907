import Foundation
import SluiceAudio
import SluiceGraph

/// What one text-driven node of a long-running graph was given, reply after reply, and what
/// of it the listener heard: the texts by utterance id (ids count from 0 in the order given, as
/// providers number them), which utterances were heard to begin and to end, and the sentence
/// of a reply streamed in pieces still waiting for its end. `SpeechSession` and `sluice
/// serve` keep one per speaking node.
public struct ReplyLedger: Sendable {
    /// Utterances given so far (the next one's id).
    public private(set) var count = 0
    private var texts: [Int: String] = [:]
    private var started: Set<Int> = []
    private var ended: Set<Int> = []
    /// The first utterance a barge-in has not yet accounted for.
    private var pendingFrom = 0
    /// Cuts a reply streamed in pieces into sentences.
    private var chunker = SentenceChunker()

    /// Utterances kept for heard text at most; older ones are forgotten once heard.
    static let kept = 4_096

    public init() {}

    /// The utterances one call made: ids `first ..< first + count`, and the characters of an
    /// unfinished sentence still waiting (`more`).
    public struct Given: Sendable, Hashable {
        public var first: Int
        public var count: Int
        public var pending: Int
        public var ids: Range<Int> { first..<(first + count) }
    }

    /// Cuts `text` into sentences, as `sluice speak` hands text over, and gives each to
    /// `source`. With `more`, the text is a piece of a reply still coming: its unfinished
    /// sentence waits for the next piece.
    public mutating func give(_ text: String, more: Bool, to source: any TextDrivenSource) -> Given {
        let first = count
        var sentences = chunker.append(text)
        if !more { sentences += chunker.finish() }
        for utterance in sentences {
            let sentence = utterance.text.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !sentence.isEmpty else { continue }
            source.receive(text: sentence)
            texts[count] = sentence
            count += 1
        }
        forgetHeard()
        return Given(first: first, count: count - first, pending: chunker.pendingText.count)
    }

    /// Notes a marker the listener reached; the text of the utterance it names, if any.
    @discardableResult
    public mutating func record(_ marker: Marker) -> String? {
        switch marker.event {
        case .utteranceStart(let id):
            started.insert(Int(id.rawValue))
            return texts[Int(id.rawValue)]
        case .utteranceEnd(let id):
            ended.insert(Int(id.rawValue))
            return texts[Int(id.rawValue)]
        default:
            return nil
        }
    }

    /// Whether the listener has heard utterance `id` to its end.
    public func hasHeard(_ id: Int) -> Bool { ended.contains(id) }

    /// Whether the listener has heard utterance `id` begin.
    public func hasHeardBegin(_ id: Int) -> Bool { started.contains(id) }

    /// What a barge-in cut, to the utterance: what was heard since the last one.
    public struct Cut: Sendable, Hashable {
        /// Utterances heard to their end.
        public var heard: [String]
        /// The one cut off, if one was playing.
        public var partial: String?
        /// Utterances dropped before they began.
        public var unheard: Int
    }

    /// Accounts for a barge-in after which the source numbers its next utterance `next`.
    public mutating func cut(resumingAt next: UtteranceID) -> Cut {
        var cut = Cut(heard: [], partial: nil, unheard: 0)
        for id in pendingFrom..<count {
            let text = texts[id] ?? ""
            if ended.contains(id) {
                cut.heard.append(text)
            } else if started.contains(id) {
                cut.partial = text
            } else {
                cut.unheard += 1
            }
        }
        count = max(count, Int(next.rawValue))
        pendingFrom = count
        chunker = SentenceChunker()  // an unfinished sentence is dropped too
        return cut
    }

    private mutating func forgetHeard() {
        guard texts.count > Self.kept else { return }
        let oldest = count - Self.kept
        texts = texts.filter { $0.key >= oldest }
        started = started.filter { $0 >= oldest }
        ended = ended.filter { $0 >= oldest }
        pendingFrom = max(pendingFrom, oldest)
    }
}
