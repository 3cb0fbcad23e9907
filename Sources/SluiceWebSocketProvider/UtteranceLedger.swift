import SluiceAudio
import SluicePluginKit

/// What a WebSocket provider knows of its utterances, between the text the host pushes, the
/// audio and alignment the server sends, and the host's reads. Pure bookkeeping: no I/O, no
/// locks (the provider keeps it behind its `Mutex`).
///
/// Characters are Unicode scalars; only non-whitespace ones count, numbered in the order
/// they were pushed across all utterances. The server's alignment lists the characters it
/// spoke, in order, so its n-th non-whitespace aligned character is the n-th one pushed:
/// that maps audio to utterances (an utterance's audio is complete once all of its
/// characters were aligned) and to words (a word's mark is where its first character's audio
/// begins).
struct UtteranceLedger {
    struct Utterance {
        /// The number of its first non-whitespace character.
        let firstCharacter: Int
        /// Its non-whitespace characters so far.
        var characters = 0
        /// UTF-8 bytes of its text so far.
        var bytes = 0
        /// Its words (runs of non-whitespace) as UTF-8 byte ranges of its text; the last may
        /// still grow while the utterance is open.
        var words: [Range<Int>] = []
        /// The number of each word's first character.
        var wordStarts: [Int] = []
        var inWord = false
        /// `endUtterance` came: its text is complete.
        var closed = false
        /// Audio attributed to it so far, in bytes.
        var audioBytes = 0
        /// Marks found so far (a word index and an audio offset), and how many were taken.
        var marks: [(word: Int, offset: Int)] = []
        var marksTaken = 0
        /// The next word whose first character has not been aligned yet.
        var nextWord = 0
        var lastMarkOffset = 0

        /// One past the number of its last character.
        var characterEnd: Int { firstCharacter + characters }
    }

    let frameBytes: Int
    let sampleRate: Int
    /// Utterances not yet passed by both the audio and the reads; `utterances[0]` is number
    /// `firstNumber`.
    private var utterances: [Utterance] = []
    private var firstNumber = 0
    /// Non-whitespace characters pushed, and aligned by the server, in all.
    private(set) var pushedCharacters = 0
    private(set) var alignedCharacters = 0
    /// The utterance the server's audio goes to.
    private(set) var writing = 0
    /// The utterance the host's reads are in.
    private(set) var reading = 0
    /// Audio that came while no utterance was begun: it is the next one's.
    private var unattributedAudio = 0

    init(frameBytes: Int, sampleRate: Int) {
        self.frameBytes = frameBytes
        self.sampleRate = sampleRate
    }

    /// Utterances begun so far.
    var count: Int { firstNumber + utterances.count }

    private func index(_ number: Int) -> Int? {
        let index = number - firstNumber
        return index >= 0 && index < utterances.count ? index : nil
    }

    // MARK: Text

    /// An utterance is open: begun and not yet closed.
    var isOpen: Bool { utterances.last.map { !$0.closed } ?? false }

    /// Whether the open utterance has any non-whitespace character yet.
    var openHasText: Bool { isOpen && utterances[utterances.count - 1].characters > 0 }

    mutating func begin() {
        var utterance = Utterance(firstCharacter: pushedCharacters)
        if writing == count {
            utterance.audioBytes = unattributedAudio
            utterance.lastMarkOffset = unattributedAudio / frameBytes * frameBytes
            unattributedAudio = 0
        }
        utterances.append(utterance)
    }

    /// Appends text to the open utterance.
    mutating func append(_ text: String) {
        precondition(isOpen, "no open utterance")
        let last = utterances.count - 1
        for scalar in text.unicodeScalars {
            let width = UTF8.width(scalar)
            let start = utterances[last].bytes
            if scalar.properties.isWhitespace {
                utterances[last].inWord = false
            } else {
                if utterances[last].inWord {
                    utterances[last].words[utterances[last].words.count - 1] = utterances[last].words.last!.lowerBound..<(start + width)
                } else {
                    utterances[last].words.append(start..<(start + width))
                    utterances[last].wordStarts.append(pushedCharacters)
                    utterances[last].inWord = true
                }
                utterances[last].characters += 1
                pushedCharacters += 1
            }
            utterances[last].bytes += width
        }
    }

    mutating func close() {
        guard isOpen else { return }
        utterances[utterances.count - 1].closed = true
    }

    // MARK: Audio

    /// The utterance audio goes to has all its audio: its text is complete and the server
    /// aligned every character of it (at once for one with no characters).
    var writingIsComplete: Bool {
        guard let index = index(writing) else { return false }
        return utterances[index].closed && alignedCharacters >= utterances[index].characterEnd
    }

    /// Bytes of audio attributed to the utterance audio goes to.
    var writingAudioBytes: Int {
        index(writing).map { utterances[$0].audioBytes } ?? unattributedAudio
    }

    /// Text went out that the server has not spoken yet: an utterance from the one audio goes
    /// to on has characters.
    var awaitsAudio: Bool {
        guard let from = index(writing) else { return false }
        return utterances[from...].contains { $0.characters > 0 }
    }

    /// An utterance with characters was closed (flushed) and its audio is not complete:
    /// the server owes audio now.
    var owesAudio: Bool {
        guard let from = index(writing) else { return false }
        return utterances[from...].contains { $0.closed && $0.characters > 0 }
    }

    /// Attributes `audioBytes` more bytes to the utterance audio goes to.
    mutating func addAudio(_ audioBytes: Int) {
        if let index = index(writing) {
            utterances[index].audioBytes += audioBytes
        } else {
            unattributedAudio += audioBytes
        }
    }

    /// An audio message: `audioBytes` bytes go to the utterance audio goes to, the first
    /// `skipped` bytes of the message having gone to the one before (they completed its last
    /// frame). Each aligned character is counted, and each word of this utterance whose
    /// first character is among them gets a mark where that character's audio begins:
    /// `start of the message + round(ms × rate / 1000)` frames, kept within the message's
    /// audio and never before the previous mark.
    ///
    /// - Returns: why the alignment does not fit, or nil: it names more characters than the
    ///   text sent, or a start time that is not a number or lies far outside the message's
    ///   audio (more than `alignmentSlack` before it or after its end; a little outside is
    ///   pinned to it, as servers round). Nothing of such a message is recorded.
    mutating func receive(alignment: [AlignedCharacter]?, audioBytes: Int, skipped: Int = 0) -> String? {
        let current = index(writing)
        let messageStart = (current.map { utterances[$0].audioBytes } ?? 0) - skipped
        let lower = max(0, ceilToFrame(messageStart))
        let upper = max(lower, (messageStart + skipped + audioBytes) / frameBytes * frameBytes)
        if let problem = misfit(alignment ?? [], audioBytes: skipped + audioBytes) { return problem }
        for character in alignment ?? [] {
            for scalar in character.text.unicodeScalars where !scalar.properties.isWhitespace {
                let number = alignedCharacters
                alignedCharacters += 1
                guard let current, number >= utterances[current].firstCharacter, number < utterances[current].characterEnd else { continue }
                var utterance = utterances[current]
                while utterance.nextWord < utterance.wordStarts.count && utterance.wordStarts[utterance.nextWord] < number {
                    utterance.nextWord += 1
                }
                if utterance.nextWord < utterance.wordStarts.count && utterance.wordStarts[utterance.nextWord] == number {
                    // The server's milliseconds are any JSON number (1e300, -1e300): pinned to this
                    // message's audio before they become a frame.
                    let frames = Double(messageStart) / Double(frameBytes) + character.startMilliseconds * Double(sampleRate) / 1000
                    let frameRange = (lower / frameBytes)...(upper / frameBytes)
                    var offset = (ExternalNumber.clamped(frames, to: frameRange) ?? frameRange.lowerBound) * frameBytes
                    offset = max(offset, utterance.lastMarkOffset)
                    utterance.marks.append((utterance.nextWord, offset))
                    utterance.lastMarkOffset = offset
                    utterance.nextWord += 1
                }
                utterances[current] = utterance
            }
        }
        addAudio(audioBytes)
        return nil
    }

    /// How far outside a message's audio a character's start may lie and still be pinned to it.
    static let alignmentSlackMilliseconds = 1_000.0

    /// Why `alignment` cannot belong to a message of `audioBytes` bytes after what was
    /// aligned so far, or nil.
    private func misfit(_ alignment: [AlignedCharacter], audioBytes: Int) -> String? {
        let frames = audioBytes / frameBytes
        let duration = Double(frames) * 1000 / Double(sampleRate)
        let slack = Self.alignmentSlackMilliseconds
        var characters = alignedCharacters
        for character in alignment {
            let start = character.startMilliseconds
            guard start.isFinite, start >= -slack, start <= duration + slack else {
                return "a character starts at \(start) ms of a message of \(duration) ms of audio"
            }
            characters += character.text.unicodeScalars.filter { !$0.properties.isWhitespace }.count
        }
        guard characters <= pushedCharacters else {
            return "it has aligned \(characters) characters, more than the \(pushedCharacters) sent"
        }
        // Each character starts on a frame of its own: more of them than the message has frames
        // is a claim no audio can carry (the whole text "spoken" in a couple of frames).
        let inMessage = characters - alignedCharacters
        guard inMessage <= max(frames, 1) else {
            return "\(inMessage) characters are aligned to a message of \(frames) frames of audio"
        }
        return nil
    }

    private func ceilToFrame(_ bytes: Int) -> Int {
        bytes >= 0 ? (bytes + frameBytes - 1) / frameBytes * frameBytes : -((-bytes) / frameBytes * frameBytes)
    }

    /// The utterance audio goes to is complete: audio goes to the next one.
    mutating func endWriting() {
        writing += 1
        trim()
    }

    // MARK: Reads

    /// A read returned the end of the current utterance.
    mutating func readReachedEnd() {
        reading += 1
        trim()
    }

    /// The current utterance's marks not taken yet, at most `limit`, each with its word's
    /// byte range as the text stands now.
    mutating func takeMarks(limit: Int) -> [WordMark] {
        guard let index = index(reading), limit > 0 else { return [] }
        let utterance = utterances[index]
        let taken = utterance.marks[utterance.marksTaken...].prefix(limit).map { mark in
            WordMark(text: utterance.words[mark.word], audioOffset: mark.offset)
        }
        utterances[index].marksTaken += taken.count
        return taken
    }

    /// Forgets utterances both the audio and the reads have passed.
    private mutating func trim() {
        let passed = min(writing, reading) - firstNumber
        guard passed > 0 else { return }
        utterances.removeFirst(min(passed, utterances.count))
        firstNumber += passed
    }
}
