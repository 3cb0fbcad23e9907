import Foundation
import JackTestSupport
import SluiceSpeech
import SluiceTestSupport
import Testing

/// `SpeechSession`: many replies on one JACK client, against the shared test server.
@Suite(.serialized, .timeLimit(.minutes(1))) struct SpeechSessionTests {
    /// The standard graph under a client name of this test's, connected to nothing.
    func graph(client: String, in folder: TemporaryFolder) throws -> SpeechGraphChoice {
        let text = SpeechGraph.standardYAML.replacingOccurrences(
            of: "client: sluice-speak, connect: auto", with: "client: \(client), connect: none")
        return .file(path: try folder.write(text, to: "session.yaml").path)
    }

    @Test("replies one after another, streamed or whole, are each heard on one client whose ports stay up")
    func repliesOnOneClient() throws {
        let server = try JackTestServer.shared()
        let folder = TemporaryFolder()
        let choice = try graph(client: "session-\(getpid())", in: folder)
        let session = try SpeechSession(try Speech.live { $0.graph = choice })
        let ports = try server.ports(matching: "^session-\(getpid()):")
        #expect(ports.count == 2, "\(ports)")

        let first = try session.speak("The first reply. It has two sentences.")
        #expect(first.utterances == 0..<2)
        #expect(first.waitUntilHeard(timeout: 15))
        #expect(try server.ports(matching: "^session-\(getpid()):") == ports, "the ports changed between replies")

        for piece in ["A st", "reamed re", "ply, in pieces. And its e", "nd"] { try session.yield(text: piece) }
        let last = try session.endReply()
        #expect(last.utterances == 3..<4, "the streamed reply's last sentence is spoken at its end")
        #expect(last.waitUntilHeard(timeout: 15))
        #expect(try server.ports(matching: "^session-\(getpid()):") == ports)

        let report = try session.close()
        #expect(report.underruns == 0)
        #expect(try server.ports(matching: "^session-\(getpid()):").isEmpty, "close() left the client up")
        #expect(throws: SpeechError.alreadyFinished) { try session.speak("Too late.") }
    }

    @Test("cancel says what was heard, to the word; the next reply is heard after it")
    func cancelThenReply() throws {
        let folder = TemporaryFolder()
        let choice = try graph(client: "session-cut-\(getpid())", in: folder)
        let session = try SpeechSession(try Speech.live { $0.graph = choice })
        defer { _ = try? session.close() }
        let long = try session.speak(
            "One short sentence. Then a much longer sentence that goes on for a good while before it ends. Never heard.")
        #expect(long.utterances.count == 3)
        // Into the second sentence: the first has been heard.
        #expect(Speech.wait { session.position > 1.2 })
        let cut = session.cancel()
        #expect(cut.heard == ["One short sentence."])
        // espeak reports word timing: the cut sentence is heard up to the word playing.
        try Self.expectCutAtAWord(cut, partial: "Then a much longer sentence that goes on for a good while before it ends.")
        #expect(cut.unheard == 1)
        #expect(!long.isHeard)
        let next = try session.speak("After the barge-in.")
        #expect(next.waitUntilHeard(timeout: 15))
        // Nothing more was cut: the next cancel has only the new reply to tell.
        #expect(session.cancel().heard == ["After the barge-in."])
    }

    @Test("a Piper voice speaks through graphs/piper.yaml into JACK; cancel's heard text ends at a word boundary")
    func piperVoice() throws {
        let folder = TemporaryFolder()
        let client = "session-piper-\(getpid())"
        let yaml = try String(contentsOf: Speech.packageRoot.appendingPathComponent("graphs/piper.yaml"), encoding: .utf8)
            .replacingOccurrences(of: "client: sluice-speak, connect: auto", with: "client: \(client), connect: none")
        let choice = SpeechGraphChoice.file(path: try folder.write(yaml, to: "piper.yaml").path)
        let session = try SpeechSession(try Speech.live {
            $0.graph = choice
            $0.settings = [:]
        })
        defer { _ = try? session.close() }
        #expect(try JackTestServer.shared().ports(matching: "^\(client):").count == 2)
        let first = try session.speak("Hello from a natural voice.")
        #expect(first.waitUntilHeard(timeout: 30))

        let start = session.position
        let long = try session.speak(
            "One short sentence. Then a much longer sentence that goes on for a good while before it ends. Never heard.")
        // Into the second sentence: Piper says the first in about 1.3 s.
        #expect(Speech.wait(upTo: 30) { session.position > start + 2.2 })
        let cut = session.cancel()
        // A cancel tells everything heard since the last one.
        #expect(cut.heard == ["Hello from a natural voice.", "One short sentence."])
        // Piper's alignments give word timing: the cut sentence is heard up to the word playing.
        try Self.expectCutAtAWord(cut, partial: "Then a much longer sentence that goes on for a good while before it ends.")
        #expect(!long.isHeard)
        let report = try session.close()
        #expect(report.underruns == 0)
    }

    /// `cut` ends inside `partial`, heard to a word boundary: what was heard of it is a prefix
    /// ending before whitespace (or nothing), and the word playing comes next.
    static func expectCutAtAWord(_ cut: ReplyLedger.Cut, partial: String) throws {
        #expect(cut.partial == partial)
        #expect(cut.granularity == "word")
        let heardOfIt = try #require(cut.partialHeard)
        let playing = try #require(cut.partialWord)
        #expect(partial.hasPrefix(heardOfIt))
        let rest = partial.dropFirst(heardOfIt.count)
        #expect(heardOfIt.isEmpty || rest.first?.isWhitespace == true, "'\(heardOfIt)' ends inside a word")
        #expect(rest.drop(while: \.isWhitespace).hasPrefix(playing), "\(heardOfIt) | \(playing)")
        #expect(!playing.isEmpty && !playing.contains(" "))
    }
}
