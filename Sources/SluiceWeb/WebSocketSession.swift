import Dispatch
import Foundation
import NIOCore
import NIOWebSocket
import SluiceControl
import Synchronization

/// One page's WebSocket as the rest of Sluice sees it: what is written to it. Events are
/// dropped (and counted, in the `dropped` field of the next one that goes) while its channel
/// is not writable, more than `eventLimit` bytes waiting (its write buffer's high-water mark):
/// a page that stops reading costs the graph nothing. Replies are never dropped; a page with
/// that much unread is not read from until it catches up (`WebSocketSession`).
///
/// Threading: [thread-safe].
final class WebClient: Sendable {
    /// The most bytes of events that may wait for one page.
    static let eventLimit = 256 * 1024

    /// The write buffer's marks: unwritable above `eventLimit` bytes waiting, writable again
    /// below half of it.
    static let waterMark = ChannelOptions.Types.WriteBufferWaterMark(low: eventLimit / 2, high: eventLimit)

    let channel: any Channel
    private let dropped = Atomic<Int>(0)

    /// Messages waiting to be written, since when the oldest has waited, and whether a write
    /// of them is on its way to the event loop.
    private struct Outbox {
        var texts: [String] = []
        var since: UInt64 = 0
        var writing = false
    }
    private let outbox = Mutex<Outbox>(Outbox())

    /// The longest an event waits for company while the page takes levels.
    static let longestWait = 0.1

    init(channel: any Channel) { self.channel = channel }

    var isOpen: Bool { channel.isActive }

    /// Sends a reply (never dropped), with the events that wait before it.
    func send(reply text: String) {
        enqueue(text, writeNow: true)
    }

    /// Whether the page wants `level`, `meter` and `control-output` events: a page asks for
    /// them while it is shown (`watch` with `levels`), and not while hidden.
    let wantsLevels = Atomic<Bool>(true)

    /// Sends an event unless too much waits; false when it was dropped.
    ///
    /// Each write costs the event loop a wake-up, which costs far more than the bytes: so
    /// while the page takes levels, other events wait for the next level event (ten a second)
    /// and go out with it in one write, and a look of the control loop sends any that waited
    /// `longestWait` (`flushWaiting`). A page without levels gets each event at once.
    @discardableResult
    func send(event: EncodedEvent) -> Bool {
        // Read from any thread: NIO keeps a channel's writability in an atomic. One page's
        // burst between two turns of its event loop may overshoot the mark by those events.
        guard channel.isWritable else {
            dropped.add(1, ordering: .relaxed)
            return false
        }
        let lost = dropped.exchange(0, ordering: .relaxed)
        let now = EventStream.levelEvents.contains(event.name) || !wantsLevels.load(ordering: .relaxed)
        enqueue(event.json(adding: lost > 0 ? ["dropped": lost] : [:]), writeNow: now)
        return true
    }

    /// Writes what waits, if the oldest has waited `seconds` or more.
    func flushWaiting(after seconds: Double) {
        let now = DispatchTime.now().uptimeNanoseconds
        let due = outbox.withLock { box -> Bool in
            guard !box.texts.isEmpty, !box.writing, Double(now &- box.since) >= seconds * 1e9 else { return false }
            box.writing = true
            return true
        }
        if due { channel.eventLoop.execute { [self] in writeWaiting() } }
    }

    private func enqueue(_ text: String, writeNow: Bool) {
        let start = outbox.withLock { box -> Bool in
            if box.texts.isEmpty { box.since = DispatchTime.now().uptimeNanoseconds }
            box.texts.append(text)
            guard writeNow, !box.writing else { return false }
            box.writing = true
            return true
        }
        if start { channel.eventLoop.execute { [self] in writeWaiting() } }
    }

    /// On the event loop: every waiting message as a frame of its own, in order, one flush.
    private func writeWaiting() {
        let texts = outbox.withLock { box -> [String] in
            let texts = box.texts
            box.texts = []
            box.writing = false
            return texts
        }
        for text in texts {
            channel.write(WebSocketFrame(fin: true, opcode: .text, data: channel.allocator.buffer(string: text)), promise: nil)
        }
        channel.flush()
    }

    func close() { channel.close(promise: nil) }
}

/// The pages connected to a served graph, as one `EventListener` of its event stream.
final class WebEventHub: EventListener {
    private let clients = Mutex<[WebClient]>([])

    var count: Int { clients.withLock { $0.count } }

    func add(_ client: WebClient) { clients.withLock { $0.append(client) } }

    func remove(_ client: WebClient) { clients.withLock { $0.removeAll { $0 === client } } }

    /// Closes every page's connection, after what waits for it; nothing more is written to
    /// any.
    func closeAll() {
        closed.store(true, ordering: .releasing)
        for client in clients.withLock({ $0 }) {
            client.flushWaiting(after: 0)
            client.close()
        }
    }

    /// Events that waited for company long enough go out now.
    func lookEnded() {
        for client in clients.withLock({ $0 }) where client.isOpen { client.flushWaiting(after: WebClient.longestWait) }
    }

    /// Set by `closeAll`: the server is stopping.
    let closed = Atomic<Bool>(false)

    var isListening: Bool { count > 0 }
    /// Whether a page wants levels: one that is shown (a hidden page's meters cost nothing).
    var wantsLevels: Bool { clients.withLock { $0.contains { $0.wantsLevels.load(ordering: .relaxed) } } }

    func deliver(_ event: EncodedEvent) {
        guard !closed.load(ordering: .acquiring) else { return }
        let isLevel = EventStream.levelEvents.contains(event.name)
        for client in clients.withLock({ $0 }) where client.isOpen {
            if isLevel && !client.wantsLevels.load(ordering: .relaxed) { continue }
            client.send(event: event)
        }
    }
}

/// One page's WebSocket: each text message one control request, answered in order; pings
/// answered; the connection closed on a close frame.
final class WebSocketSession: ChannelInboundHandler, @unchecked Sendable {
    // SAFETY (@unchecked Sendable): its mutable state is used on its channel's event loop only;
    // requests run on `queue` and touch only the client and the served graph (thread-safe).
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    /// The most requests of one page waiting to be carried out; past it, the page is not read
    /// from until they are answered.
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
        client.send(event: EncodedEvent("hello", ["graph": site.served.name]))
    }

    func channelInactive(context: ChannelHandlerContext) {
        site.hub.remove(client)
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text:
            handle(Array(frame.unmaskedData.readableBytesView))
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
        updateReading()
        context.fireChannelWritabilityChanged()
    }

    /// A page is read from while it reads its replies (its channel is writable) and fewer than
    /// `pendingLimit` of its requests wait; otherwise its requests wait in its own socket,
    /// costing the event loop, the graph and other pages nothing. [thread-safe]
    private func updateReading() {
        let channel = client.channel
        // Decided on the event loop, from the state when it runs: calls from the queue and the
        // loop then cannot land out of order.
        channel.eventLoop.execute { [self] in
            let reading = channel.isWritable && pending.load(ordering: .relaxed) < Self.pendingLimit
            channel.setOption(ChannelOptions.autoRead, value: reading).whenComplete { _ in }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    /// Hands a request to the connection's queue, which parses it and carries it out in
    /// order, off the event loop every page shares (an untimed `set` waits for its period
    /// there). Past `pendingLimit` waiting, the page is not read from until they are answered.
    private func handle(_ bytes: [UInt8]) {
        if pending.add(1, ordering: .relaxed).newValue >= Self.pendingLimit { updateReading() }
        queue.async { [self, client, site] in
            defer {
                if pending.subtract(1, ordering: .relaxed).newValue < Self.pendingLimit { updateReading() }
            }
            let (request, identifier) = ControlJSON.parse(bytes)
            let command = try? request.get().name
            guard case .success(let parsed) = request else {
                client.send(reply: ControlJSON.reply(request.map { _ in [:] }, command: command, id: identifier))
                return
            }
            let outcome: Result<[String: any Sendable], ControlError>
            switch parsed {
            case .watch(let levels):
                // A page gets the events from the start; `watch` says whether levels too.
                client.wantsLevels.store(levels, ordering: .relaxed)
                outcome = .success(["graph": site.served.name, "levels": levels])
            case .subscribe, .unsubscribe:
                outcome = .failure(ControlError(code: "subscribe-needs-osc", message: "a page gets the events already; subscribe works over OSC"))
            default:
                outcome = site.served.handle(parsed)
            }
            client.send(reply: ControlJSON.reply(outcome, command: command, id: identifier))
        }
    }
}
