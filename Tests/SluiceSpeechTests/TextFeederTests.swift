import Foundation
import SluicePlugins
import SluiceSpeech
import SluiceTestSupport
import Testing

/// How text reaches the provider: whole sentences for a provider that needs them, every piece
/// as it arrives for one that declares incremental text — with the same utterance boundaries
/// and the same audio either way. Through the Swift-kit test provider (`test-pcm`: 100 frames
/// per UTF-8 byte of text it was given), rendered into a file.
@Suite struct TextFeederTests {
    static let pieces = ["Hel", "lo wor", "ld. Next", " one."]

    /// A folder holding the test provider as `libsluice-test.so` and a graph speaking with it
    /// (the controllers trust the folder: `trustGraphFolder`).
    static func graph(_ voice: String) throws -> (TemporaryFolder, String) {
        let folder = TemporaryFolder()
        try FileManager.default.copyItem(
            atPath: TestFixtures.plugin("test-plugin-swift"),
            toPath: folder.path("libsluice-test.so"))
        let path = try folder.write("""
            name: feeding
            nodes:
              voice: { type: test-pcm, \(voice) }
              align: { type: aligner }
              out:   { type: null.sink, rate: 16000, channels: 1 }
            links:
              - voice -> align -> out
            playback: { strategy: generate-first, max-buffered: 60 }
            """, to: "feeding.yaml").path
        return (folder, path)
    }

    static func pushes(_ speech: SpeechController) -> Int {
        let source = speech.graph.nodes.compactMap { $0.instance as? PluginProviderSource }.first!
        return source.counters()["pushes"] ?? -1
    }

    @Test("a provider needing whole utterances gets each sentence once it is complete")
    func wholeSentences() throws {
        let (folder, graph) = try Self.graph("chunk: 100")
        let speech = try SpeechController(Speech.file(folder.path("out.wav")) { $0.graph = .file(path: graph); $0.trustGraphFolder = true; $0.settings = [:] })
        #expect(!speech.feedsIncrementally)
        try speech.start()
        try speech.yield(text: Self.pieces[0])
        try speech.yield(text: Self.pieces[1])
        #expect(Self.pushes(speech) == 0)
        try speech.yield(text: Self.pieces[2])
        #expect(Self.pushes(speech) == 1)  // "Hello world."
        try speech.yield(text: Self.pieces[3])
        #expect(Self.pushes(speech) == 1)  // "Next one." may go on: its "." waits
        try speech.finish()
        let result = try speech.waitUntilFinished()
        #expect(Self.pushes(speech) == 2)
        #expect(result.utterances.map(\.text) == ["Hello world.", "Next one."])
        #expect(result.utterances.map(\.textRange) == [0..<12, 13..<22])
        #expect(try Speech.samples(folder.path("out.wav")).count == 100 * 21)
    }

    @Test("a provider taking incremental text gets every piece as it arrives, with the same boundaries and audio")
    func incrementalPieces() throws {
        let (folder, graph) = try Self.graph("chunk: 100, incremental: true")
        let speech = try SpeechController(Speech.file(folder.path("out.wav")) { $0.graph = .file(path: graph); $0.trustGraphFolder = true; $0.settings = [:] })
        #expect(speech.feedsIncrementally)
        try speech.start()
        for (index, piece) in Self.pieces.enumerated() {
            try speech.yield(text: piece)
            // "Hel", "lo wor", then "ld." ends the first utterance and "Next" begins the second.
            #expect(Self.pushes(speech) == [1, 2, 4, 5][index])
        }
        try speech.finish()
        let result = try speech.waitUntilFinished()
        #expect(result.utterances.map(\.text) == ["Hello world.", "Next one."])
        #expect(result.utterances.map(\.textRange) == [0..<12, 13..<22])
        #expect(result.heard.heard == "Hello world. Next one.")
        #expect(try Speech.samples(folder.path("out.wav")).count == 100 * 21)
    }

    @Test("a provider failure is a typed error with its code, after what came before played out; yield then reports it")
    func providerFailure() throws {
        let (folder, graph) = try Self.graph("chunk: 100, fail-after: 3000")
        let speech = try SpeechController(Speech.file(folder.path("out.wav")) { $0.graph = .file(path: graph); $0.trustGraphFolder = true; $0.settings = [:] })
        try speech.start()
        try speech.yield(text: "Hello world. Next one. ")
        do {
            _ = try speech.waitUntilFinished()
            Issue.record("the speech finished without the provider's failure")
        } catch {
            guard case .provider(let failure) = error else { Issue.record("\(error)"); return }
            #expect(failure.node == "voice")
            #expect(failure.code == "test-failure")
            #expect(failure.message == "failed after 3000 bytes, as asked")
            // "Hello world." (2400 bytes) played whole; "Next one." was cut off.
            #expect(failure.result.heard == HeardText(
                heard: "Hello world.", interrupted: "Next one.", remainder: "Next one. ", completedUtterances: 1))
            #expect(throws: SpeechError.provider(failure)) { try speech.yield(text: "More.") }
        }
        #expect(try Speech.samples(folder.path("out.wav")).count == 1500)
    }

    @Test("text beyond ASCII keeps its UTF-8 offsets, whole or incremental; long text is handed over and forgotten", arguments: [false, true])
    func wideCharacters(_ incremental: Bool) throws {
        let (folder, graph) = try Self.graph("chunk: 1" + (incremental ? ", incremental: true" : ""))
        let speech = try SpeechController(Speech.file(folder.path("out.wav")) { $0.graph = .file(path: graph); $0.trustGraphFolder = true; $0.settings = [:] })
        try speech.start()
        // "Héllo wörld." is 12 characters and 14 UTF-8 bytes; "👋" is one character of 4.
        for piece in ["Hél", "lo wö", "rld. Wave 👋", " now."] { try speech.yield(text: piece) }
        // Then enough plain text that the feeder drops characters it handed over (in 4 096-
        // character batches), and one more wide sentence after it. 1 500 utterances under
        // generate-first also fill the sink's markers before its audio: playback must start
        // then (Playhead.markersFull) rather than wait for an end the source cannot reach.
        let filler = String(repeating: "Ok. ", count: 1_500)
        try speech.yield(text: " " + filler + "Fin ç.")
        try speech.finish()
        let result = try speech.waitUntilFinished()
        let texts = result.utterances.map(\.text)
        #expect(texts.prefix(2) == ["Héllo wörld.", "Wave 👋 now."])
        #expect(result.utterances.first?.textRange == 0..<14)
        #expect(result.utterances.dropFirst().first?.textRange == 15..<29)
        #expect(texts.last == "Fin ç.")
        let whole = "Héllo wörld. Wave 👋 now. " + filler + "Fin ç."
        let lastRange = try #require(result.utterances.last?.textRange)
        #expect(lastRange == (whole.utf8.count - "Fin ç.".utf8.count)..<whole.utf8.count)
        #expect(result.heard.heard == whole)
    }
}
