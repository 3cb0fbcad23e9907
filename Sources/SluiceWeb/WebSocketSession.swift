import Dispatch
import Foundation
import NIOCore
import NIOWebSocket
import SluiceControl
import Synchronization

/// One page's WebSocket as the rest of Sluice sees it: what is written to it, and how much
/// waits unwritten. Events are dropped (and counted, in the `dropped` field of the next one
/// that goes) while more than `eventLimit` bytes wait: a page that stops reading costs the
/// graph nothing. Replies are never dropped; a page with that much unread is not read from
/// until it catches up (`WebSocketSession`).
///
/// Threading: [thread-safe].
final class WebClient: Sendable {
    /// The most bytes of events that may wait for one page.
    static let eventLimit = 256 * 1024

    let channel: any Channel
    private let waiting = Atomic<Int>(0)
    private let dropped = Atomic<Int>(0)

    init(channel: any Channel) { self.channel = channel }

    var isOpen: Bool { channel.isActive }

    /// Sends a reply (never dropped).
    func send(reply text: String) {
        write(text)
    }

    /// Sends an event object unless too much waits; false when it was dropped.
    @discardableResult
    func send(event object: [String: Any]) -> Bool {
        guard waiting.load(ordering: .relaxed) < Self.eventLimit else {
            dropped.add(1, ordering: .relaxed)
            return false
        }
        var object = object
        let lost = dropped.exchange(0, ordering: .relaxed)
        if lost > 0 { object["dropped"] = lost }
        write(ControlJSON.encode(object))
        return true
    }

    private func write(_ text: String) {
        let count = text.utf8.count
        waiting.add(count, ordering: .relaxed)
        let frame = WebSocketFrame(fin: true, opcode: .text, data: channel.allocator.buffer(string: text))
        let promise = channel.eventLoop.makePromise(of: Void.self)
        promise.futureResult.whenComplete { [self] _ in waiting.subtract(count, ordering: .relaxed) }
        channel.writeAndFlush(frame, promise: promise)
    }

    func close() { channel.close(promise: nil) }
}

/// The pages connected to a served graph, as one `EventListener` of its event stream.
final class WebEventHub: EventListener {
    private let clients = Mutex<[WebClient]>([])

    var count: Int { clients.withLock { $0.count } }

    func add(_ client: WebClient) { clients.withLock { $0.append(client) } }

    func remove(_ client: WebClient) { clients.withLock { $0.removeAll { $0 === client } } }

    func closeAll() {
        for client in clients.withLock({ $0 }) { client.close() }
    }

    var isListening: Bool { count > 0 }
    /// Pages draw meters: they always take levels.
    var wantsLevels: Bool { isListening }

    func deliver(_ event: String, _ fields: [String: any Sendable]) {
        var object: [String: Any] = fields.mapValues { $0 as Any }
        object["event"] = event
        for client in clients.withLock({ $0 }) where client.isOpen { client.send(event: object) }
    }
}

/// One page's WebSocket: each text message one control request, answered in order; pings
/// answered; the connection closed on a close frame.
final class WebSocketSession: ChannelInboundHandler, @unchecked Sendable {
    // SAFETY (@unchecked Sendable): its mutable state is used on its channel's event loop only;
    // requests run on `queue` and touch only the client and the served graph (thread-safe).
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    /// The most requests of one page waiting to be carried out; past it, `busy`.
    static let pendingLimit = 64

    private let client: WebClient
    private let site: WebSite
    private let queue = DispatchQueue(label: "sluice-web-requests")
    private let pending = Atomic<Int>(0)

    init(client: WebClient, site: WebSite) {
        self.client = client
        self.site = site
    }

    func handlerAdded(context: ChannelHandlerContext) {
        site.hub.add(client)
        client.send(event: ["event": "hello", "graph": site.served.name])
    }

    func channelInactive(context: ChannelHandlerContext) {
        site.hub.remove(client)
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text:
            let bytes = Array(frame.unmaskedData.readableBytesView)
            handle(bytes)
            // A page that does not read its replies is not read from until it does.
            if !context.channel.isWritable { context.channel.setOption(ChannelOptions.autoRead, value: false).whenComplete { _ in } }
        case .binary:
            client.send(reply: ControlJSON.reply(
                .failure(ControlError(code: "bad-json", message: "requests are text messages of JSON, like {\"command\":\"status\"}")),
                command: nil, id: nil))
        case .ping:
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)), promise: nil)
        case .connectionClose:
            var data = context.channel.allocator.buffer(capacity: 2)
            data.write(webSocketErrorCode: .normalClosure)
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: data))).whenComplete { _ in
                channel.close(promise: nil)
            }
        default:
            break
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { context.channel.setOption(ChannelOptions.autoRead, value: true).whenComplete { _ in } }
        context.fireChannelWritabilityChanged()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    /// Parses a request now (a malformed one is answered at once) and carries it out on the
    /// connection's queue, in order: an untimed `set` waits for its period there, not here.
    private func handle(_ bytes: [UInt8]) {
        let (request, id) = ControlJSON.parse(bytes)
        let command = try? request.get().name
        guard case .success(let parsed) = request else {
            client.send(reply: ControlJSON.reply(request.map { _ in [:] }, command: command, id: id))
            return
        }
        guard pending.add(1, ordering: .relaxed).newValue <= Self.pendingLimit else {
            pending.subtract(1, ordering: .relaxed)
            client.send(reply: ControlJSON.reply(
                .failure(ControlError(code: "busy", message: "\(Self.pendingLimit) requests of this page wait; send more when they are answered")),
                command: command, id: id))
            return
        }
        // SAFETY: the request's `id` is a String or an NSNumber from JSONSerialization, never
        // changed after parsing; the closure only echoes it in the reply.
        nonisolated(unsafe) let identifier = id
        queue.async { [self, client, site] in
            let outcome: Result<[String: any Sendable], ControlError>
            switch parsed {
            case .watch:
                // A page always gets the events, levels included.
                outcome = .success(["graph": site.served.name])
            case .subscribe, .unsubscribe:
                outcome = .failure(ControlError(code: "subscribe-needs-osc", message: "a page gets the events already; subscribe works over OSC"))
            default:
                outcome = site.served.handle(parsed)
            }
            client.send(reply: ControlJSON.reply(outcome, command: command, id: identifier))
            pending.subtract(1, ordering: .relaxed)
        }
    }
}
