import Logging
import NIOCore
import NIOPosix
import NIOSSL
import NIOWebSocket
import SluicePluginKit
import Synchronization
import WSClient

/// How a connection ended.
enum ConnectionEnd: Sendable {
    /// The server answered the handshake with HTTP `status` instead of switching protocols.
    case refused(status: Int, body: [UInt8])
    /// No WebSocket came about (refused TCP connection, unknown host, TLS failure).
    case failed(String)
    /// The server sent a close frame with `code`.
    case closed(code: Int, reason: String?)
    /// The socket broke without a close frame.
    case dropped(String?)
}

/// Who hears what a connection receives. Called from the connection's task.
protocol ConnectionDelegate: AnyObject, Sendable {
    /// The handshake succeeded.
    func connectionOpened(_ id: Int)
    /// A text message from the server; returns false to end the session (after the final
    /// message, or an error). May suspend: while it does, nothing more is read from the
    /// socket (backpressure).
    func connection(_ id: Int, received text: String) async -> Bool
    /// The connection is over; called once.
    func connectionEnded(_ id: Int, _ end: ConnectionEnd)
}

/// One WebSocket to the service, bridging the provider's threads (plain pthreads) and the
/// async client: messages to send go through an `AsyncStream` a writer task drains in order;
/// messages received are handed to the delegate one at a time, in order.
///
/// The task starts at once (the handshake runs in the background, off the first audio's
/// path); the opening message is the stream's first.
final class WebSocketConnection: Sendable {
    let id: Int
    private let outbound: AsyncStream<String>.Continuation
    private let slot = Mutex(ChannelSlot())
    private let opened = Atomic<Bool>(false)

    private struct ChannelSlot {
        var channel: (any Channel)?
        var closing = false
        var task: Task<Void, Never>?
    }

    /// The largest frame, and message, a server may send: far above any audio message
    /// ElevenLabs sends (a few hundred KiB), small enough to bound memory.
    static let maximumFrameBytes = 4 << 20
    static let maximumMessageBytes = 8 << 20

    private static let logger = Logger(label: "sluice.websocket", factory: { _ in SwiftLogNoOpLogHandler() })

    init(id: Int, endpoint: WebSocketEndpoint, headers: [HTTPHeaderPair], opening: String, delegate: any ConnectionDelegate) {
        self.id = id
        let (stream, continuation) = AsyncStream<String>.makeStream()
        outbound = continuation
        continuation.yield(opening)
        let task = Task(executorPreference: ConnectionExecutor.shared) { [self] in
            await run(endpoint: endpoint, headers: headers, stream: stream, delegate: delegate)
        }
        slot.withLock { $0.task = task }
    }

    /// Whether the handshake succeeded.
    var isOpen: Bool { opened.load(ordering: .acquiring) }

    /// [any-thread] Queues a message; messages go out in the order queued.
    func send(_ text: String) {
        outbound.yield(text)
    }

    /// [any-thread] Closes the socket at once (no close handshake), whatever state it is in.
    func close() {
        outbound.finish()
        let (channel, task) = slot.withLock { slot -> ((any Channel)?, Task<Void, Never>?) in
            slot.closing = true
            return (slot.channel, slot.task)
        }
        channel?.close(promise: nil)
        task?.cancel()
    }

    private func run(
        endpoint: WebSocketEndpoint, headers: [HTTPHeaderPair], stream: AsyncStream<String>, delegate: any ConnectionDelegate
    ) async {
        let id = id
        let handler: WebSocketDataHandler<StreamInputContext> = { [self] inbound, outbound, _ in
            opened.store(true, ordering: .releasing)
            delegate.connectionOpened(id)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await text in stream { try await outbound.write(.text(text)) }
                }
                for try await message in inbound.messages(maxSize: Self.maximumMessageBytes) {
                    guard case .text(let text) = message else { continue }
                    if await !delegate.connection(id, received: text) { break }
                }
                group.cancelAll()
            }
        }
        let end: ConnectionEnd
        do {
            let sslContext = endpoint.secure ? try NIOSSLContext(configuration: TLSConfiguration.makeClientConfiguration()) : nil
            let channel = StreamInputChannel(
                endpoint: endpoint, headers: headers.map { ($0.name, $0.value) }, sslContext: sslContext,
                maxFrameSize: Self.maximumFrameBytes,
                onChannel: { [self] channel in
                    let closing = slot.withLock { slot -> Bool in
                        slot.channel = channel
                        return slot.closing
                    }
                    if closing { channel.close(promise: nil) }
                },
                handler: handler)
            let client = ClientConnection(
                channel, address: .hostname(endpoint.host, port: endpoint.port),
                eventLoopGroup: ConnectionExecutor.shared.loop, logger: Self.logger)
            if let frame = try await client.run() {
                end = .closed(code: Int(UInt16(webSocketErrorCode: frame.closeCode)), reason: frame.reason)
            } else {
                end = .dropped(nil)
            }
        } catch let refusal as HandshakeRefusal {
            end = .refused(status: refusal.status, body: refusal.body)
        } catch {
            end = isOpen ? .dropped("\(error)") : .failed("\(error)")
        }
        delegate.connectionEnded(id, end)
    }
}

/// A header of the handshake request.
struct HTTPHeaderPair: Sendable {
    var name: String
    var value: String
}
