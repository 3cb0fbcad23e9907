import SluiceGraph

/// Cuts streamed text (a language model's reply, token by token) into utterances as soon as
/// each is complete: sentences, and clause-sized pieces of a sentence that runs long, so a
/// provider that synthesises whole utterances can start on the first sentence while the rest
/// is still arriving.
///
/// Sentences are found by ICU's sentence break iterator in the text's language
/// (`language`, from the voice: `SentenceChunker.language(ofVoice:)`), so every script's
/// marks end one (`.` `!` `?` with closing quotes, `。`, `।`, `؟`, `።`), and by a full stop,
/// `!`, `?` or `…` followed by a space. A single line break does not end one (text wrapped at
/// a width); a blank line does. Then what a reader knows and ICU's rules lack:
/// - abbreviations (`Dr.`, `e.g.`, `etc.`, `Jan.`; `Nr.`, `usw.`, `bzw.` in German, `Mme.`,
///   `env.` in French, and the Spanish, Portuguese, Italian and Dutch ones: the language's own
///   list, every list when the language is not known), initials (`J. R. R. Tolkien`), and
///   abbreviations spelt as spaced letters (`z. B.`, `d. h.`, `u. a.`, `i. d. R.`): a lowercase
///   letter and a dot before another letter and a dot;
/// - ordinals, in the languages that write them with a dot (German `am 3. Oktober`, Danish,
///   Czech, Finnish, Polish, …): a number of up to three digits and its dot;
/// - decimals and versions (`3.14`, `v2.0.1`) and dotted names (`U.S.A.`, `example.com`);
/// - ellipses (`...`, `…`), which pause a sentence rather than end it.
///
/// An end at the very end of the text so far cannot be judged until the character after it
/// arrives (is it `3.` of `3.5`?), so it waits; `finish()` releases whatever is left. Text cut
/// in pieces is cut exactly as the whole text is.
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
    /// The text's language (`de`, `en-US`, `fr`), whose rules and abbreviations cut it; nil
    /// when not known: Unicode's rules, and the abbreviations of every language listed.
    public let language: String?
    private let icuLocale: String
    private let abbreviations: Set<String>
    private let ordinalsTakeADot: Bool

    /// Text not yet part of a complete utterance.
    private var pending: [Character] = []
    /// The whole-text offset of `pending[0]`.
    private var offset = 0
    /// An utterance was released since the text began (or since `finish()`).
    private var releasedAny = false

    /// The early first clause's default minimum, in characters: chosen from `scripts/bench
    /// speech`'s figures (docs/benchmarks.md).
    public static let defaultEarlyFirstClause = 24

    public init(
        language: String? = nil, maximumLength: Int = 200, minimumClauseLength: Int = 40,
        earlyFirstClause: Int? = defaultEarlyFirstClause
    ) {
        precondition(maximumLength > minimumClauseLength && minimumClauseLength > 0, "clause lengths out of order")
        precondition((earlyFirstClause ?? 1) > 0, "the early first clause needs a positive minimum")
        self.maximumLength = maximumLength
        self.minimumClauseLength = minimumClauseLength
        self.earlyFirstClause = earlyFirstClause
        self.language = language
        icuLocale = SentenceBreaks.locale(for: language)
        let primary = language.map { Self.primaryLanguage(of: $0) }
        abbreviations = primary.flatMap { Self.abbreviationsByLanguage[$0] }.map { $0.union(Self.englishAbbreviations) }
            ?? Self.allAbbreviations
        ordinalsTakeADot = primary.map { Self.ordinalDotLanguages.contains($0) } ?? false
    }

    /// The same cutting for text in `language` (nil: not known), the rest of the settings kept.
    public func speaking(_ language: String?) -> SentenceChunker {
        SentenceChunker(
            language: language, maximumLength: maximumLength, minimumClauseLength: minimumClauseLength,
            earlyFirstClause: earlyFirstClause)
    }

    /// The language a voice's name gives, for voices named by their language as espeak-ng's
    /// are (`de`, `en-us`, `gmw/en-US`, `en+f3`) and Piper's (`en_US-joe-medium`); nil for a
    /// name that is none (a cloud service's voice id, `alloy`).
    public static func language(ofVoice voice: String) -> String? {
        var name = Substring(voice)
        if let plus = name.firstIndex(of: "+") { name = name[..<plus] }
        if let slash = name.lastIndex(of: "/") { name = name[name.index(after: slash)...] }
        // A Piper voice: its locale, then its name and quality (en_US-joe-medium, de_DE-thorsten-high).
        if let dash = name.firstIndex(of: "-"), case let locale = name[..<dash],
            let underscore = locale.firstIndex(of: "_"), locale[locale.index(after: underscore)...].count == 2,
            locale[locale.index(after: underscore)...].allSatisfy({ $0.isASCII && $0.isUppercase })
        {
            name = locale
        }
        let subtags = name.split(separator: "-", omittingEmptySubsequences: false).flatMap {
            $0.split(separator: "_", omittingEmptySubsequences: false)
        }
        guard let first = subtags.first, (2...3).contains(first.count), first.allSatisfy({ $0.isASCII && $0.isLetter }),
            subtags.dropFirst().allSatisfy({ (1...8).contains($0.count) && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) } })
        else { return nil }
        let tag = String(name)
        return SentenceBreaks.knowsLanguage(tag) ? tag : nil
    }

    /// The language of a text-driven node's speech, from its parameters: its `voice`, when
    /// named by its language.
    public static func language(ofParameters parameters: [String: ParameterValue]) -> String? {
        guard case .string(let voice)? = parameters["voice"] else { return nil }
        return language(ofVoice: voice)
    }

    /// "de" of "de-AT", "pt" of "pt_BR", lowercased.
    static func primaryLanguage(of tag: String) -> String {
        String(tag.prefix { $0 != "-" && $0 != "_" && $0 != "@" }).lowercased()
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
    }

    /// The index just past the first complete sentence in `pending`, or nil: the first of
    /// ICU's sentence boundaries, and of the marks followed by a space, that the rules a
    /// reader adds (abbreviations, initials, spaced letters, ordinals, ellipses) leave
    /// standing, once the character after its marks (and closing quotes) has arrived. A full
    /// stop (or `!`, `?`, `…`) and a space end a sentence whatever follows: ICU would wait
    /// for the next word, to go on before a lowercase one, and a client that sends "Let me
    /// check. " and then pauses must hear it at once.
    private func sentenceEnd(final: Bool) -> Int? {
        // Most pieces of a sentence hold no mark that could end it: no need to ask ICU.
        guard pending.contains(where: Self.mayEndSentence) else { return nil }
        let (units, characters) = breakText()
        // ICU puts a boundary at the text's end, which is where the text so far stops, not a
        // sentence's end, until the text is final.
        let found = SentenceBreaks.boundaries(in: units, locale: icuLocale).filter { final || $0 < units.count }
        var candidates = Set(found.map { characterIndex(ofUnit: $0, in: characters) })
        for index in pending.indices where Self.terminators.contains(pending[index]) {
            let after = skipClosers(from: index + 1)
            if after < pending.count, pending[after].isWhitespace { candidates.insert(after) }
        }
        for candidate in candidates.sorted() where candidate > 0 {
            // The spaces after it go with the next sentence, as they came.
            var end = candidate
            while end > 1, pending[end - 1].isWhitespace, !pending[end - 1].isNewline { end -= 1 }
            // What follows decides ("3." of "3.5"); at the very end the text ends here.
            guard final || end < pending.count else { return nil }
            switch judge(boundary: end, final: final) {
            case .ends: return end
            case .continues: continue
            case .undecided: return nil
            }
        }
        return nil
    }

    private enum Judgement { case ends, continues, undecided }

    /// A line break, or a mark Unicode calls sentence-terminal in any script (`.` `?` `।` `。`).
    private static func mayEndSentence(_ character: Character) -> Bool {
        character.isNewline || character == "…"
            || character.unicodeScalars.contains { $0.properties.isSentenceTerminal }
    }

    /// Whether a boundary is a sentence's end to a reader.
    private func judge(boundary end: Int, final: Bool) -> Judgement {
        // Back over the line break and closing quotes to the run of marks ("?!", "...", "…").
        var closersEnd = end
        while closersEnd > 0, pending[closersEnd - 1].isNewline { closersEnd -= 1 }
        var runEnd = closersEnd
        while runEnd > 0, Self.closers.contains(pending[runEnd - 1]) { runEnd -= 1 }
        var runStart = runEnd
        while runStart > 0, pending[runStart - 1] == "." || pending[runStart - 1] == "…" { runStart -= 1 }
        // Anything but a full stop (a question mark, `।`, a blank line) ends the sentence.
        guard runStart < runEnd, !endsParagraph(at: end),
            runStart == 0 || !(Self.terminators.contains(pending[runStart - 1]) || Self.closingTerminators.contains(pending[runStart - 1]))
        else { return .ends }
        // A full stop ends one only before a space: "5.Next" is no end.
        if closersEnd < pending.count, !pending[closersEnd].isWhitespace { return .continues }
        let dots = pending[runStart..<runEnd].filter { $0 == "." }.count
        // An ellipsis pauses the sentence; an abbreviation, an initial or an ordinal is inside it.
        if dots >= 2 || pending[runStart..<runEnd].contains("…") { return .continues }
        if isAbbreviation(before: runStart) || isOrdinal(before: runStart) { return .continues }
        // "z. B.": a lone lowercase letter and its dot, then another letter and a dot. The
        // letters after the space decide; until they arrive, this waits.
        if isLoneLowercaseLetter(before: runStart) {
            // The last letter of one ("h." of "d. h.") is inside the sentence too.
            if spacedLetterPrecedes(runStart - 1) { return .continues }
            switch spacedLetterFollows(from: skipClosers(from: runEnd)) {
            case true?: return .continues
            case nil where !final: return .undecided
            default: break
            }
        }
        return .ends
    }

    /// Whether the boundary at `end` is after a line break of a blank line.
    private func endsParagraph(at end: Int) -> Bool {
        guard end > 0, pending[end - 1].isNewline else { return false }
        return (end < pending.count && pending[end].isNewline) || (end > 1 && pending[end - 2].isNewline)
    }

    /// `pending` as ICU reads it, in UTF-16, and the index of the character each unit belongs
    /// to (one more entry: the end). A line break alone is a space (text wrapped at a width
    /// goes on); one of a blank line is a paragraph separator, which ends a sentence.
    private func breakText() -> (units: [UInt16], characters: [Int]) {
        var units: [UInt16] = []
        var characters: [Int] = []
        units.reserveCapacity(pending.count + 8)
        characters.reserveCapacity(pending.count + 9)
        for (index, character) in pending.enumerated() {
            let start = units.count
            if character.isNewline {
                let blank = (index > 0 && pending[index - 1].isNewline) || (index + 1 < pending.count && pending[index + 1].isNewline)
                units.append(blank ? 0x2029 : 0x20)
                units.append(contentsOf: repeatElement(0x20, count: character.utf16.count - 1))
            } else {
                units.append(contentsOf: character.utf16)
            }
            characters.append(contentsOf: repeatElement(index, count: units.count - start))
        }
        characters.append(pending.count)
        return (units, characters)
    }

    /// The character a boundary at UTF-16 offset `unit` falls before (the next one's, when it
    /// falls inside a character).
    private func characterIndex(ofUnit unit: Int, in characters: [Int]) -> Int {
        guard unit > 0, unit < characters.count - 1 else { return characters[min(max(unit, 0), characters.count - 1)] }
        return characters[unit - 1] == characters[unit] ? characters[unit] + 1 : characters[unit]
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
        return abbreviations.contains(word.lowercased())
    }

    /// Whether the word ending just before `dot` is an ordinal in a language that writes them
    /// with a dot ("3" of "am 3. Oktober"): up to three digits.
    private func isOrdinal(before dot: Int) -> Bool {
        guard ordinalsTakeADot else { return false }
        var start = dot
        while start > 0, pending[start - 1].isASCII, pending[start - 1].isNumber { start -= 1 }
        let digits = dot - start
        return (1...3).contains(digits) && (start == 0 || pending[start - 1].isWhitespace || Self.openers.contains(pending[start - 1]))
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

    /// Whether a letter and a dot come after the whitespace at `start` ("B." of "z. B.", or
    /// two lowercase ones: "ex." of "p. ex."); nil
    /// while the text so far ends before that can be told.
    private func spacedLetterFollows(from start: Int) -> Bool? {
        var index = start
        while index < pending.count, pending[index].isWhitespace { index += 1 }
        guard index + 1 < pending.count else { return nil }
        if pending[index].isLetter && pending[index + 1] == "." { return true }
        // Or two lowercase letters and a dot ("ex." of French "p. ex.").
        guard pending[index].isLetter, pending[index].isLowercase, pending[index + 1].isLetter, pending[index + 1].isLowercase else {
            return false
        }
        guard index + 2 < pending.count else { return nil }
        return pending[index + 2] == "."
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
    /// Common abbreviations that end in a dot mid-sentence (lowercased, no final dot), by
    /// language, leaving out those that are also words that may end a sentence ("abs", "sig",
    /// "rag", "gent", "p"). Text in a language listed is cut with its own list and the English
    /// one (replies mix in "e.g."); text in another language, or none known, with all of them.
    static let englishAbbreviations: Set<String> = [
        "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "vs", "etc", "approx", "no", "nos", "fig", "figs",
        "vol", "ch", "sec", "inc", "ltd", "co", "corp", "dept", "est", "gen", "gov", "lt", "col", "sgt", "capt",
        "rev", "ave", "blvd", "rd", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov",
        "dec", "mon", "tue", "wed", "thu", "fri", "sat", "sun", "cf", "al", "ca", "min", "max", "e.g", "i.e", "a.m",
        "p.m",
    ]
    static let abbreviationsByLanguage: [String: Set<String>] = [
        "en": [],
        "de": [
            "nr", "usw", "bzw", "ggf", "vgl", "evtl", "inkl", "exkl", "zzgl", "bspw", "sog", "hr", "fr", "frl", "str",
            "tel", "mio", "mrd", "tsd", "jh", "chr", "geb", "gest", "ff", "z.b", "d.h", "u.a", "s.o", "s.u", "o.ä", "u.u",
            "dez", "okt", "febr", "gmbh", "abt", "allg", "anm", "bd", "bzgl", "dgl", "entspr", "urspr", "dr", "prof",
        ],
        "fr": ["mme", "mlle", "mm", "env", "éd", "av", "nº", "càd", "p.ex", "ex", "dr", "prof", "st", "ste", "cf"],
        "es": [
            "sra", "srta", "sres", "dña", "ud", "uds", "vd", "vds", "núm", "pág", "págs", "aprox", "dra", "lic", "gral",
            "dto", "sr", "dr",
        ],
        "pt": ["sra", "sr", "dra", "dr", "exmo", "exma", "ilmo", "v.ex", "pág", "núm", "aprox"],
        "it": ["sigg", "dott", "avv", "ecc", "pag", "geom", "egr", "spett", "sig", "sig.ra", "prof"],
        "nl": ["dhr", "mevr", "bijv", "enz", "o.a", "m.b.t", "t.a.v", "i.p.v", "blz", "dr", "prof"],
    ]
    static let allAbbreviations: Set<String> = abbreviationsByLanguage.values.reduce(englishAbbreviations) { $0.union($1) }
    /// Languages that write ordinal numbers with a dot ("am 3. Oktober", "3. maj", "3. května").
    static let ordinalDotLanguages: Set<String> = [
        "de", "da", "nb", "nn", "no", "is", "fi", "et", "lv", "cs", "sk", "pl", "hu", "sl", "hr", "sr", "bs", "tr", "fo",
    ]
}
