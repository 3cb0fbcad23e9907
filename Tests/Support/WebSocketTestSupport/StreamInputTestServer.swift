import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket
import Synchronization

/// A loopback server speaking ElevenLabs' stream-input protocol
/// (`/v1/text-to-speech/{voice}/stream-input`) the way its API reference describes it, on
/// NIOWebSocket's server upgrader.
///
/// It checks the handshake (path, query, `xi-api-key`), logs every client message in order
/// with its arrival time, and speaks like the service: text is buffered until it holds the
/// `chunk_length_schedule`'s next length of characters (then everything up to the last
/// space is spoken) or a flush comes (then all of it); the closing `{"text": ""}` speaks
/// the rest, then `{"isFinal": true}` and a close 1000. Every character (Unicode scalar,
/// spaces included) becomes `framesPerCharacter` frames of PCM that depend on the
/// character and its position; audio goes out in messages of `messageBytes` bytes with the
/// alignment of the characters whose audio begins in each (times in milliseconds from the
/// start of that message's audio). Everything sent is recorded, so a test compares what it
/// played with exactly what the server sent.
///
/// Hostile framing and failures are scripted (`Script`).
public final class StreamInputTestServer: Sendable {
    public struct Script: Sendable {
        public var key: String
        public var voice = "voice-7"
        public var outputFormat = "pcm_24000"
        public var framesPerCharacter = 240
        /// PCM bytes per audio message (1 byte and 64 KiB are the hostile extremes).
        public var messageBytes = 4_800
        /// Split every JSON message over continuation frames of this many bytes.
        public var fragmentBytes: Int?
        /// A ping before every message.
        public var pings = false
        /// `is_final` instead of `isFinal`.
        public var snakeCaseFinal = false
        public var failure: Failure?

        public init(key: String) { self.key = key }
    }

    public enum Failure: Sendable {
        /// The handshake is answered with this status and JSON body instead of 101.
        case refuseHandshake(status: Int, body: String)
        /// This JSON error message, then a close with `closeCode` — after the opening
        /// message, or when the first audio would go out.
        case errorMessage(String, closeCode: UInt16, onOpening: Bool)
        /// A close frame with `code` once this many bytes of audio went out.
        case close(code: UInt16, reason: String, afterAudioBytes: Int)
        /// The TCP connection closes, no close frame, once this many bytes of audio went out.
        case drop(afterAudioBytes: Int)
        /// Nothing more is sent once this many bytes of audio went out (reads go on).
        case stall(afterAudioBytes: Int)
        /// Once this many bytes of audio went out, a message with no audio
        /// (`{"audio":null,"isFinal":null}`) every `interval` seconds, for as long as the
        /// connection lasts: busy, never finishing.
        case emptyMessages(afterAudioBytes: Int, interval: Double)
        /// Once this many bytes of audio went out, every character of every message is said
        /// to start at this many milliseconds.
        case alignmentStarts(Double, afterAudioBytes: Int)
        /// TCP is accepted, the handshake never answered.
        case silentHandshake
        /// The first connection is closed (1000, as an idle socket) right after its opening
        /// message; later ones behave.
        case closeFirstWhenIdle
        /// The first connection is closed (1000, as an idle socket timing out) when its first
        /// text after the opening arrives, before any answer: the race of an inactivity close
        /// with new text. Later ones behave.
        case closeFirstOnText
    }

    /// A client message as logged.
    public struct ClientMessage: Sendable, Hashable {
        public enum Kind: Sendable, Hashable {
            case opening
            case piece(String)
            case flush
            case closing
            case other(String)
        }

        public var connection: Int
        public var time: Double
        public var kind: Kind
        public var json: String
    }

    public struct Handshake: Sendable, Hashable {
        public var path: String
        public var query: String
        public var key: String?
    }

    /// One character spoken: where its audio begins in its connection's audio, and the
    /// alignment the server sent for it.
    public struct SpokenCharacter: Sendable, Hashable {
        public var connection: Int
        public var character: String
        public var audioOffset: Int
        /// Where the audio of the message that carried its alignment begins.
        public var messageStart: Int
        public var message: Int
        public var startMilliseconds: Int
    }

    struct Record {
        var handshakes: [Handshake] = []
        var messages: [ClientMessage] = []
        var problems: [String] = []
        var schedules: [[Int]] = []
        var openings: [String] = []
        var audio: [Int: [UInt8]] = [:]
        var spoken: [SpokenCharacter] = []
        var connections = 0
        var closedConnections = 0
        var audioMessages = 0
    }

    let script: Script
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private let channel: any Channel
    private let record = Mutex(Record())
    public let port: Int

    public init(_ script: Script) throws {
        self.script = script
        let silent = { if case .silentHandshake = script.failure { return true } else { return false } }()
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
        if silent {
            channel = try bootstrap.childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(Silence()) }
            }.bind(host: "127.0.0.1", port: 0).wait()
        } else {
            let box = Weak()
            channel = try bootstrap.childChannelInitializer { channel in
                guard let server = box.server else { return channel.close() }
                return server.setUp(channel)
            }.bind(host: "127.0.0.1", port: 0).wait()
            port = channel.localAddress?.port ?? 0
            box.server = self
            return
        }
        port = channel.localAddress?.port ?? 0
    }

    deinit {
        // A handler's brief strong reference (its `server` is weak) may be the last one, so
        // this can run on the group's own thread, where waiting for the group traps: there,
        // close and shut down without waiting.
        if MultiThreadedEventLoopGroup.currentEventLoop != nil {
            channel.close(promise: nil)
            group.shutdownGracefully { _ in }
            return
        }
        try? channel.close().wait()
        try? group.syncShutdownGracefully()
    }

    /// `http://127.0.0.1:<port>`: the provider's `base-url`.
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    public var handshakes: [Handshake] { record.withLock { $0.handshakes } }
    public var messages: [ClientMessage] { record.withLock { $0.messages } }
    /// What the server found wrong in the requests (empty when every one was as the API wants).
    public var problems: [String] { record.withLock { $0.problems } }
    public var schedules: [[Int]] { record.withLock { $0.schedules } }
    /// Each connection's opening message.
    public var openings: [[String: Any]] {
        record.withLock { $0.openings }.map { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] ?? [:] }
    }
    /// All audio sent, connection after connection.
    public var sentAudio: [UInt8] { record.withLock { r in r.audio.keys.sorted().flatMap { r.audio[$0]! } } }
    public var spoken: [SpokenCharacter] { record.withLock { $0.spoken } }
    public var connections: Int { record.withLock { $0.connections } }
    public var closedConnections: Int { record.withLock { $0.closedConnections } }
    public var audioMessages: Int { record.withLock { $0.audioMessages } }

    /// Seconds on the monotonic clock, as the log's times.
    public static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// The PCM of character `scalar`, the `index`-th the connection speaks.
    public static func pcm(_ scalar: Unicode.Scalar, index: Int, frames: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: frames * 2)
        for frame in 0..<frames {
            let value = UInt16(truncatingIfNeeded: (Int(scalar.value) &* 2_654_435_761 &+ index &* 40_503 &+ frame &* 7_919) >> 7)
            bytes[2 * frame] = UInt8(value & 0xFF)
            bytes[2 * frame + 1] = UInt8(value >> 8)
        }
        return bytes
    }

    private final class Weak: @unchecked Sendable {
        // SAFETY (@unchecked Sendable): set once, before any connection can arrive.
        weak var server: StreamInputTestServer?
    }

    // MARK: Connections

    private func setUp(_ channel: any Channel) -> EventLoopFuture<Void> {
        let upgrader = NIOWebSocketServerUpgrader(
            maxFrameSize: 1 << 20,
            shouldUpgrade: { [self] channel, head in
                channel.eventLoop.makeSucceededFuture(accept(head) ? HTTPHeaders() : nil)
            },
            upgradePipelineHandler: { [self] channel, _ in
                let number = record.withLock { r -> Int in
                    r.connections += 1
                    return r.connections
                }
                // The refusal handler stays out of the WebSocket's way (it sits before the frame
                // codec the upgrader appended).
                return channel.pipeline.removeHandler(name: "refusal").flatMapThrowing {
                    try channel.pipeline.syncOperations.addHandler(
                        NIOWebSocketFrameAggregator(minNonFinalFragmentSize: 0, maxAccumulatedFrameCount: 10_000, maxAccumulatedFrameSize: 1 << 20))
                    try channel.pipeline.syncOperations.addHandler(Session(server: self, connection: number))
                }
            })
        return channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.configureHTTPServerPipeline(
                withServerUpgrade: (upgraders: [upgrader], completionHandler: { _ in }))
            try channel.pipeline.syncOperations.addHandler(Refusal(server: self), name: "refusal")
        }
    }

    /// Checks and records a handshake; false refuses it (the `Refusal` handler answers).
    private func accept(_ head: HTTPRequestHead) -> Bool {
        let parts = head.uri.split(separator: "?", maxSplits: 1)
        let path = String(parts.first ?? "")
        let query = parts.count > 1 ? String(parts[1]) : ""
        let key = head.headers["xi-api-key"].first
        var values: [String: String] = [:]
        for pair in query.split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1)
            values[String(kv[0])] = kv.count > 1 ? String(kv[1]).removingPercentEncoding ?? String(kv[1]) : ""
        }
        var problems: [String] = []
        if path != "/v1/text-to-speech/\(script.voice)/stream-input" { problems.append("path \(path)") }
        if values["model_id"]?.isEmpty != false { problems.append("no model_id") }
        if values["output_format"] != script.outputFormat { problems.append("output_format \(values["output_format"] ?? "none")") }
        if values["sync_alignment"] != "true" { problems.append("sync_alignment \(values["sync_alignment"] ?? "none")") }
        if values["inactivity_timeout"] != "180" { problems.append("inactivity_timeout \(values["inactivity_timeout"] ?? "none")") }
        if key != script.key { problems.append("xi-api-key") }
        record.withLock { r in
            r.handshakes.append(Handshake(path: path, query: query, key: key))
            r.problems += problems
        }
        if case .refuseHandshake = script.failure { return false }
        return problems.isEmpty
    }

    fileprivate func log(_ message: ClientMessage) {
        record.withLock { $0.messages.append(message) }
    }

    fileprivate func noteOpening(_ json: String, schedule: [Int]) {
        record.withLock { r in
            r.openings.append(json)
            r.schedules.append(schedule)
        }
    }

    fileprivate func problem(_ text: String) {
        record.withLock { $0.problems.append(text) }
    }

    fileprivate func recordAudio(connection: Int, _ bytes: [UInt8], spoken: [SpokenCharacter]) {
        record.withLock { r in
            r.audio[connection, default: []] += bytes
            r.spoken += spoken
            r.audioMessages += 1
        }
    }

    fileprivate func connectionClosed() {
        record.withLock { $0.closedConnections += 1 }
    }

    fileprivate func audioSent(connection: Int) -> Int {
        record.withLock { $0.audio[connection]?.count ?? 0 }
    }
}

/// Answers a refused handshake: the script's status and body, or 400/401 naming the problem.
private final class Refusal: ChannelInboundHandler, RemovableChannelHandler, @unchecked Sendable {
    // SAFETY (@unchecked Sendable): used on its channel's event loop only.
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart
    /// Weak: the server (and its event loop) must not end on its own loop's thread.
    weak var server: StreamInputTestServer?

    init(server: StreamInputTestServer) { self.server = server }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .end = unwrapInboundIn(data), let server else { return }
        var status = 400
        var body = #"{"detail": {"status": "bad_request", "message": "not a stream-input handshake"}}"#
        if case .refuseHandshake(let refusedStatus, let refusedBody) = server.script.failure {
            status = refusedStatus
            body = refusedBody
        } else if server.problems.contains("xi-api-key") {
            status = 401
            body = #"{"detail": {"status": "invalid_api_key", "message": "Invalid API key"}}"#
        }
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        headers.add(name: "Content-Length", value: "\(body.utf8.count)")
        headers.add(name: "Connection", value: "close")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .init(statusCode: status), headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: body)))), promise: nil)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }
}

/// Accepts TCP and says nothing.
private final class Silence: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
}

/// One stream-input session: the protocol as the service speaks it.
private final class Session: ChannelInboundHandler, @unchecked Sendable {
    // SAFETY (@unchecked Sendable): used on its channel's event loop only.
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    /// Weak: the server (and its event loop) must not end on its own loop's thread.
    weak var server: StreamInputTestServer?
    let connection: Int
    let script: StreamInputTestServer.Script
    var opened = false
    var schedule: [Int] = [120, 160, 250, 290]
    var generations = 0
    var pending: [Unicode.Scalar] = []
    var spokenCharacters = 0
    var messageNumber = 0
    /// Nothing more goes out (stalled, closed, failed).
    var silent = false
    var closing = false

    init(server: StreamInputTestServer, connection: Int) {
        self.server = server
        self.connection = connection
        script = server.script
    }

    func channelInactive(context: ChannelHandlerContext) {
        server?.connectionClosed()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text:
            var buffer = frame.unmaskedData
            let text = buffer.readString(length: buffer.readableBytes) ?? ""
            received(text, context: context)
        case .connectionClose:
            if closing {
                context.close(promise: nil)
            } else {
                closing = true
                send(close: 1000, reason: "", context: context)
            }
        case .ping:
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)), promise: nil)
        default:
            break
        }
    }

    private func received(_ text: String, context: ChannelHandlerContext) {
        let time = StreamInputTestServer.now()
        guard let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any],
            let piece = object["text"] as? String
        else {
            server?.problem("not a text message: \(text)")
            server?.log(.init(connection: connection, time: time, kind: .other(text), json: text))
            return
        }
        if !opened {
            opened = true
            let config = object["generation_config"] as? [String: Any]
            if let values = config?["chunk_length_schedule"] as? [NSNumber] { schedule = values.map(\.intValue) }
            if piece != " " { server?.problem("opening text '\(piece)'") }
            server?.noteOpening(text, schedule: schedule)
            server?.log(.init(connection: connection, time: time, kind: .opening, json: text))
            if case .errorMessage(let message, let code, true) = script.failure {
                send(text: message, context: context)
                closeNow(code: code, reason: "error", context: context)
            }
            if case .closeFirstWhenIdle = script.failure, connection == 1 {
                closeNow(code: 1000, reason: "inactivity", context: context)
            }
            return
        }
        if case .closeFirstOnText = script.failure, connection == 1 {
            server?.log(.init(connection: connection, time: time, kind: .other(text), json: text))
            closeNow(code: 1000, reason: "inactivity", context: context)
            return
        }
        if object["flush"] as? Bool == true {
            server?.log(.init(connection: connection, time: time, kind: .flush, json: text))
            pending += piece.unicodeScalars
            speak(pending.count, context: context)
        } else if piece.isEmpty {
            server?.log(.init(connection: connection, time: time, kind: .closing, json: text))
            speak(pending.count, context: context)
            guard !silent else { return }
            send(text: script.snakeCaseFinal ? #"{"audio": null, "is_final": true}"# : #"{"audio": null, "isFinal": true, "alignment": null}"#, context: context)
            closeNow(code: 1000, reason: "", context: context)
        } else {
            server?.log(.init(connection: connection, time: time, kind: .piece(piece), json: text))
            pending += piece.unicodeScalars
            let threshold = schedule[min(generations, schedule.count - 1)]
            if pending.count >= threshold, let lastSpace = pending.lastIndex(where: { $0.properties.isWhitespace }) {
                speak(lastSpace + 1, context: context)
            }
        }
    }

    /// Speaks the first `count` buffered characters.
    private func speak(_ count: Int, context: ChannelHandlerContext) {
        guard count > 0, !silent else { return }
        let characters = Array(pending[0..<count])
        pending.removeFirst(count)
        generations += 1
        if case .errorMessage(let message, let code, false) = script.failure {
            send(text: message, context: context)
            closeNow(code: code, reason: "error", context: context)
            return
        }
        var pcm: [UInt8] = []
        var starts: [Int] = []
        for character in characters {
            starts.append(pcm.count)
            pcm += StreamInputTestServer.pcm(character, index: spokenCharacters, frames: script.framesPerCharacter)
            spokenCharacters += 1
        }
        let rate = Int(script.outputFormat.dropFirst("pcm_".count)) ?? 24_000
        var offset = 0
        var next = 0
        while offset < pcm.count {
            let sent = server?.audioSent(connection: connection) ?? 0
            switch script.failure {
            case .close(let code, let reason, let after) where sent >= after:
                closeNow(code: code, reason: reason, context: context)
                return
            case .drop(let after) where sent >= after:
                silent = true
                context.close(promise: nil)
                return
            case .stall(let after) where sent >= after:
                silent = true
                return
            case .emptyMessages(let after, let interval) where sent >= after:
                silent = true
                let channel = context.channel
                let frame = WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(string: #"{"audio":null,"isFinal":null}"#))
                channel.eventLoop.scheduleRepeatedTask(initialDelay: .zero, delay: .milliseconds(Int64(interval * 1000))) { task in
                    guard channel.isActive else { return task.cancel() }
                    channel.writeAndFlush(frame, promise: nil)
                }
                return
            default: break
            }
            let end = min(pcm.count, offset + script.messageBytes)
            var chars: [String] = []
            var times: [Int] = []
            var durations: [Int] = []
            var spoken: [StreamInputTestServer.SpokenCharacter] = []
            messageNumber += 1
            while next < characters.count && starts[next] < end {
                let milliseconds = Int((Double(starts[next] - offset) / 2 * 1000 / Double(rate)).rounded())
                chars.append(String(characters[next]))
                times.append(milliseconds)
                durations.append(Int((Double(script.framesPerCharacter) * 1000 / Double(rate)).rounded()))
                spoken.append(.init(
                    connection: connection, character: String(characters[next]), audioOffset: sent + starts[next] - offset,
                    messageStart: sent, message: messageNumber, startMilliseconds: milliseconds))
                next += 1
            }
            let audio = Array(pcm[offset..<end])
            var alignment: [String: Any] = ["chars": chars, "charStartTimesMs": times, "charDurationsMs": durations]
            if case .alignmentStarts(let start, let after) = script.failure, sent >= after {
                alignment["charStartTimesMs"] = times.map { _ in start }
            }
            let message: [String: Any] = [
                "audio": Data(audio).base64EncodedString(), "isFinal": NSNull(),
                "alignment": alignment, "normalizedAlignment": alignment,
            ]
            let json = String(decoding: try! JSONSerialization.data(withJSONObject: message, options: [.sortedKeys]), as: UTF8.self)
            server?.recordAudio(connection: connection, audio, spoken: spoken)
            send(text: json, context: context)
            offset = end
        }
    }

    private func send(text: String, context: ChannelHandlerContext) {
        if script.pings {
            context.write(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .ping, data: ByteBuffer(string: "ping"))), promise: nil)
        }
        let bytes = Array(text.utf8)
        if let size = script.fragmentBytes, bytes.count > size {
            var start = 0
            while start < bytes.count {
                let end = min(bytes.count, start + size)
                let frame = WebSocketFrame(
                    fin: end == bytes.count, opcode: start == 0 ? .text : .continuation, data: ByteBuffer(bytes: bytes[start..<end]))
                context.write(wrapOutboundOut(frame), promise: nil)
                start = end
            }
        } else {
            context.write(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(bytes: bytes))), promise: nil)
        }
        context.flush()
    }

    private func send(close code: UInt16, reason: String, context: ChannelHandlerContext) {
        var buffer = ByteBuffer()
        buffer.writeInteger(code)
        buffer.writeString(reason)
        context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: buffer)), promise: nil)
    }

    /// A close frame, then TCP closes once the client answers (or after a second).
    private func closeNow(code: UInt16, reason: String, context: ChannelHandlerContext) {
        guard !closing else { return }
        silent = true
        closing = true
        send(close: code, reason: reason, context: context)
        let channel = context.channel
        channel.eventLoop.scheduleTask(in: .seconds(1)) { channel.close(promise: nil) }
    }
}
