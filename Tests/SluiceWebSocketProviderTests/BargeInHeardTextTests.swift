import Foundation
import JackTestSupport
import SluiceSpeech
import SluiceTestSupport
import Testing
import WebSocketTestSupport

/// Barge-in with the WebSocket provider, into JACK: what was heard is told to the word, from
/// the words the server's alignment placed, and equals the words whose audio played.
@Suite struct BargeInHeardTextTests {
    static let text = "First sentence is here. Then a second sentence goes on for quite a while longer. Never heard at all."

    static func configuration(_ server: StreamInputTestServer, keyEnv: String, output: SpeechOutput) -> SpeechConfiguration {
        var configuration = SpeechConfiguration()
        configuration.provider = "elevenlabs"
        configuration.voice = "voice-7"
        configuration.settings = ["base-url": server.baseURL, "key-env": keyEnv]
        configuration.output = output
        configuration.pluginFolders = [CommandRunner.productsFolder.path]
        configuration.strategy = .stream
        return configuration
    }

    @Test("barge-in during the second sentence: the heard text ends at a word inside it, the words whose audio played")
    func heardToTheWord() throws {
        let variable = "SLUICE_TEST_WS_KEY_BARGE"
        // The same server script twice: its audio depends only on the text (240 frames a
        // character), so the offline rendering gives each word's place in the audio.
        let offlineServer = try StreamInput.server()
        let folder = TemporaryFolder("sluice-ws-barge")
        let reference = try withEnvironment([variable: StreamInput.key]) {
            try SpeechController(Self.configuration(offlineServer, keyEnv: variable, output: .file(path: folder.path("reference.wav"))))
        }.speak(Self.text)
        try #require(reference.utterances.count == 3)
        let second = reference.utterances[1]
        let secondEnd = try #require(second.end)
        #expect(second.words.map(\.text) == ["Then", "a", "second", "sentence", "goes", "on", "for", "quite", "a", "while", "longer."])

        let server = try StreamInput.server()
        let speech = try withEnvironment([variable: StreamInput.key]) {
            try SpeechController(Self.configuration(server, keyEnv: variable, output: .jack(server: try JackTestServer.shared().name)))
        }
        try speech.start()
        try speech.yield(text: Self.text)
        try speech.finish()
        #expect(StreamInput.wait(upTo: 20) { speech.playbackTime > second.start + 0.6 * (secondEnd - second.start) })
        let heard = speech.cancel()
        let result = try speech.waitUntilFinished()
        let played = result.timings.audioSeconds
        #expect(heard.granularity == .word)
        #expect(heard.completedUtterances == 1)
        #expect(heard.interrupted == second.text)

        // The second sentence's words that began before playback stopped, by the offline word
        // timing placed at the live first word.
        let cut = try #require(result.utterances.first { $0.end == nil })
        let liveFirst = try #require(cut.words.first).start
        let offlineFirst = second.words[0].start
        let begun = second.words.filter { liveFirst + ($0.start - offlineFirst) < played }
        #expect(begun.count >= 2 && begun.count < second.words.count)
        #expect(cut.words.map(\.text) == begun.map(\.text))
        for (live, offline) in zip(cut.words, begun) {
            #expect(abs((live.start - liveFirst) - (offline.start - offlineFirst)) < 0.005)
        }
        let playing = try #require(begun.last)
        let utf8 = Array(Self.text.utf8)
        #expect(heard.interruptedWord == playing.text)
        #expect(heard.heard == String(decoding: utf8[..<begun[begun.count - 2].textRange.upperBound], as: UTF8.self))
        #expect(heard.remainder == String(decoding: utf8[playing.textRange.lowerBound...], as: UTF8.self))
    }
}
