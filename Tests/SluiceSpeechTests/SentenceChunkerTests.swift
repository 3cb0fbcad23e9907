import SluiceSpeech
import Testing

/// Streamed text into utterances: sentence ends found, false ends (abbreviations, decimals,
/// ellipses) ignored, long sentences cut at clauses, and the same utterances whether the text
/// arrives whole or a few characters at a time.
@Suite struct SentenceChunkerTests {
    /// The utterances of `text` appended in pieces of `size` characters, then finished.
    static func chunks(
        _ text: String, pieces size: Int, maximumLength: Int = 200,
        earlyFirstClause: Int? = SentenceChunker.defaultEarlyFirstClause
    ) -> [SentenceChunker.Utterance] {
        var chunker = SentenceChunker(maximumLength: maximumLength, earlyFirstClause: earlyFirstClause)
        var utterances: [SentenceChunker.Utterance] = []
        var rest = Substring(text)
        while !rest.isEmpty {
            utterances += chunker.append(String(rest.prefix(size)))
            rest = rest.dropFirst(size)
        }
        return utterances + chunker.finish()
    }

    static func texts(
        _ text: String, pieces size: Int = 1_000_000, maximumLength: Int = 200,
        earlyFirstClause: Int? = SentenceChunker.defaultEarlyFirstClause
    ) -> [String] {
        chunks(text, pieces: size, maximumLength: maximumLength, earlyFirstClause: earlyFirstClause).map(\.text)
    }

    @Test("early first clause: the first sentence is released at its first clause of 24 characters or more, before its end arrives")
    func earlyFirstClause() {
        var chunker = SentenceChunker()
        #expect(chunker.earlyFirstClause == SentenceChunker.defaultEarlyFirstClause)
        // Too short before the comma: no cut there; the next comma is far enough.
        #expect(chunker.append("Yes, rivers are older than roads,").isEmpty, "the comma's space has not arrived")
        #expect(chunker.append(" and").map(\.text) == ["Yes, rivers are older than roads,"])
        // Only the first: the rest of the text is cut at sentences as before.
        #expect(chunker.append(" they carve valleys first, and people settle. Later, bridges. ").map(\.text)
            == ["and they carve valleys first, and people settle.", "Later, bridges."])
        #expect(chunker.finish().isEmpty)
        // A new text (after finish) has a first clause again.
        #expect(chunker.append("The second reply starts here, and goes on. ").map(\.text)
            == ["The second reply starts here,", "and goes on."])
        // Off: the first sentence stays whole.
        var whole = SentenceChunker(earlyFirstClause: nil)
        #expect(whole.append("The second reply starts here, and goes on. ").map(\.text) == ["The second reply starts here, and goes on."])
        // A first sentence that ends before any long enough clause is not cut.
        #expect(Self.texts("Short, and done. Then, later, more text follows here.")
            == ["Short, and done.", "Then, later, more text follows here."])
    }

    @Test("sentences end at . ! ? followed by space, closing quotes included")
    func sentences() {
        #expect(Self.texts("Hello there. How are you? I'm fine! \"Really?\" she asked.") == [
            "Hello there.", "How are you?", "I'm fine!", "\"Really?\"", "she asked.",
        ])
    }

    @Test("abbreviations, initials, decimals, versions, dotted names and ellipses do not split", arguments: [
        "Dr. Smith met Mr. Jones at 3 p.m. on Jan. 5 to discuss e.g. the budget.",
        "J. R. R. Tolkien wrote it.",
        "Pi is about 3.14159 and the build is v2.0.1 today.",
        "The U.S.A. team visited example.com yesterday.",
        "Well... I suppose so.",
        "Wait… what happened here.",
    ])
    func noFalseEnds(_ sentence: String) {
        #expect(Self.texts(sentence + " Next one.") == [sentence, "Next one."])
    }

    @Test("abbreviations of other languages, and spaced ones (z. B., d. h.), do not split; a lone letter that ends a sentence still does", arguments: [
        "Das ist z. B. ein Test mit Nr. 5 und usw. mehr.",
        "Er kam, d. h. er war u. a. pünktlich, bzw. fast.",
        "Mme. Dupont et M. Martin arrivent env. à midi.",
        "La Sra. García vive en el núm. 7, pág. 3.",
        "Il Dott. Rossi ha scritto ecc. ecc. per tutti.",
        "Dhr. Jansen kwam bijv. te laat.",
    ])
    func otherLanguages(_ sentence: String) {
        // The whole sentence, not its first clause early: what is checked is where it ends.
        for size in [1, 2, 3, 1_000] {
            #expect(Self.texts(sentence + " Nächster Satz.", pieces: size, earlyFirstClause: nil) == [sentence, "Nächster Satz."],
                    "in pieces of \(size)")
        }
    }

    @Test("a lone lowercase letter and a dot ends a sentence unless a letter and a dot follow; at the end of what has arrived it waits")
    func loneLetters() {
        // speech-dispatcher users' example: five utterances before, one now (an ellipsis
        // pauses a sentence).
        #expect(Self.texts("Das ist z. B. ein Test mit Nr. 5 und usw. …") == ["Das ist z. B. ein Test mit Nr. 5 und usw. …"])
        #expect(Self.texts("The answer is b. Next one.") == ["The answer is b.", "Next one."])
        var chunker = SentenceChunker(earlyFirstClause: nil)
        #expect(chunker.append("Das gilt z. ").isEmpty, "z. might be z. B.")
        #expect(chunker.append("B. hier. Und").map(\.text) == ["Das gilt z. B. hier."])
        #expect(chunker.append(" plan b. ").isEmpty, "what follows b. has not arrived")
        #expect(chunker.append("Ja.").map(\.text) == ["Und plan b."])
        #expect(chunker.finish().map(\.text) == ["Ja."])
    }

    @Test("an ellipsis with ?! still ends; a blank line ends a paragraph; 。！？ need no space")
    func otherEnds() {
        #expect(Self.texts("Really...? Yes.") == ["Really...?", "Yes."])
        #expect(Self.texts("A heading\n\nThe body.") == ["A heading", "The body."])
        #expect(Self.texts("你好。今天天气很好！是吗？") == ["你好。", "今天天气很好！", "是吗？"])
    }

    @Test("streamed a few characters at a time, the utterances and their ranges equal the whole text's", arguments: [1, 2, 3, 5, 7, 13])
    func streamed(_ size: Int) {
        let text = """
            The quick brown fox, who had been running since dawn, finally stopped. Dr. Who? \
            Version 3.5 shipped... eventually. "Wow!" Then, after a long pause, a very long sentence began, \
            and it went on and on; it listed things: apples, oranges, pears, plums, cherries, grapes, melons \
            and many other fruits that nobody had ever heard of before that day.
            """
        let whole = Self.chunks(text, pieces: text.count, maximumLength: 120)
        #expect(Self.chunks(text, pieces: size, maximumLength: 120) == whole)
        // Every range points at its text.
        let characters = Array(text)
        for utterance in whole {
            #expect(String(characters[utterance.range]) == utterance.text)
        }
        #expect(whole.count >= 6)
    }

    @Test("a long sentence is cut at clause boundaries, each piece within the maximum")
    func clauses() {
        let sentence = "When the river rose that spring, the villagers moved their animals to the hill, "
            + "carried the grain to the church loft, and waited; the water, brown and fast, kept rising "
            + "for three days before it finally fell."
        let pieces = Self.texts(sentence, maximumLength: 80)
        #expect(pieces.count >= 3)
        #expect(pieces.allSatisfy { $0.count <= 80 })
        #expect(pieces.dropLast().allSatisfy { [",", ";", ":"].contains($0.last!) })
        #expect(pieces.joined(separator: " ") == sentence)
        // Complete, with more text after it, in one piece: cut exactly as when streamed.
        let followed = sentence + " Then it was over."
        let whole = Self.chunks(followed, pieces: followed.count, maximumLength: 80)
        #expect(whole.map(\.text) == pieces + ["Then it was over."])
        #expect(Self.chunks(followed, pieces: 1, maximumLength: 80) == whole)
    }

    @Test("a sentence is released as soon as the next piece shows it ended, not at finish")
    func earlyRelease() {
        var chunker = SentenceChunker()
        #expect(chunker.append("Hello there.").isEmpty)  // 3.5? "." alone cannot be judged yet
        #expect(chunker.append(" How").map(\.text) == ["Hello there."])
        #expect(chunker.pendingText == " How")
        #expect(chunker.append(" are you").isEmpty)
        #expect(chunker.finish().map(\.text) == ["How are you"])
    }

    @Test("whitespace-only pieces make no utterance")
    func whitespace() {
        #expect(Self.texts("  \n  ").isEmpty)
        #expect(Self.texts("One.   \n\n   Two.") == ["One.", "Two."])
    }
    // MARK: Languages

    @Test("German, French and English with abbreviations, ordinals and numbers cut where a reader would, whole or in pieces", arguments: [
        ("de", "Das ist z. B. ein Test mit Nr. 5 und usw. bis zum Ende. Am 3. Oktober kam Dr. Müller, d. h. pünktlich um 10.30 Uhr. Im 19. Jh. war das anders.",
         ["Das ist z. B. ein Test mit Nr. 5 und usw. bis zum Ende.", "Am 3. Oktober kam Dr. Müller, d. h. pünktlich um 10.30 Uhr.", "Im 19. Jh. war das anders."]),
        ("fr", "M. Dupont a vu Mme. Durand p. ex. à 15 h. C'est fini. Il y a env. 5 km jusqu'à la gare. Vraiment ? Oui !",
         ["M. Dupont a vu Mme. Durand p. ex. à 15 h.", "C'est fini.", "Il y a env. 5 km jusqu'à la gare.", "Vraiment ?", "Oui !"]),
        ("en-US", "Mr. Smith met J. R. R. Tolkien at 3.14 p.m. on Jan. 5 in the U.S. and said etc. and so on. It cost $4.50, i.e. cheap. Done!",
         ["Mr. Smith met J. R. R. Tolkien at 3.14 p.m. on Jan. 5 in the U.S. and said etc. and so on.", "It cost $4.50, i.e. cheap.", "Done!"]),
    ])
    func languages(_ language: String, _ text: String, _ expected: [String]) {
        for size in [1, 3, 7, 1_000] {
            var chunker = SentenceChunker(language: language, earlyFirstClause: nil)
            var got: [String] = []
            var rest = Substring(text)
            while !rest.isEmpty {
                got += chunker.append(String(rest.prefix(size))).map(\.text)
                rest = rest.dropFirst(size)
            }
            got += chunker.finish().map(\.text)
            #expect(got == expected, "\(language), in pieces of \(size)")
        }
    }

    @Test("every script's sentence marks end a sentence: Hindi's danda, Arabic's question mark, Amharic's full stop, Armenian's")
    func otherScripts() {
        #expect(Self.texts("यह पहला वाक्य है। यह दूसरा है।") == ["यह पहला वाक्य है।", "यह दूसरा है।"])
        #expect(Self.texts("هل أنت بخير؟ نعم.") == ["هل أنت بخير؟", "نعم."])
        #expect(Self.texts("ሰላም ነው። እንዴት ነህ።") == ["ሰላም ነው።", "እንዴት ነህ።"])
        #expect(Self.texts("Բարեւ։ Ինչպես ես։") == ["Բարեւ։", "Ինչպես ես։"])
    }

    @Test("an ordinal's dot goes on in German and ends the sentence where ordinals take no dot; a single line break goes on, a blank line ends")
    func ordinalsAndLines() {
        let text = "Wir treffen uns am 3. Oktober wieder."
        #expect(SentenceChunker(language: "de").chunkedWhole(text) == [text])
        #expect(SentenceChunker(language: "en").chunkedWhole("We met on the 3. Then we left.") == ["We met on the 3.", "Then we left."])
        #expect(Self.texts("A line wrapped\nat a width goes on. A heading\n\nThe body.")
            == ["A line wrapped\nat a width goes on.", "A heading", "The body."])
        #expect(Self.texts("Windows lines\r\nwrap too.\r\n\r\nNext.") == ["Windows lines\r\nwrap too.", "Next."])
    }

    @Test("a voice named by its language (espeak-ng's, Piper's) gives the language; a voice id gives none", arguments: [
        ("de", "de"), ("en-us", "en-us"), ("gmw/en-US", "en-US"), ("en+f3", "en"), ("fr-fr+m2", "fr-fr"), ("zh", "zh"),
        ("en_US-joe-medium", "en_US"), ("de_DE-thorsten-high", "de_DE"),
        ("21m00Tcm4TlvDq8ikWAM", nil), ("alloy", nil), ("zz", nil), ("", nil), ("../../etc/passwd", nil), ("de-" + String(repeating: "x", count: 40), nil),
    ] as [(String, String?)])
    func voiceLanguages(_ voice: String, _ language: String?) {
        #expect(SentenceChunker.language(ofVoice: voice) == language)
    }

    @Test("hostile text: a long run without a sentence end is cut at the maximum, and ten thousand marks cost no more than their length")
    func hostileText() {
        let run = String(repeating: "x", count: 5_000)
        let pieces = Self.texts(run, pieces: 97)
        #expect(pieces.joined() == run && pieces.allSatisfy { $0.count <= 400 })  // no space: twice the maximum
        let marks = String(repeating: "?. …", count: 2_500)
        #expect(Self.texts(marks, pieces: 101).joined(separator: " ").filter { !$0.isWhitespace } == marks.filter { !$0.isWhitespace })
    }
}

extension SentenceChunker {
    /// The utterances of `text` given whole, then finished.
    fileprivate func chunkedWhole(_ text: String) -> [String] {
        var chunker = self
        return (chunker.append(text) + chunker.finish()).map(\.text)
    }
}
