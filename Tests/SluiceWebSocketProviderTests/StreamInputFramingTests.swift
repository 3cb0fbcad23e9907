import Foundation
import ProviderTestSupport
import SluiceGraph
import Testing
import WebSocketTestSupport

/// The audio that plays is exactly what the server sent, however it framed its messages.
@Suite struct StreamInputFramingTests {
    enum Framing: String, CaseIterable, CustomStringConvertible {
        case usual, oneByteMessages, bigMessages, fragmentedJSON, pings, snakeCaseFinal
        var description: String { rawValue }

        func apply(_ script: inout StreamInputTestServer.Script) {
            switch self {
            case .usual: break
            case .oneByteMessages: script.messageBytes = 1
            case .bigMessages: script.messageBytes = 64 << 10
            case .fragmentedJSON: script.fragmentBytes = 7
            case .pings: script.pings = true
            case .snakeCaseFinal: script.snakeCaseFinal = true
            }
        }

        /// One-byte messages are many (a message per byte): short text for them.
        var text: [String] {
            switch self {
            case .oneByteMessages: ["Hi there.", "Bye."]
            default:
                [
                    "Hello there, this is a test.",
                    String(repeating: "A rather long sentence that keeps going, ", count: 4) + "and ends.",
                    "Bye.",
                ]
            }
        }
    }

    @Test("audio bit-exact to what the server sent", arguments: Framing.allCases)
    func bitExact(_ framing: Framing) throws {
        let server = try StreamInput.server { framing.apply(&$0) }
        let (samples, report) = try StreamInput.render(server, keyEnv: "SLUICE_TEST_WS_FRAMING_\(framing.rawValue.uppercased())", text: framing.text)
        #expect(report.failures.isEmpty, "\(report.failures)")
        #expect(server.problems.isEmpty, "\(server.problems)")
        let sent = server.sentAudio
        #expect(!sent.isEmpty)
        expectSame(samples, StreamInput.floats(sent))
        if framing == .bigMessages { #expect(server.audioMessages < 8) }
        if framing == .oneByteMessages { #expect(server.audioMessages == sent.count) }
    }

    @Test("backpressure: a server sending far more than the buffer holds waits for the reads; memory stays bounded")
    func backpressure() throws {
        // 1,200 characters: 28.8 s of audio, 1.4 MB, against a 64 KiB buffer read slowly.
        let server = try StreamInput.server { $0.messageBytes = 16 << 10 }
        let driver = try ProviderDriver.make(server, keyEnv: "SLUICE_TEST_WS_BACKPRESSURE", ["buffer": .number(0.1)])
        let sentence = String(repeating: "Plenty of words to speak here. ", count: 40)
        driver.say(sentence)
        driver.endText()
        // The server speaks once the flush is in; let it run ahead of the reads.
        #expect(StreamInput.wait(upTo: 10) { server.audioMessages > 0 })
        usleep(200_000)
        let reading = driver.readAll(capacity: 1_000, timeout: 60)
        #expect(reading.ended, "\(String(describing: reading.error))")
        #expect(reading.audio == server.sentAudio)
        let counters = driver.counters()
        let capacity = try #require(counters["buffer-bytes"])
        #expect(capacity == 65_536)
        #expect(try #require(counters["peak-buffered-bytes"]) <= capacity)
        #expect(try #require(counters["pauses"]) > 0)
        #expect(counters["received-bytes"] == server.sentAudio.count)
    }
}
