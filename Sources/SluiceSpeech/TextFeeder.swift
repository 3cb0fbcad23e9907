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
    /// The whole text so far as UTF-8 (heard text is cut from it): about one byte a byte, so a
    /// long session or a hostile 10 MB on standard input costs little more than the text.
    private(set) var utf8: [UInt8] = []
    /// Characters the chunker has counted so far.
    private var characterCount = 0
    /// Where character and UTF-8 offsets part: for each character longer than one UTF-8 byte,
    /// the index of the character after it and the extra bytes up to there. ASCII text stores
    /// nothing here.
    private var wideCharacters: [(after: Int, extraBytes: Int)] = []
    /// The characters from `keptFrom` on, which an incremental source may still be handed;
    /// those before are dropped as they are handed over.
    private var kept: [Character] = []
    private var keptFrom = 0
    /// Incremental sources: characters handed over so far, and whether an utterance is open.
    private var pushed = 0
    private var open = false

    init(source: any TextDrivenSource, chunker: SentenceChunker) {
        self.source = source
        self.chunker = chunker
        if let incremental = source as? any IncrementalTextSource, incremental.acceptsIncrementalText {
            self.incremental = incremental
            // A source that starts speaking before the sentence ends gains nothing from an
            // early clause, and would lose the sentence's prosody across the cut.
            self.chunker.earlyFirstClause = nil
        } else {
            incremental = nil
        }
    }

    /// Whether pieces reach the source as they arrive.
    var isIncremental: Bool { incremental != nil }

    mutating func append(_ text: String) {
        guard !text.isEmpty else { return }
        for character in text {
            let bytes = character.utf8.count
            utf8.append(contentsOf: character.utf8)
            characterCount += 1
            if bytes > 1 {
                wideCharacters.append((characterCount, (wideCharacters.last?.extraBytes ?? 0) + bytes - 1))
            }
            if incremental != nil { kept.append(character) }
        }
        hand(chunker.append(text))
        if let incremental {
            // The sentence still arriving: from its first non-space character, as it comes.
            var from = max(pushed, chunker.pendingStart)
            defer { dropHandedCharacters() }
            if !open {
                while from < characterCount, character(at: from).isWhitespace { from += 1 }
                guard from < characterCount else { return }
                incremental.beginUtterance(at: offset(of: from))
                open = true
            }
            if from < characterCount {
                incremental.push(text: characters(from..<characterCount))
            }
            pushed = characterCount
        }
    }

    private func character(at index: Int) -> Character { kept[index - keptFrom] }

    private func characters(_ range: Range<Int>) -> String {
        String(kept[(range.lowerBound - keptFrom)..<(range.upperBound - keptFrom)])
    }

    /// Forgets the characters no source can be handed again: those before both what was
    /// pushed and what the chunker still holds.
    private mutating func dropHandedCharacters() {
        let needed = min(pushed, chunker.pendingStart)
        guard needed - keptFrom > 4_096 else { return }  // in batches, not per piece
        kept.removeFirst(needed - keptFrom)
        keptFrom = needed
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
                incremental.push(text: characters(from..<utterance.range.upperBound))
            }
            incremental.endUtterance()
            open = false
            pushed = max(pushed, utterance.range.upperBound)
        }
    }

    /// The UTF-8 offset where character `index` of the whole text starts: the index plus the
    /// extra bytes of the wide characters before it (a binary search; nothing for ASCII).
    func offset(of index: Int) -> Int {
        var low = 0, high = wideCharacters.count
        while low < high {
            let middle = (low + high) / 2
            if wideCharacters[middle].after <= index { low = middle + 1 } else { high = middle }
        }
        return index + (low == 0 ? 0 : wideCharacters[low - 1].extraBytes)
    }

    /// The whole text's UTF-8 bytes `range`, as a string.
    func text(utf8 range: Range<Int>) -> String {
        let lower = max(0, min(range.lowerBound, utf8.count))
        let upper = max(lower, min(range.upperBound, utf8.count))
        return String(decoding: utf8[lower..<upper], as: UTF8.self)
    }
}
