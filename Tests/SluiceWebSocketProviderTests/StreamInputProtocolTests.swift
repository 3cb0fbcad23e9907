import Foundation
import ProviderTestSupport
import SluiceGraph
import SluicePluginABI
import SluicePlugins
import SluiceSpeech
import SluiceTestSupport
import Testing
import WebSocketTestSupport

/// `elevenlabs` over stream-input against a loopback server that checks the handshake and
/// logs every message: what goes out, when, and in which order.
@Suite struct StreamInputProtocolTests {
    @Test("the handshake and the opening message are the API's, the key only in the header; the socket opens before any text")
    func handshakeAndOpening() throws {
        let server = try StreamInput.server()
        let driver = try ProviderDriver.make(server, keyEnv: "SLUICE_TEST_WS_KEY_1", [
            "model": .string("eleven_turbo_v2_5"), "stability": .number(0.4), "similarity-boost": .number(0.8),
        ])
        #expect(driver.capabilities & UInt32(SLUICE_PROVIDER_INCREMENTAL_TEXT) != 0)
        #expect(driver.capabilities & UInt32(SLUICE_PROVIDER_WORD_TIMING) != 0)
        // Pre-connected: the opening message arrives with no text given.
        #expect(StreamInput.wait(upTo: 10) { server.messages.count == 1 })
        driver.say("Hello there.")
        driver.endText()
        let reading = driver.readAll()
        #expect(reading.ended, "\(String(describing: reading.error))")
        #expect(server.problems.isEmpty, "\(server.problems)")

        let handshake = try #require(server.handshakes.first)
        #expect(handshake.path == "/v1/text-to-speech/voice-7/stream-input")
        #expect(handshake.query == "model_id=eleven_turbo_v2_5&output_format=pcm_24000&sync_alignment=true&inactivity_timeout=180")
        #expect(handshake.key == StreamInput.key)
        let opening = try #require(server.openings.first)
        #expect(opening["text"] as? String == " ")
        let settings = try #require(opening["voice_settings"] as? [String: Any])
        #expect(settings["stability"] as? Double == 0.4)
        #expect(settings["similarity_boost"] as? Double == 0.8)
        #expect(settings["style"] == nil)
        #expect(server.schedules == [[50, 120, 160, 290]])
        #expect(server.messages.map(\.kind) == [.opening, .piece("Hello there."), .flush, .closing])
        #expect(reading.audio == server.sentAudio)
        #expect(reading.utterances.count == 1)
    }

    @Test("without voice settings the opening message has none; chunk-length-schedule is passed as given")
    func scheduleAndNoSettings() throws {
        let server = try StreamInput.server()
        let driver = try ProviderDriver.make(server, keyEnv: "SLUICE_TEST_WS_KEY_2", ["chunk-length-schedule": .string("80, 200,500")])
        driver.endText()
        #expect(driver.readAll().ended)
        #expect(server.schedules == [[80, 200, 500]])
        #expect(server.openings.first?["voice_settings"] == nil)
        #expect(server.messages.map(\.kind) == [.opening, .closing])
    }

    @Test("a schedule outside 50 – 500, and quota-check on the WebSocket, are refused when the node is made", arguments: [
        ["chunk-length-schedule": ProviderDriver.Value.string("40,120")],
        ["chunk-length-schedule": .string("50,x")],
        ["quota-check": .boolean(true)],
    ])
    func badParameters(_ parameters: [String: ProviderDriver.Value]) throws {
        let server = try StreamInput.server()
        #expect { try ProviderDriver.make(server, keyEnv: "SLUICE_TEST_WS_KEY_3", parameters) } throws: { error in
            (error as? DriverFailure)?.code == "bad-parameter"
        }
    }

    @Test("pieces of 1–4 characters at 30 tokens a second reach the server as they arrive, a flush after each sentence; the words reach the host")
    func streamedPieces() throws {
        let server = try StreamInput.server()
        let sentences = ["Hello there, how are you today?", "I am fine.", "Thanks for asking!"]
        let text = sentences.joined(separator: " ")
        var tokens: [String] = []
        var index = text.startIndex
        var size = 0
        while index < text.endIndex {
            let end = text.index(index, offsetBy: [1, 3, 2, 4][size % 4], limitedBy: text.endIndex) ?? text.endIndex
            tokens.append(String(text[index..<end]))
            index = end
            size += 1
        }
        let folder = TemporaryFolder("sluice-ws")
        var configuration = SpeechConfiguration()
        configuration.provider = "elevenlabs"
        configuration.voice = "voice-7"
        configuration.settings = ["base-url": server.baseURL, "key-env": "SLUICE_TEST_WS_KEY_4"]
        configuration.output = .file(path: folder.path("out.wav"))
        configuration.pluginFolders = [CommandRunner.productsFolder.path]
        let speech = try withEnvironment(["SLUICE_TEST_WS_KEY_4": StreamInput.key]) { try SpeechController(configuration) }
        #expect(speech.feedsIncrementally)
        try speech.start()

        func letters(_ text: String) -> String { String(text.unicodeScalars.filter { !$0.properties.isWhitespace }.map(Character.init)) }
        func received() -> String {
            letters(server.messages.compactMap { if case .piece(let piece) = $0.kind { piece } else { nil } }.joined())
        }
        var given = ""
        for token in tokens {
            try speech.yield(text: token)
            given += token
            // The piece is on the server before the next one is given (a provider that held
            // pieces back until the sentence ended would fail here).
            let arrived = StreamInput.wait(upTo: 5) { received() == letters(given) }
            #expect(arrived, "after '\(given)' the server had '\(received())'")
            guard arrived else { break }
            usleep(33_333)
        }
        try speech.finish()
        let result = try speech.waitUntilFinished()
        #expect(result.report.failures.isEmpty, "\(result.report.failures)")
        #expect(result.utterances.count == sentences.count)
        // Word timing reached the host: every word of every sentence, in order.
        for (utterance, sentence) in zip(result.utterances, sentences) {
            #expect(utterance.words.map(\.text) == sentence.split(separator: " ").map(String.init))
            #expect(utterance.words.map(\.start) == utterance.words.map(\.start).sorted())
        }
        #expect(server.problems.isEmpty, "\(server.problems)")

        // In order: the opening, the pieces of each sentence and its flush, the closing.
        var log = server.messages.map(\.kind)
        #expect(log.first == .opening)
        #expect(log.last == .closing)
        log = Array(log.dropFirst().dropLast())
        var sentence = 0
        var heard = ""
        for kind in log {
            switch kind {
            case .piece(let piece): heard += piece
            case .flush:
                #expect(letters(heard) == letters(sentences[0...sentence].joined()), "flush \(sentence) after '\(heard)'")
                sentence += 1
            default: Issue.record("unexpected \(kind)")
            }
        }
        #expect(sentence == sentences.count)
        #expect(server.messages.filter { $0.kind != .opening }.count == log.count + 1)
    }

    @Test("a server that closed an idle socket is connected to again at the next utterance")
    func reconnectAfterIdleClose() throws {
        let server = try StreamInput.server { $0.failure = .closeFirstWhenIdle }
        let driver = try ProviderDriver.make(server, keyEnv: "SLUICE_TEST_WS_KEY_5")
        #expect(StreamInput.wait(upTo: 10) { server.closedConnections == 1 })
        driver.say("Still here.")
        driver.endText()
        let reading = driver.readAll()
        #expect(reading.ended, "\(String(describing: reading.error))")
        #expect(server.connections == 2)
        #expect(driver.counters()["connections"] == 2)
        #expect(reading.audio == server.sentAudio)
        #expect(server.messages.map(\.kind) == [.opening, .opening, .piece("Still here."), .flush, .closing])
    }

    @Test("a server that closes an idle socket just as text goes out, before answering, gets the text again on a new connection")
    func resendAfterCloseOnText() throws {
        let server = try StreamInput.server { $0.failure = .closeFirstOnText }
        let driver = try ProviderDriver.make(server, keyEnv: "SLUICE_TEST_WS_KEY_5B")
        driver.say("Still here.")
        driver.endText()
        let reading = driver.readAll()
        #expect(reading.ended, "\(String(describing: reading.error))")
        #expect(server.connections == 2)
        #expect(reading.audio == server.sentAudio)
        // The second connection got all of it, in order, and spoke it once.
        #expect(server.messages.filter { $0.connection == 2 }.map(\.kind) == [.opening, .piece("Still here."), .flush, .closing])
    }

    @Test("whitespace-only utterances are never sent and end at once, in their place")
    func whitespaceUtterances() throws {
        let server = try StreamInput.server()
        let driver = try ProviderDriver.make(server, keyEnv: "SLUICE_TEST_WS_KEY_6")
        driver.say("One.")
        driver.say("   ")
        driver.say("Two.")
        driver.endText()
        let reading = driver.readAll()
        #expect(reading.ended, "\(String(describing: reading.error))")
        #expect(reading.utterances.count == 3)
        guard reading.utterances.count == 3 else { return }
        #expect(reading.utterances[1].isEmpty)
        #expect(!reading.utterances[0].isEmpty && !reading.utterances[2].isEmpty)
        #expect(reading.audio == server.sentAudio)
        #expect(server.messages.map(\.kind) == [.opening, .piece("One."), .flush, .piece("Two."), .flush, .closing])
    }

    @Test("cancel closes the socket at once and reads end")
    func cancelClosesSocket() throws {
        let server = try StreamInput.server { $0.failure = .stall(afterAudioBytes: 0) }
        let driver = try ProviderDriver.make(server, keyEnv: "SLUICE_TEST_WS_KEY_7")
        driver.begin()
        driver.push("A long reply that never comes back")
        #expect(StreamInput.wait(upTo: 10) { server.messages.count == 2 })
        driver.cancel()
        #expect(driver.read() == .end)
        #expect(StreamInput.wait(upTo: 5) { server.closedConnections == 1 })
    }

    @Test("barge-in: the host's interrupt closes the old socket at once and the fresh instance connects at barge-in time")
    func bargeIn() throws {
        let server = try StreamInput.server { $0.failure = .stall(afterAudioBytes: 0) }
        let variable = "SLUICE_TEST_WS_KEY_8"
        let graph = try withEnvironment([variable: StreamInput.key]) { try StreamInput.graph(StreamInput.voice(server, keyEnv: variable)) }
        let source = try #require(graph.nodes.first { $0.name == "voice" }?.instance as? PluginProviderSource)
        source.beginUtterance()
        source.push(text: "A reply the user talks over")
        #expect(StreamInput.wait(upTo: 10) { server.messages.count == 2 })
        let resumed = withEnvironment([variable: StreamInput.key]) { source.interrupt() }
        #expect(resumed != nil)
        // The old socket is closed, and the replacement's handshake and opening message
        // happen now, before any text of the next reply.
        #expect(StreamInput.wait(upTo: 10) { server.closedConnections == 1 && server.connections == 2 })
        #expect(StreamInput.wait(upTo: 10) { server.messages.filter { $0.connection == 2 }.map(\.kind) == [.opening] })
    }

    @Test("the `http` transport is still the HTTP endpoint (ElevenLabsProviderTests covers it); `websocket` is the default")
    func transportDefault() throws {
        let library = try PluginLibrary.load(path: StreamInput.pluginPath)
        let parameter = try #require(library.nodeTypes.first?.descriptor.parameters.first { $0.name == "transport" })
        #expect(parameter.defaultValue == .string("websocket"))
        #expect(parameter.type == .choice(["websocket", "http"]))
    }
}
