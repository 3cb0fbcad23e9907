/// Cuts streamed text (a language model's reply, token by token) into utterances as soon as
/// each is complete: sentences, and clause-sized pieces of a sentence that runs long, so a
/// provider that synthesises whole utterances can start on the first sentence while the rest
/// is still arriving.
///
/// A sentence ends at `.`, `!` or `?` (with any closing quotes or brackets) followed by
/// whitespace, at `。`, `！` or `？`, or at a blank line. These do not end one:
/// - abbreviations (`Dr.`, `e.g.`, `etc.`, `Jan.`; German, French, Spanish, Italian, Dutch
///   and Portuguese ones too: `Nr.`, `usw.`, `bzw.`, `Mme.`, `Sra.`, `ecc.`, `bijv.`), initials
///   (`J. R. R. Tolkien`), and abbreviations spelt as spaced letters (`z. B.`, `d. h.`,
///   `u. a.`, `i. d. R.`): a lowercase letter and a dot before another letter and a dot;
/// - decimals and versions (`3.14`, `v2.0.1`) and dotted names (`U.S.A.`, `example.com`):
///   no whitespace follows their dots;
/// - ellipses (`...`, `…`), which pause a sentence rather than end it.
///
/// A `.` at the very end of the text so far cannot be judged until the next piece arrives (is
/// it `3.` of `3.5`?), so it waits; `finish()` releases whatever is left.
///
/// Each utterance carries its range in the whole text, in `Character` offsets, so what was
/// heard can be mapped back to the text (barge-in).
public struct SentenceChunker: Sendable {
    /// One complete utterance: its text, trimmed, and where it lies in the whole text.
    public struct Utterance: Sendable, Hashable {
        public var text: String
        /// Character offsets in the concatenation of everything appended.
        public var range: Range<Int>
    }

    /// A sentence longer than this many characters is cut at its last clause boundary
    /// (`,` `;` `:` `—` `–` followed by whitespace), or at a space when it has none within twice
    /// this length.
    public let maximumLength: Int
    /// A clause cut leaves at least this many characters in the piece it ends.
    public let minimumClauseLength: Int
    /// Early first clause: the first utterance of a text (until `finish()`) ends at its first
    /// clause boundary (`,` `;` `:` `—` `–` then whitespace) with at least this many
    /// characters before it, and is released without waiting for the sentence's end (the
    /// whole text at once is cut the same way); nil keeps the first sentence whole.
    /// For providers that need whole utterances, this starts speech sooner when text arrives
    /// at a language model's pace (`scripts/bench speech` measures it).
    public var earlyFirstClause: Int?

    /// Text not yet part of a complete utterance.
    private var pending: [Character] = []
    /// The whole-text offset of `pending[0]`.
    private var offset = 0
    /// Where scanning resumes: everything before it in `pending` holds no sentence end.
    private var scanned = 0
    /// An utterance was released since the text began (or since `finish()`).
    private var releasedAny = false

    /// The early first clause's default minimum, in characters: chosen from `scripts/bench
    /// speech`'s figures (docs/benchmarks.md).
    public static let defaultEarlyFirstClause = 24

    public init(maximumLength: Int = 200, minimumClauseLength: Int = 40, earlyFirstClause: Int? = defaultEarlyFirstClause) {
        precondition(maximumLength > minimumClauseLength && minimumClauseLength > 0, "clause lengths out of order")
        precondition((earlyFirstClause ?? 1) > 0, "the early first clause needs a positive minimum")
        self.maximumLength = maximumLength
        self.minimumClauseLength = minimumClauseLength
        self.earlyFirstClause = earlyFirstClause
    }

    /// The text buffered but not yet released.
    public var pendingText: String { String(pending) }

    /// Where the text not yet released starts in the whole text, in `Character` offsets (as
    /// the pieces were counted when appended).
    public var pendingStart: Int { offset }

    /// Appends the next piece of the text; returns the utterances it completed, in order.
    public mutating func append(_ text: String) -> [Utterance] {
        pending.append(contentsOf: text)
        return cut(final: false)
    }

    /// The text is complete: returns the utterances still held (the last may lack an ending).
    public mutating func finish() -> [Utterance] {
        defer { releasedAny = false }
        return cut(final: true)
    }

    // MARK: Cutting

    private mutating func cut(final: Bool) -> [Utterance] {
        var utterances: [Utterance] = []
        while true {
            // A sentence running past the maximum is cut at its clauses whether its end has
            // arrived or not, and only from what lies within it, so text arriving in pieces
            // is cut exactly as the whole text is.
            let end = sentenceEnd(final: final)
            let extent = end ?? pending.count
            // The early first clause is cut wherever the sentence's end is (known yet or
            // not), so streamed text is cut exactly as the whole text is here too.
            if !releasedAny, let minimum = earlyFirstClause, let clause = firstClauseEnd(minimum: minimum), clause < extent {
                emit(upTo: clause, into: &utterances)
                continue
            }
            if extent > maximumLength, let clause = clauseEnd(extent: extent) {
                emit(upTo: clause, into: &utterances)
                continue
            }
            guard let end else { break }
            emit(upTo: end, into: &utterances)
        }
        if final {
            emit(upTo: pending.count, into: &utterances)
        }
        return utterances
    }

    /// Releases `pending[..<end]` as an utterance (unless it is only whitespace).
    private mutating func emit(upTo end: Int, into utterances: inout [Utterance]) {
        var first = 0
        var last = end
        while first < last && pending[first].isWhitespace { first += 1 }
        while last > first && pending[last - 1].isWhitespace { last -= 1 }
        if first < last {
            utterances.append(Utterance(text: String(pending[first..<last]), range: (offset + first)..<(offset + last)))
            releasedAny = true
        }
        pending.removeFirst(end)
        offset += end
        scanned = 0
    }

    /// The index just past the first complete sentence in `pending`, or nil. Scanning stops
    /// (and resumes there next time) at a mark that needs the next character to be judged.
    private mutating func sentenceEnd(final: Bool) -> Int? {
        var index = scanned
        while index < pending.count {
            let character = pending[index]
            if character == "\n" {
                // A blank line ends a paragraph, and the sentence with it.
                guard index + 1 < pending.count else {
                    if final { return nil }
                    scanned = index
                    return nil
                }
                if pending[index + 1] == "\n" { return index + 2 }
                index += 1
                continue
            }
            let closing = Self.closingTerminators.contains(character)
            guard closing || Self.terminators.contains(character) else {
                index += 1
                continue
            }
            // The whole run of marks ("?!", "...", "…"), then closing quotes or brackets.
            var runEnd = index
            var dots = 0
            var ellipsis = false
            var exclaims = closing
            while runEnd < pending.count, Self.terminators.contains(pending[runEnd]) || Self.closingTerminators.contains(pending[runEnd]) {
                switch pending[runEnd] {
                case ".": dots += 1
                case "…": ellipsis = true
                default: exclaims = true
                }
                runEnd += 1
            }
            let end = skipClosers(from: runEnd)
            if end == pending.count {
                // What follows decides ("3." of "3.5"); at the very end the text ends here.
                if final { return end }
                scanned = index
                return nil
            }
            // 。！？ need no space after them.
            if closing { return end }
            // No space after: a decimal, a version, a dotted name ("3.14", "U.S.A", "a.com").
            guard pending[end].isWhitespace else {
                index = end
                continue
            }
            if exclaims { return end }
            // An ellipsis pauses the sentence; an abbreviation or an initial is inside it.
            if dots >= 2 || ellipsis || isAbbreviation(before: index) {
                index = end
                continue
            }
            // "z. B.": a lone lowercase letter and its dot, then another letter and a dot. The
            // letters after the space decide; until they arrive, this waits.
            if dots == 1 && isLoneLowercaseLetter(before: index) {
                // The last letter of one ("h." of "d. h.") is inside the sentence too.
                if spacedLetterPrecedes(index - 1) {
                    index = end
                    continue
                }
                switch spacedLetterFollows(from: end) {
                case true?:
                    index = end
                    continue
                case nil where !final:
                    scanned = index
                    return nil
                default:
                    break
                }
            }
            return end
        }
        scanned = pending.count
        return nil
    }

    private func skipClosers(from start: Int) -> Int {
        var index = start
        while index < pending.count, Self.closers.contains(pending[index]) { index += 1 }
        return index
    }

    /// Whether the word ending just before the `.` at `dot` is an abbreviation or an initial.
    private func isAbbreviation(before dot: Int) -> Bool {
        var start = dot
        while start > 0, !pending[start - 1].isWhitespace, !Self.openers.contains(pending[start - 1]) { start -= 1 }
        let word = String(pending[start..<dot])
        guard !word.isEmpty else { return false }
        // An initial ("J."), or a dotted abbreviation ("e.g", "U.S").
        if word.count == 1 && word.first!.isLetter && word.first!.isUppercase { return true }
        if word.contains(".") && word.allSatisfy({ $0.isLetter || $0 == "." }) { return true }
        return Self.abbreviations.contains(word.lowercased())
    }

    /// Whether the word ending just before `dot` is one lowercase letter ("z" of "z. B.").
    private func isLoneLowercaseLetter(before dot: Int) -> Bool {
        guard dot >= 1, pending[dot - 1].isLetter, pending[dot - 1].isLowercase else { return false }
        return dot == 1 || pending[dot - 2].isWhitespace || Self.openers.contains(pending[dot - 2])
    }

    /// Whether a lone letter and its dot come before the whitespace before `letter` ("d." of
    /// "d. h.").
    private func spacedLetterPrecedes(_ letter: Int) -> Bool {
        var index = letter - 1
        guard index >= 0, pending[index].isWhitespace else { return false }
        while index >= 0, pending[index].isWhitespace { index -= 1 }
        guard index >= 1, pending[index] == ".", pending[index - 1].isLetter else { return false }
        return index == 1 || pending[index - 2].isWhitespace || Self.openers.contains(pending[index - 2])
    }

    /// Whether a letter and a dot come after the whitespace at `start` ("B." of "z. B."); nil
    /// while the text so far ends before that can be told.
    private func spacedLetterFollows(from start: Int) -> Bool? {
        var index = start
        while index < pending.count, pending[index].isWhitespace { index += 1 }
        guard index + 1 < pending.count else { return nil }
        return pending[index].isLetter && pending[index + 1] == "."
    }

    /// The index just past the first clause boundary (punctuation, then whitespace) that
    /// leaves at least `minimum` non-blank characters before it, or nil.
    private func firstClauseEnd(minimum: Int) -> Int? {
        var characters = 0
        for index in pending.indices.dropLast() {
            if characters > 0 || !pending[index].isWhitespace { characters += 1 }
            if characters >= minimum, Self.clausePunctuation.contains(pending[index]), pending[index + 1].isWhitespace {
                return index + 1
            }
        }
        return nil
    }

    /// The index just past the last clause boundary within the first `maximumLength`
    /// characters that leaves a piece of sensible length; a space when the sentence (the
    /// first `extent` characters of `pending`) has none there and runs past twice the maximum.
    private func clauseEnd(extent: Int) -> Int? {
        let limit = min(extent, maximumLength)
        var index = limit - 1
        while index >= minimumClauseLength {
            if Self.clausePunctuation.contains(pending[index]), index + 1 < pending.count, pending[index + 1].isWhitespace {
                return index + 1
            }
            index -= 1
        }
        guard extent > 2 * maximumLength else { return nil }
        index = limit - 1
        while index >= minimumClauseLength {
            if pending[index].isWhitespace { return index }
            index -= 1
        }
        return limit
    }

    static let terminators: Set<Character> = [".", "!", "?", "…"]
    static let closingTerminators: Set<Character> = ["。", "！", "？"]
    static let closers: Set<Character> = ["\"", "'", "”", "’", ")", "]", "»", "」", "』"]
    static let openers: Set<Character> = ["\"", "'", "“", "‘", "(", "[", "«"]
    static let clausePunctuation: Set<Character> = [",", ";", ":", "—", "–"]
    /// Common abbreviations that end in a dot mid-sentence (lowercased, no final dot): English,
    /// then German, French, Spanish and Portuguese, Italian and Dutch ones, leaving out those
    /// that are also words that may end an English sentence ("abs", "sig", "rag", "gent", "p").
    static let abbreviations: Set<String> = [
        "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "vs", "etc", "approx", "no", "nos", "fig", "figs",
        "vol", "ch", "sec", "inc", "ltd", "co", "corp", "dept", "est", "gen", "gov", "lt", "col", "sgt", "capt",
        "rev", "ave", "blvd", "rd", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov",
        "dec", "mon", "tue", "wed", "thu", "fri", "sat", "sun", "cf", "al", "ca", "min", "max", "e.g", "i.e", "a.m",
        "p.m",
        // German
        "nr", "usw", "bzw", "ggf", "vgl", "evtl", "inkl", "exkl", "zzgl", "bspw", "sog", "hr", "fr", "frl", "str",
        "tel", "mio", "mrd", "tsd", "jh", "chr", "geb", "gest", "ff", "z.b", "d.h", "u.a", "s.o", "s.u", "o.ä", "u.u",
        "dez", "okt", "febr", "gmbh", "abt", "allg", "anm", "bd", "bzgl", "dgl", "entspr", "urspr",
        // French
        "mme", "mlle", "mm", "env", "éd", "av", "nº", "càd", "p.ex",
        // Spanish and Portuguese
        "sra", "srta", "sres", "dña", "ud", "uds", "vd", "vds", "núm", "pág", "págs", "aprox", "dra", "lic", "gral",
        "exmo", "exma", "ilmo", "v.ex", "dto",
        // Italian
        "sigg", "dott", "avv", "ecc", "pag", "geom", "egr", "spett",
        // Dutch
        "dhr", "mevr", "bijv", "enz", "o.a", "m.b.t", "t.a.v", "i.p.v", "blz",
    ]
}
