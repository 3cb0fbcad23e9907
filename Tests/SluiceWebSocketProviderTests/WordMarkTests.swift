import Foundation
import ProviderTestSupport
import Testing
import WebSocketTestSupport

@testable import SluiceWebSocketProvider

/// Word marks from the server's alignment: each word's text range in its utterance and the
/// byte of the utterance's audio where the server said its first character begins.
@Suite struct WordMarkTests {
    struct Expected: Equatable, CustomStringConvertible {
        var text: Range<Int>
        var audioOffset: Int
        var description: String { "\(text)@\(audioOffset)" }
    }

    /// The marks the alignment the server sent implies: for each word, its first character's
    /// message start (within the utterance) plus its start time in frames.
    static func expected(_ sentences: [String], server: StreamInputTestServer, utteranceBytes: [Int]) -> [[Expected]] {
        let letters = server.spoken.filter { !$0.character.unicodeScalars.allSatisfy(\.properties.isWhitespace) }
        var next = 0
        var utteranceStart = 0
        var all: [[Expected]] = []
        for (index, sentence) in sentences.enumerated() {
            var marks: [Expected] = []
            var byte = 0
            var inWord = false
            for scalar in sentence.unicodeScalars {
                let width = UTF8.width(scalar)
                if scalar.properties.isWhitespace {
                    inWord = false
                } else {
                    if !inWord {
                        let spoken = letters[next]
                        let frames = Int((Double(spoken.startMilliseconds) * 24_000 / 1000).rounded())
                        marks.append(Expected(text: byte..<byte, audioOffset: spoken.messageStart - utteranceStart + frames * 2))
                        inWord = true
                    }
                    marks[marks.count - 1].text = marks[marks.count - 1].text.lowerBound..<(byte + width)
                    next += 1
                }
                byte += width
            }
            all.append(marks)
            utteranceStart += utteranceBytes[index]
        }
        return all
    }

    @Test("the marks match the server's alignment (text range and byte offset)", arguments: [4_800, 64 << 10])
    func marksMatchAlignment(messageBytes: Int) throws {
        let server = try StreamInput.server { $0.messageBytes = messageBytes }
        let driver = try ProviderDriver.make(server, keyEnv: "SLUICE_TEST_WS_MARKS_\(messageBytes)")
        let sentences = [
            "Hello brave new world.",
            String(repeating: "Words after words, ", count: 9) + "then the end.",
            "Ünïcode wörds tóo.",
        ]
        for sentence in sentences { driver.say(sentence) }
        driver.endText()
        let reading = driver.readAll()
        #expect(reading.ended, "\(String(describing: reading.error))")
        #expect(reading.audio == server.sentAudio)
        #expect(reading.utterances.count == sentences.count)
        guard reading.utterances.count == sentences.count else { return }
        let expected = Self.expected(sentences, server: server, utteranceBytes: reading.utterances.map(\.count))
        for index in sentences.indices {
            let marks = reading.marks[index].map {
                Expected(text: Int($0.text_start)..<Int($0.text_start + $0.text_length), audioOffset: Int($0.audio_offset))
            }
            #expect(marks == expected[index], "utterance \(index)")
            #expect(marks.allSatisfy { $0.audioOffset % 2 == 0 && $0.audioOffset < reading.utterances[index].count })
        }
    }

    @Test("a mark is takeable by the read that returns its word's first byte")
    func marksInTime() throws {
        let server = try StreamInput.server()
        let driver = try ProviderDriver.make(server, keyEnv: "SLUICE_TEST_WS_MARKS_TIME")
        driver.say("One two three four five six seven eight nine ten.")
        driver.endText()
        var position = 0
        var taken = 0
        var late: [String] = []
        let deadline = Date().addingTimeInterval(20)
        loop: while Date() < deadline {
            switch driver.read(capacity: 960) {
            case .data(let bytes):
                position += bytes.count
                taken += driver.takeWordMarks().count
                // The words whose first character's audio was read by now, from what the
                // server sent (one utterance: its audio starts at the connection's first byte).
                let spoken = server.spoken
                let due = spoken.indices.filter { index in
                    !spoken[index].character.unicodeScalars.allSatisfy(\.properties.isWhitespace)
                        && (index == 0 || spoken[index - 1].character == " ") && spoken[index].audioOffset < position
                }.count
                if taken < due { late.append("\(due - taken) marks missing after \(position) bytes") }
            case .wouldBlock: usleep(1_000)
            case .utteranceEnd: continue
            case .end, .error: break loop
            }
        }
        #expect(taken == 10)
        #expect(late.isEmpty, "\(late)")
    }
}

/// The ledger's rules on their own: boundaries and marks from alignment, without a network.
@Suite struct UtteranceLedgerTests {
    static func aligned(_ text: String, every milliseconds: Double = 10) -> [AlignedCharacter] {
        text.unicodeScalars.enumerated().map { AlignedCharacter(String($1), startMilliseconds: Double($0) * milliseconds) }
    }

    @Test("an utterance is complete once all its characters were aligned and its text ended; whitespace-only ones at once")
    func boundaries() {
        var ledger = UtteranceLedger(frameBytes: 2, sampleRate: 1_000)
        ledger.begin()
        ledger.append("Hi there.")
        #expect(ledger.receive(alignment: Self.aligned("Hi there."), audioBytes: 180) == nil)
        // Aligned in full, but its text may still grow.
        #expect(!ledger.writingIsComplete)
        ledger.close()
        #expect(ledger.writingIsComplete)
        ledger.endWriting()
        ledger.begin()
        ledger.append("   ")
        ledger.close()
        #expect(ledger.writingIsComplete)
        ledger.endWriting()
        ledger.begin()
        ledger.append("Bye.")
        ledger.close()
        #expect(ledger.awaitsAudio && ledger.owesAudio)
        #expect(ledger.receive(alignment: Self.aligned(" By"), audioBytes: 60) == nil)
        #expect(!ledger.writingIsComplete)
        #expect(ledger.receive(alignment: Self.aligned("e. "), audioBytes: 60) == nil)
        #expect(ledger.writingIsComplete)
        #expect(ledger.writingAudioBytes == 120)
    }

    @Test("marks: message start plus the start time in frames, within the message, never going back")
    func marks() {
        // 1 kHz mono S16: 1 ms is one frame, two bytes.
        var ledger = UtteranceLedger(frameBytes: 2, sampleRate: 1_000)
        ledger.begin()
        ledger.append("ab cd ef")
        #expect(ledger.receive(alignment: Self.aligned("ab cd"), audioBytes: 100) == nil)
        // "ef" begins "at 70 ms" of a 20-byte message starting at byte 100: kept within the
        // message (byte 120).
        #expect(ledger.receive(alignment: [AlignedCharacter(" ", startMilliseconds: 0), AlignedCharacter("e", startMilliseconds: 70), AlignedCharacter("f", startMilliseconds: 80)], audioBytes: 20) == nil)
        let marks = ledger.takeMarks(limit: 10)
        #expect(marks == [
            WordMarkCheck.mark(0..<2, 0), WordMarkCheck.mark(3..<5, 60), WordMarkCheck.mark(6..<8, 120),
        ])
        #expect(ledger.takeMarks(limit: 10).isEmpty)
    }

    @Test("an alignment that does not fit is refused with the reason: start times far outside the audio (±1e300, NaN), more characters than sent")
    func misfits() {
        for start in [1e300, -1e300, .nan, -.infinity, .infinity, 1_200, -1_001] {
            var ledger = UtteranceLedger(frameBytes: 2, sampleRate: 1_000)
            ledger.begin()
            ledger.append("ab cd")
            // 40 bytes: 20 ms of audio; a start up to a second outside it is pinned.
            let problem = ledger.receive(alignment: [AlignedCharacter("a", startMilliseconds: start)], audioBytes: 40)
            #expect(problem?.contains("starts at") == true, "\(start): \(problem ?? "accepted")")
            #expect(ledger.takeMarks(limit: 10).isEmpty)
        }
        var ledger = UtteranceLedger(frameBytes: 2, sampleRate: 1_000)
        ledger.begin()
        ledger.append("ab")
        #expect(ledger.receive(alignment: [AlignedCharacter("a", startMilliseconds: 1_000), AlignedCharacter("b", startMilliseconds: -900)], audioBytes: 40) == nil)
        #expect(ledger.receive(alignment: Self.aligned("cdefgh"), audioBytes: 40)?.contains("8 characters, more than the 2 sent") == true)
        // The whole text in two frames: more characters than the audio has frames.
        var crammed = UtteranceLedger(frameBytes: 2, sampleRate: 24_000)
        crammed.begin()
        crammed.append("Hello there.")
        #expect(crammed.receive(alignment: Self.aligned("Hello", every: 0), audioBytes: 4)?.contains("5 characters are aligned to a message of 2 frames") == true)
    }
}

import SluicePluginKit

enum WordMarkCheck {
    static func mark(_ text: Range<Int>, _ offset: Int) -> WordMark { WordMark(text: text, audioOffset: offset) }
}
