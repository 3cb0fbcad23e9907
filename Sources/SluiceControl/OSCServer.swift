import CLiblo
import Foundation
import Glibc
import SluiceAudio
import Synchronization

/// The OSC form of the control commands, over UDP, parsed and built with liblo (the OSC
/// library of Ardour, Carla and non-mixer). Bound to loopback unless told otherwise.
///
/// Address space (docs/control.md):
/// - `/sluice/node/<node>/<parameter> f|d|i|h` sets a live parameter;
/// - `/sluice/speak s [s]` queues text (for the node named by the second string);
///   `/sluice/interrupt s [s]` speaks it instead of what plays; `/sluice/cancel` barges in;
/// - `/sluice/status`, `/sluice/parameters`, `/sluice/pause`, `/sluice/resume`, `/sluice/quit`;
/// - `/sluice/subscribe [i port] [s all|events]` sends the graph's events to the sender for a
///   minute (send it again to stay subscribed), `/sluice/unsubscribe [i port]` stops them
///   (`OSCSubscriptions`).
///
/// Each message is answered to its sender: `/sluice/reply s:command s:json-fields`, or
/// `/sluice/error s:address s:code s:message`. A malformed datagram (not OSC, a bundle, an
/// unknown address, wrong arguments) is answered with an error and changes nothing.
///
/// UDP carries no sender uid: on loopback any local user can send. Beyond loopback a shared
/// secret is required, given as every message's first argument (`s`); a datagram without it
/// is dropped unanswered, so a forged sender address gets nothing back (no amplification).
public final class OSCServer: @unchecked Sendable {
    // SAFETY (@unchecked Sendable): `descriptor` is set in init and closed once by the thread
    // after `stop`; everything else is immutable or atomic.

    /// The UDP port, as bound (the one asked for, or the one the system chose for 0).
    public let port: Int
    public let host: String
    private let descriptor: Int32
    private let handle: @Sendable (ControlRequest) -> Result<[String: any Sendable], ControlError>
    /// The shared secret every message must begin with, or nil (loopback only).
    private let secret: [UInt8]?
    private let stopped = Atomic<Bool>(false)
    private let finished = WakeOnce()
    /// Datagrams received, answered with an error, and ignored (no reply possible).
    public let received = Atomic<Int>(0)
    public let refused = Atomic<Int>(0)
    /// Datagrams dropped unanswered: without the shared secret.
    public let unauthenticated = Atomic<Int>(0)
    /// The senders that asked for the graph's events (`/sluice/subscribe`): add it to the
    /// graph's `EventStream`.
    public let subscriptions: OSCSubscriptions

    /// - Parameter secret: required when `host` is not a loopback address (127.x.y.z):
    ///   every message must then carry it as its first argument.
    public init(
        host: String = "127.0.0.1", port: Int, secret: String? = nil,
        handle: @escaping @Sendable (ControlRequest) -> Result<[String: any Sendable], ControlError>
    ) throws(ControlError) {
        self.host = host
        self.handle = handle
        self.secret = secret.map { Array($0.utf8) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(clamping: port)).bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            throw ControlError(code: "osc-host", message: "'\(host)' is not an IPv4 address for the OSC port (127.0.0.1 for this machine only)")
        }
        let isLoopback = UInt32(bigEndian: address.sin_addr.s_addr) >> 24 == 127
        guard isLoopback || secret != nil else {
            throw ControlError(
                code: "osc-secret",
                message: "OSC on '\(host)' is reachable from other machines and would take commands from anyone: give "
                    + "--osc-secret-file FILE (a secret every message carries as its first argument, docs/control.md), "
                    + "or listen on 127.0.0.1")
        }
        if let secret, secret.utf8.count < 16 {
            throw ControlError(code: "osc-secret", message: "the OSC secret is \(secret.utf8.count) bytes; use at least 16 (for example `openssl rand -hex 16`)")
        }
        let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else {
            throw ControlError(code: "osc-socket", message: "cannot make the OSC socket: \(String(cString: strerror(errno)))")
        }
        // SAFETY: `address` is a complete sockaddr_in, passed with its own size.
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw ControlError(code: "osc-socket", message: "cannot listen for OSC on \(host):\(port): \(reason)")
        }
        var boundAddress = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        // SAFETY: getsockname writes at most `length` bytes into `boundAddress`.
        _ = withUnsafeMutablePointer(to: &boundAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        self.port = Int(UInt16(bigEndian: boundAddress.sin_port))
        self.descriptor = descriptor
        subscriptions = OSCSubscriptions(descriptor: descriptor)
        let thread = Thread { [self] in receiveLoop() }
        thread.name = "sluice-osc"
        thread.start()
    }

    deinit { stop() }

    /// Stops receiving and closes the socket; returns once the receiving thread has ended.
    public func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        finished.wait()
        close(descriptor)
    }

    private func receiveLoop() {
        defer { finished.signal() }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while !stopped.load(ordering: .acquiring) {
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 100) > 0 else { continue }
            var sender = sockaddr_in()
            var senderLength = socklen_t(MemoryLayout<sockaddr_in>.size)
            // SAFETY: recvfrom writes at most the buffer's count, and at most `senderLength`
            // bytes of address.
            let count = buffer.withUnsafeMutableBytes { bytes in
                withUnsafeMutablePointer(to: &sender) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        recvfrom(descriptor, bytes.baseAddress, bytes.count, 0, $0, &senderLength)
                    }
                }
            }
            guard count > 0 else { continue }
            received.add(1, ordering: .relaxed)
            guard let (address, outcome) = OSCRequest.parse(&buffer, count: count, secret: secret) else {
                unauthenticated.add(1, ordering: .relaxed)
                continue
            }
            let reply: (path: String, arguments: [String])
            if case .success(let request) = outcome, let answer = subscriptions.handle(request, from: sender) {
                switch answer {
                case .success(let fields):
                    send(("/sluice/reply", [request.name, ControlJSON.encode(fields.mapValues { $0 as Any })]), to: &sender)
                case .failure(let error):
                    refused.add(1, ordering: .relaxed)
                    send(("/sluice/error", [address, error.code, error.message]), to: &sender)
                }
                continue
            }
            switch outcome.flatMap(handle) {
            case .success(let fields):
                let name = (try? outcome.get().name) ?? ""
                reply = ("/sluice/reply", [name, ControlJSON.encode(fields.mapValues { $0 as Any })])
            case .failure(let error):
                refused.add(1, ordering: .relaxed)
                reply = ("/sluice/error", [address, error.code, error.message])
            }
            send(reply, to: &sender)
        }
    }

    /// Sends an OSC message of string arguments to `destination`.
    private func send(_ reply: (path: String, arguments: [String]), to destination: inout sockaddr_in) {
        OSCMessage.send(OSCMessage.serialise(reply.path, reply.arguments.map(OSCMessage.Argument.string)), from: descriptor, to: destination)
    }
}

/// OSC messages built with liblo, sent on a UDP socket.
enum OSCMessage {
    enum Argument {
        case string(String)
        case float(Float)
        case int64(Int64)
    }

    /// The message's bytes.
    static func serialise(_ path: String, _ arguments: [Argument]) -> [UInt8] {
        guard let message = lo_message_new() else { return [] }
        defer { lo_message_free(message) }
        for argument in arguments {
            switch argument {
            case .string(let text): lo_message_add_string(message, text)
            case .float(let value): lo_message_add_float(message, value)
            case .int64(let value): lo_message_add_int64(message, value)
            }
        }
        let length = lo_message_length(message, path)
        var bytes = [UInt8](repeating: 0, count: length)
        var size = length
        // SAFETY: `bytes` holds `lo_message_length` bytes, what serialising needs.
        _ = bytes.withUnsafeMutableBytes { lo_message_serialise(message, path, $0.baseAddress, &size) }
        return Array(bytes.prefix(size))
    }

    /// Sends `bytes` to `destination` without waiting: a full socket buffer drops the message.
    @discardableResult
    static func send(_ bytes: [UInt8], from descriptor: Int32, to destination: sockaddr_in) -> Bool {
        var destination = destination
        // SAFETY: `destination` is a complete sockaddr_in, passed with its own size.
        return withUnsafePointer(to: &destination) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(descriptor, bytes, bytes.count, Int32(MSG_DONTWAIT), $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        } == bytes.count
    }
}

/// A one-shot signal: `wait` returns once `signal` has been called.
final class WakeOnce: @unchecked Sendable {
    // SAFETY: a semaphore; sem_* are thread-safe.
    private var semaphore = sem_t()
    init() { sem_init(&semaphore, 0, 0) }
    deinit { sem_destroy(&semaphore) }
    func signal() { sem_post(&semaphore) }
    func wait() { while sem_wait(&semaphore) != 0 && errno == EINTR {} }
}
