import NIOCore
import NIOEmbedded
import NIOWebSocket
import SluiceControl
import Testing

@testable import SluiceWeb

/// What a page's socket is written: every event, in order, as a message of its own; while the
/// page takes levels, other events wait for the next level event (or a look of the control
/// loop after `longestWait`) and go out with it in one write.
@Suite struct WebSocketSessionTests {
    /// The texts of the frames written so far.
    static func written(_ channel: EmbeddedChannel) throws -> [String] {
        channel.embeddedEventLoop.run()
        var texts: [String] = []
        while let frame = try channel.readOutbound(as: WebSocketFrame.self) {
            texts.append(String(buffer: frame.unmaskedData))
        }
        return texts
    }

    static func event(_ name: String) -> EncodedEvent { EncodedEvent(name, [:], json: #"{"event":"\#(name)"}"#) }

    @Test("with levels, a word waits for the next level event and goes out before it, in one write")
    func eventsWaitForTheLevelEvent() throws {
        let channel = EmbeddedChannel()
        let client = WebClient(channel: channel)
        #expect(client.send(event: Self.event("word")))
        #expect(try Self.written(channel).isEmpty)
        client.send(event: Self.event("level"))
        #expect(try Self.written(channel) == [#"{"event":"word"}"#, #"{"event":"level"}"#])
    }

    @Test("a reply takes what waits with it at once; a look sends what waited long enough, and only that")
    func repliesAndLooksSendWhatWaits() throws {
        let channel = EmbeddedChannel()
        let client = WebClient(channel: channel)
        client.send(event: Self.event("utterance-started"))
        client.send(reply: #"{"ok":true}"#)
        #expect(try Self.written(channel) == [#"{"event":"utterance-started"}"#, #"{"ok":true}"#])

        client.send(event: Self.event("word"))
        client.flushWaiting(after: 3600)
        #expect(try Self.written(channel).isEmpty)
        client.flushWaiting(after: 0)
        #expect(try Self.written(channel) == [#"{"event":"word"}"#])
    }

    @Test("a page without levels gets each event at once")
    func withoutLevelsAtOnce() throws {
        let channel = EmbeddedChannel()
        let client = WebClient(channel: channel)
        client.wantsLevels.store(false, ordering: .relaxed)
        client.send(event: Self.event("word"))
        #expect(try Self.written(channel) == [#"{"event":"word"}"#])
    }
}
