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
    /// Where each started utterance's text begins in the source's text (its `textSpan`), and
    /// the words of it heard to begin (from providers with word timing).
    private var spanStarts: [Int: Int] = [:]
    private var words: [Int: HeardWords] = [:]
    /// The first utterance a barge-in has not yet accounted for.
    private var pendingFrom = 0
    /// Cuts a reply streamed in pieces into sentences.
    private var chunker: SentenceChunker
    /// The language of the texts (where their sentences end): the speaking voice's. Setting
    /// it drops an unfinished sentence, as a cut does: set it when the voice changes.
    public var language: String? {
        didSet { if language != oldValue { chunker = SentenceChunker(language: language) } }
    }

    /// Utterances kept for heard text at most; older ones are forgotten once heard.
    static let kept = 4_096

    public init(language: String? = nil) {
        self.language = language
        chunker = SentenceChunker(language: language)
    }

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
        case .textSpan(let span):
            let id = Int(span.utterance.rawValue)
            if spanStarts[id] == nil { spanStarts[id] = Int(span.start) }
            return nil
        case .word(let span):
            let id = Int(span.utterance.rawValue)
            guard let start = spanStarts[id], let text = texts[id] else { return nil }
            let range = Int(span.start) - start..<Int(span.end) - start
            words[id, default: HeardWords()].begin(range)
            return HeardWords.slice(text, range)
        case .discontinuity, .endOfStream:
            return nil
        }
    }

    /// Whether the listener has heard utterance `id` to its end.
    public func hasHeard(_ id: Int) -> Bool { ended.contains(id) }

    /// Whether the listener has heard utterance `id` begin.
    public func hasHeardBegin(_ id: Int) -> Bool { started.contains(id) }

    /// What a barge-in cut: what was heard since the last one, to the word where the provider
    /// reports word timing, else to the utterance.
    public struct Cut: Sendable, Hashable {
        /// Utterances heard to their end.
        public var heard: [String]
        /// The one cut off, if one was playing.
        public var partial: String?
        /// Of `partial`, the words heard to their end (up to the word that was playing), when
        /// the provider reports word timing; "" when it was cut during its first word.
        public var partialHeard: String?
        /// The word that was playing when it was cut, when the provider reports word timing.
        public var partialWord: String?
        /// Utterances dropped before they began.
        public var unheard: Int

        public init(heard: [String], partial: String? = nil, partialHeard: String? = nil, partialWord: String? = nil, unheard: Int) {
            self.heard = heard
            self.partial = partial
            self.partialHeard = partialHeard
            self.partialWord = partialWord
            self.unheard = unheard
        }

        /// `word` when the cut knows the partial utterance's words, else `utterance`.
        public var granularity: String { partialWord != nil ? "word" : "utterance" }
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
                if let heardWords = words[id] {
                    cut.partialHeard = heardWords.heard(of: text)
                    cut.partialWord = heardWords.playing(of: text)
                }
            } else {
                cut.unheard += 1
            }
        }
        count = max(count, Int(next.rawValue))
        pendingFrom = count
        chunker = SentenceChunker(language: language)  // an unfinished sentence is dropped too
        return cut
    }

    private mutating func forgetHeard() {
        guard texts.count > Self.kept else { return }
        let oldest = count - Self.kept
        texts = texts.filter { $0.key >= oldest }
        started = started.filter { $0 >= oldest }
        ended = ended.filter { $0 >= oldest }
        spanStarts = spanStarts.filter { $0.key >= oldest }
        words = words.filter { $0.key >= oldest }
        pendingFrom = max(pendingFrom, oldest)
    }
}


/// The words of one utterance heard to begin: the one playing (the latest begun) and where the
/// ones before it end. A word is heard once the next one begins; the one playing when speech
/// stops is the partial word.
struct HeardWords: Sendable, Hashable {
    /// UTF-8 byte ranges in the utterance's text.
    private(set) var playing: Range<Int>?
    private(set) var completedEnd = 0

    mutating func begin(_ word: Range<Int>) {
        if let playing { completedEnd = max(completedEnd, playing.upperBound) }
        playing = word
    }

    /// The words heard to their end: the text up to the end of the last one.
    func heard(of text: String) -> String { Self.slice(text, 0..<completedEnd) }

    /// The word playing when speech stopped.
    func playing(of text: String) -> String? { playing.map { Self.slice(text, $0) } }

    /// The bytes `range` of `text`, clamped to it.
    static func slice(_ text: String, _ range: Range<Int>) -> String {
        let utf8 = Array(text.utf8)
        let lower = min(max(range.lowerBound, 0), utf8.count)
        let upper = min(max(range.upperBound, lower), utf8.count)
        return String(decoding: utf8[lower..<upper], as: UTF8.self)
    }
}
