import SluiceGraph

/// Hands streamed text to a text-driven source. A source that speaks an utterance before its
/// text is complete (`IncrementalTextSource.acceptsIncrementalText`) gets each piece as it
/// arrives; any other gets whole utterances (sentences, clause-sized pieces of long ones) as
/// soon as the chunker completes each. Either way the chunker decides where utterances
/// begin and end, so the markers (and the crossfader and fader acting on them) fall on the
/// same boundaries, and each utterance carries its UTF-8 offset in the whole text.
///
/// Not thread-safe: the controller calls it under its lock.
struct TextFeeder {
    let source: any TextDrivenSource
    private let incremental: (any IncrementalTextSource)?
    private var chunker: SentenceChunker
    /// The whole text so far, as the chunker counts it: one entry per `Character` of each
    /// piece, with the UTF-8 offset where each ends.
    private var characters: [Character] = []
    private var utf8Ends: [Int] = []
    private(set) var utf8: [UInt8] = []
    /// Incremental sources: characters handed over so far, and whether an utterance is open.
    private var pushed = 0
    private var open = false

    init(source: any TextDrivenSource, chunker: SentenceChunker) {
        self.source = source
        self.chunker = chunker
        if let incremental = source as? any IncrementalTextSource, incremental.acceptsIncrementalText {
            self.incremental = incremental
        } else {
            incremental = nil
        }
    }

    /// Whether pieces reach the source as they arrive.
    var isIncremental: Bool { incremental != nil }

    mutating func append(_ text: String) {
        guard !text.isEmpty else { return }
        for character in text {
            characters.append(character)
            utf8.append(contentsOf: character.utf8)
            utf8Ends.append(utf8.count)
        }
        hand(chunker.append(text))
        if let incremental {
            // The sentence still arriving: from its first non-space character, as it comes.
            var from = max(pushed, chunker.pendingStart)
            if !open {
                while from < characters.count, characters[from].isWhitespace { from += 1 }
                guard from < characters.count else { return }
                incremental.beginUtterance(at: offset(of: from))
                open = true
            }
            if from < characters.count {
                incremental.push(text: String(characters[from..<characters.count]))
            }
            pushed = characters.count
        }
    }

    /// No more text: hands over what the chunker held and ends the source's text.
    mutating func finish() {
        hand(chunker.finish())
        if let incremental, open {
            incremental.endUtterance()
            open = false
        }
        source.finishText()
    }

    private mutating func hand(_ utterances: [SentenceChunker.Utterance]) {
        for utterance in utterances {
            guard let incremental else {
                source.receive(text: utterance.text, at: offset(of: utterance.range.lowerBound))
                continue
            }
            let from = max(pushed, utterance.range.lowerBound)
            if !open {
                incremental.beginUtterance(at: offset(of: utterance.range.lowerBound))
                open = true
            }
            if from < utterance.range.upperBound {
                incremental.push(text: String(characters[from..<utterance.range.upperBound]))
            }
            incremental.endUtterance()
            open = false
            pushed = max(pushed, utterance.range.upperBound)
        }
    }

    /// The UTF-8 offset where character `index` of the whole text starts.
    func offset(of index: Int) -> Int {
        index == 0 ? 0 : utf8Ends[index - 1]
    }

    /// The whole text's UTF-8 bytes `range`, as a string.
    func text(utf8 range: Range<Int>) -> String {
        let lower = max(0, min(range.lowerBound, utf8.count))
        let upper = max(lower, min(range.upperBound, utf8.count))
        return String(decoding: utf8[lower..<upper], as: UTF8.self)
    }
}
