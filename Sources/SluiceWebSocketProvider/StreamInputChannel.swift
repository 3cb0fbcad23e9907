import Logging
import NIOCore
import NIOHTTP1
import NIOSSL
import NIOWebSocket
import SluiceHTTPProvider
import WSClient
// WSCore's `WebSocketHandler` runs the session (frames into messages, pings answered, the
// close handshake) for WSClient's own `WebSocketClient`; it is SPI, `WSInternal`.
@_spi(WSInternal) import WSCore

/// The handshake and session of one stream-input socket, for WSClient's `ClientConnection`.
///
/// It is WSClient's `WebSocketClientChannel` (the upgrade request through NIO's typed
/// upgrader, TLS through NIOSSL, the session through `WebSocketHandler`) with two things
/// that one keeps to itself and a provider needs:
/// - the HTTP status and body of a refused handshake (WSClient reports only "upgrade
///   failed"): a 401 is a refused key, and says so;
/// - the channel, as soon as it exists (`onChannel`), so that a cancel or a connect timeout
///   closes the socket at once, even while the server has not answered the handshake.
struct StreamInputChannel: ClientConnectionChannel {
    enum Upgrade: Sendable {
        case websocket(NIOAsyncChannel<WebSocketFrame, WebSocketFrame>)
        case refused(EventLoopFuture<HandshakeRefusal>)
    }

    typealias Value = EventLoopFuture<Upgrade>
    typealias Result = WebSocketCloseFrame?

    let endpoint: WebSocketEndpoint
    let headers: [(String, String)]
    let sslContext: NIOSSLContext?
    let maxFrameSize: Int
    let onChannel: @Sendable (any Channel) -> Void
    let handler: WebSocketDataHandler<StreamInputContext>

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        onChannel(channel)
        return channel.eventLoop.makeCompletedFuture { try upgradePipeline(channel) }
    }

    private func upgradePipeline(_ channel: any Channel) throws -> Value {
        let upgrader = NIOTypedWebSocketClientUpgrader<Upgrade>(
            maxFrameSize: maxFrameSize,
            upgradePipelineHandler: { channel, _ in
                channel.eventLoop.makeCompletedFuture {
                    // At most two frames wait unread: beyond them NIO stops reading the socket
                    // (backpressure reaches the server while the provider's buffer is full).
                    .websocket(try NIOAsyncChannel<WebSocketFrame, WebSocketFrame>(
                        wrappingChannelSynchronously: channel,
                        configuration: .init(backPressureStrategy: .init(lowWatermark: 1, highWatermark: 2))))
                }
            })
        var requestHeaders = HTTPHeaders()
        requestHeaders.add(name: "Host", value: endpoint.hostHeader)
        for (name, value) in headers { requestHeaders.add(name: name, value: value) }
        let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: endpoint.target, headers: requestHeaders)
        let upgradeConfiguration = NIOTypedHTTPClientUpgradeConfiguration<Upgrade>(
            upgradeRequestHead: head,
            upgraders: [upgrader],
            notUpgradingCompletionHandler: { channel in
                // The server answered with something other than 101: keep its status and
                // body (the response flows on to the capture once the upgrader steps aside).
                channel.eventLoop.makeCompletedFuture {
                    let promise = channel.eventLoop.makePromise(of: HandshakeRefusal.self)
                    try channel.pipeline.syncOperations.addHandler(RefusalCapture(promise: promise))
                    return .refused(promise.futureResult)
                }
            })
        var configuration = NIOUpgradableHTTPClientPipelineConfiguration(upgradeConfiguration: upgradeConfiguration)
        configuration.leftOverBytesStrategy = .forwardBytes
        if let sslContext {
            let tls = try NIOSSLClientHandler(context: sslContext, serverHostname: endpoint.serverNameIndication)
            try channel.pipeline.syncOperations.addHandler(tls, position: .first)
        }
        return try channel.pipeline.syncOperations.configureUpgradableHTTPClientPipeline(configuration: configuration)
    }

    func handle(value: Value, logger: Logger) async throws -> WebSocketCloseFrame? {
        switch try await value.get() {
        case .websocket(let channel):
            return try await WebSocketHandler.handle(
                type: .client,
                configuration: .init(
                    extensions: [], autoPing: .disabled, closeTimeout: .seconds(2), validateUTF8: false, maxFrameSize: maxFrameSize),
                asyncChannel: channel,
                context: StreamInputContext(logger: logger),
                handler: handler)
        case .refused(let refusal):
            throw try await refusal.get()
        }
    }
}

/// The context WSCore hands the session's handler.
struct StreamInputContext: WebSocketContext {
    let logger: Logger
}

/// The server refused the WebSocket handshake with an HTTP response.
struct HandshakeRefusal: Error, Sendable {
    var status: Int
    var body: [UInt8]
}

/// Collects a refused handshake's response (status, at most 4 KiB of body), then closes.
final class RefusalCapture: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart

    private let promise: EventLoopPromise<HandshakeRefusal>
    private var refusal = HandshakeRefusal(status: 0, body: [])
    private var done = false

    init(promise: EventLoopPromise<HandshakeRefusal>) {
        self.promise = promise
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            refusal.status = Int(head.status.code)
        case .body(var buffer):
            let take = min(buffer.readableBytes, 4_096 - refusal.body.count)
            if take > 0, let bytes = buffer.readBytes(length: take) { refusal.body += bytes }
        case .end:
            complete(context)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        complete(context)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        complete(context)
    }

    private func complete(_ context: ChannelHandlerContext) {
        guard !done else { return }
        done = true
        promise.succeed(refusal)
        context.close(promise: nil)
    }
}

/// A `ws://` or `wss://` URL taken apart for the connection.
struct WebSocketEndpoint: Sendable {
    var secure: Bool
    var host: String
    var port: Int
    /// The request target: path and query.
    var target: String

    /// Parsed by `ProviderURL`, the parser `SecretPolicy` decides with.
    init(_ url: String) throws(ProviderURL.Refusal) {
        let parsed = try ProviderURL(url, schemes: ["ws", "wss"])
        secure = parsed.isSecure
        host = parsed.host
        port = parsed.port
        target = parsed.target
    }

    var hostHeader: String {
        let name = host.contains(":") ? "[\(host)]" : host
        return port == (secure ? 443 : 80) ? name : "\(name):\(port)"
    }

    /// The TLS server name: the host, unless it is an address (SNI carries names only).
    var serverNameIndication: String? {
        let isAddress = host.contains(":") || host.split(separator: ".").allSatisfy { UInt8($0) != nil }
        return isAddress ? nil : host
    }
}
