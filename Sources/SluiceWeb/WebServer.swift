import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket
import SluiceControl
import SluiceGraph

/// `sluice serve --http`: a served graph in a browser. One event-loop thread answers:
///
/// - `GET /`, `/sluice.js`, `/sluice.css`: the page (in the binary, no external assets);
/// - `GET /api/graph`: the graph's shape and live parameters (`GraphShape`);
/// - `GET /api/status`: `status`'s fields;
/// - `GET /timeline.svg`: the run's last minutes drawn as `--timeline` draws a run
///   (`TimelinePicture`);
/// - `GET /metrics`: Prometheus' text format (`ServedMetrics`);
/// - `GET /ws`, upgraded to a WebSocket: control requests in, as JSON text messages in the
///   socket's form (one request a message, replies with the same `id`), and the graph's events
///   out, levels included while the page asks for them (`WebEventHub`).
///
/// Every request passes `WebAccess` first. Nothing here waits on the graph: requests that
/// may wait (an untimed `set` waits for its period) run on a queue of their connection, and
/// events to a page that stops reading are dropped and counted (`WebClient`).
///
/// Threading: [thread-safe]; `stop` once.
public final class WebServer: Sendable {
    /// The most WebSocket connections at once.
    public static let maximumClients = 32

    public let host: String
    public let port: Int
    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel
    private let hub: WebEventHub

    /// Listens on `host:port` (port 0: any free port, then `port` says which).
    ///
    /// - Parameter token: what every request must carry (`WebAccess`); needed on any address
    ///   but loopback.
    ///   - idleLimit: seconds a plain HTTP connection may send nothing before it is closed (a
    ///     WebSocket's page may sit as long as it likes).
    public init(
        host: String, port: Int, token: String?, idleLimit: Double = 30, served: ServedGraph, metrics: ServedMetrics
    ) throws(ControlError) {
        guard token != nil || Self.isLoopbackAddress(host) else {
            throw ControlError(
                code: "needs-token",
                message: "--http on \(host) is open to other machines: give a token with --http-token-file, or listen on 127.0.0.1")
        }
        guard (0...65_535).contains(port) else {
            throw ControlError(code: "bad-port", message: "an HTTP port is 0…65535, not \(port)")
        }
        let access = WebAccess(token: token)
        let hub = WebEventHub()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let site = WebSite(
            access: access, served: served, metrics: metrics, hub: hub, timeline: TimelinePicture(served: served), idleLimit: idleLimit)
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 64)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in site.setUp(channel) }
        do {
            channel = try bootstrap.bind(host: host, port: port).wait()
        } catch {
            try? group.syncShutdownGracefully()
            throw ControlError(code: "cannot-listen", message: "cannot listen for HTTP on \(host):\(port): \(error)")
        }
        self.host = host
        self.port = channel.localAddress?.port ?? port
        self.group = group
        self.hub = hub
        served.events.add(hub)
    }

    /// Closes the port and every connection. The event-loop thread is left to end with the
    /// process: a page's queue may still be answering a request, and work scheduled on a loop
    /// that has shut down leaves its promise unfulfilled (a trap in debug builds).
    public func stop() {
        hub.closeAll()
        try? channel.close().wait()
    }

    static func isLoopbackAddress(_ host: String) -> Bool {
        host == "127.0.0.1" || host == "::1" || host == "localhost"
    }
}

/// What each connection is set up with, and the answers to plain HTTP requests.
struct WebSite: Sendable {
    let access: WebAccess
    let served: ServedGraph
    let metrics: ServedMetrics
    let hub: WebEventHub
    let timeline: TimelinePicture
    let idleLimit: Double

    /// An HTTP connection that may become a WebSocket at `/ws`.
    func setUp(_ channel: any Channel) -> EventLoopFuture<Void> {
        let upgrader = NIOWebSocketServerUpgrader(
            maxFrameSize: ControlJSON.maximumLineBytes,
            automaticErrorHandling: true,
            shouldUpgrade: { [self] channel, head in
                let allowed = Self.path(of: head.uri) == "/ws" && refusal(for: head) == nil && hub.count < WebServer.maximumClients
                return channel.eventLoop.makeSucceededFuture(allowed ? HTTPHeaders() : nil)
            },
            upgradePipelineHandler: { [self] channel, _ in
                // A page may sit without sending: the idle rule is for plain HTTP only.
                channel.pipeline.removeHandler(name: "sluice-idle").flatMap {
                    channel.pipeline.removeHandler(name: "sluice-http")
                }.flatMapThrowing {
                    try channel.syncOptions?.setOption(ChannelOptions.writeBufferWaterMark, value: WebClient.waterMark)
                    try channel.pipeline.syncOperations.addHandler(
                        NIOWebSocketFrameAggregator(
                            minNonFinalFragmentSize: 0, maxAccumulatedFrameCount: 64, maxAccumulatedFrameSize: ControlJSON.maximumLineBytes))
                    try channel.pipeline.syncOperations.addHandler(WebSocketSession(client: WebClient(channel: channel), site: self))
                }
            })
        return channel.eventLoop.makeCompletedFuture {
            // A connection that sends nothing for `idleLimit` is closed, so idle sockets cannot
            // pile up.
            try channel.pipeline.syncOperations.addHandler(
                IdleStateHandler(readTimeout: .milliseconds(Int64(idleLimit * 1_000))), name: "sluice-idle")
            try channel.pipeline.syncOperations.configureHTTPServerPipeline(
                withServerUpgrade: (upgraders: [upgrader], completionHandler: { _ in }))
            try channel.pipeline.syncOperations.addHandler(HTTPRoutes(site: self), name: "sluice-http")
        }
    }

    func refusal(for head: HTTPRequestHead) -> WebAccess.Refusal? {
        access.check(
            host: head.headers.first(name: "host"), origin: head.headers.first(name: "origin"),
            authorization: head.headers.first(name: "authorization"), target: head.uri)
    }

    static func path(of target: String) -> Substring {
        target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
    }

    /// A response: status, content type, body.
    struct Response {
        var status: HTTPResponseStatus
        var type: String
        var body: [UInt8]

        static func text(_ status: HTTPResponseStatus, _ message: String) -> Response {
            Response(status: status, type: "text/plain; charset=utf-8", body: Array((message + "\n").utf8))
        }

        static func json(_ text: String) -> Response {
            Response(status: .ok, type: "application/json", body: Array(text.utf8))
        }
    }

    /// Whether the answer to `head` is drawn off the event loop (`TimelinePicture`).
    func drawsLater(_ head: HTTPRequestHead) -> Bool {
        Self.path(of: head.uri) == "/timeline.svg" && (head.method == .GET || head.method == .HEAD) && refusal(for: head) == nil
    }

    /// The answer to a request that is not a WebSocket upgrade.
    func respond(to head: HTTPRequestHead) -> Response {
        if let refusal = refusal(for: head) {
            return .text(HTTPResponseStatus(statusCode: refusal.status), refusal.message)
        }
        guard head.method == .GET || head.method == .HEAD else {
            return .text(.methodNotAllowed, "only GET: commands go over the WebSocket at /ws")
        }
        switch Self.path(of: head.uri) {
        case "/": return Response(status: .ok, type: "text/html; charset=utf-8", body: PackageResources.index_html)
        case "/sluice.js": return Response(status: .ok, type: "text/javascript; charset=utf-8", body: PackageResources.sluice_js)
        case "/sluice.css": return Response(status: .ok, type: "text/css; charset=utf-8", body: PackageResources.sluice_css)
        case "/api/graph": return .json(GraphShape.json(of: served).text)
        case "/api/status": return .json(ControlJSON.encode(served.status.mapValues { $0 as Any }))
        case "/metrics": return Response(status: .ok, type: "text/plain; version=0.0.4; charset=utf-8", body: metrics.scrape())
        case "/ws":
            return .text(
                hub.count >= WebServer.maximumClients ? .serviceUnavailable : .badRequest,
                hub.count >= WebServer.maximumClients
                    ? "\(WebServer.maximumClients) pages are connected; close one and try again"
                    : "/ws is a WebSocket: connect with a WebSocket client")
        default: return .text(.notFound, "no page \(Self.path(of: head.uri)); the graph is at /")
        }
    }
}

/// Plain HTTP: one response per request, the body of a request ignored.
private final class HTTPRoutes: ChannelInboundHandler, RemovableChannelHandler, @unchecked Sendable {
    // SAFETY (@unchecked Sendable): used on its channel's event loop only.
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let site: WebSite
    private var head: HTTPRequestHead?

    init(site: WebSite) { self.site = site }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let idle = event as? IdleStateHandler.IdleStateEvent, idle == .read {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): self.head = head
        case .body: break
        case .end:
            guard let head else { return }
            self.head = nil
            answer(head, context: context)
        }
    }

    private func answer(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        guard site.drawsLater(head) else {
            send(site.respond(to: head), for: head, context: context)
            return
        }
        // Drawn on the picture's queue, sent from the event loop; NIO's pipelining handler
        // holds the connection's next request until this response ends.
        let loop = context.eventLoop
        let bound = NIOLoopBound((self, context), eventLoop: loop)
        site.timeline.draw { svg in
            loop.execute {
                let (routes, context) = bound.value
                let response = svg.map { WebSite.Response(status: .ok, type: "image/svg+xml", body: $0) }
                    ?? WebSite.Response.text(.serviceUnavailable, "no timeline yet: the graph has not started; try again in a second")
                routes.send(response, for: head, context: context)
            }
        }
    }

    private func send(_ response: WebSite.Response, for head: HTTPRequestHead, context: ChannelHandlerContext) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: response.type)
        headers.add(name: "Content-Length", value: "\(response.body.count)")
        headers.add(name: "Cache-Control", value: "no-store")
        headers.add(name: "X-Content-Type-Options", value: "nosniff")
        // Another site may not frame the page (its sliders steer the graph).
        headers.add(name: "X-Frame-Options", value: "DENY")
        headers.add(
            name: "Content-Security-Policy",
            value: "default-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
        let keepAlive = head.isKeepAlive
        headers.add(name: "Connection", value: keepAlive ? "keep-alive" : "close")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: response.status, headers: headers))), promise: nil)
        if head.method != .HEAD {
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: response.body)))), promise: nil)
        }
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
            if !keepAlive { channel.close(promise: nil) }
        }
    }
}
