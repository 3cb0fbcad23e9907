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
/// - `/sluice/status`, `/sluice/parameters`, `/sluice/pause`, `/sluice/resume`, `/sluice/quit`.
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
            guard let (address, outcome) = Self.request(from: &buffer, count: count, secret: secret) else {
                unauthenticated.add(1, ordering: .relaxed)
                continue
            }
            let reply: (path: String, arguments: [String])
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

    /// The message's address and the request it makes, or why it makes none; nil when
    /// `secret` is set and the message does not begin with it (it gets no reply at all).
    static func request(
        from buffer: inout [UInt8], count: Int, secret: [UInt8]? = nil
    ) -> (String, Result<ControlRequest, ControlError>)? {
        if count >= 8, buffer.starts(with: Array("#bundle\0".utf8)) {
            if secret != nil { return nil }
            return ("#bundle", .failure(ControlError(code: "osc-bundle", message: "OSC bundles are not taken; send each message on its own")))
        }
        var result: Int32 = 0
        // SAFETY: liblo reads `count` bytes of `buffer` and copies what it keeps.
        let message = buffer.withUnsafeMutableBytes { lo_message_deserialise($0.baseAddress, count, &result) }
        guard let message, result == 0 else {
            if secret != nil { return nil }
            return ("", .failure(ControlError(code: "osc-malformed", message: "not an OSC message (liblo error \(result))")))
        }
        defer { lo_message_free(message) }
        // The address is the message's first OSC string, NUL-terminated (liblo checked it).
        let address = String(decoding: buffer[0..<count].prefix { $0 != 0 }, as: UTF8.self)
        var types = Array(String(cString: lo_message_get_types(message)).utf8)
        var arguments = lo_message_get_argv(message)
        if let secret {
            // SAFETY: as `string` below: an 's' argument points at its NUL-terminated string.
            guard types.first == UInt8(ascii: "s"), let first = arguments?[0] else { return nil }
            let given = UnsafeRawPointer(first).assumingMemoryBound(to: UInt8.self)
            let length = strlen(UnsafeRawPointer(first).assumingMemoryBound(to: CChar.self))
            guard Self.sameBytes(UnsafeBufferPointer(start: given, count: length), secret) else { return nil }
            types.removeFirst()
            arguments = arguments?.advanced(by: 1)
        }
        func string(_ index: Int) -> String? {
            guard index < types.count, types[index] == UInt8(ascii: "s") || types[index] == UInt8(ascii: "S"),
                let argument = arguments?[index]
            else { return nil }
            // SAFETY: liblo's argv entry for an 's' or 'S' argument points at the string itself,
            // NUL-terminated inside the deserialised message, which lives until `message` is freed
            // at the end of this function. (`argument.pointee.s` is the union's first byte,
            // copied: a pointer to it is not a pointer into the message.)
            return String(cString: UnsafeRawPointer(argument).assumingMemoryBound(to: CChar.self))
        }
        func number(_ index: Int) -> Double? {
            guard index < types.count, let argument = arguments?[index] else { return nil }
            switch types[index] {
            case UInt8(ascii: "f"): return Double(argument.pointee.f)
            case UInt8(ascii: "d"): return argument.pointee.d
            case UInt8(ascii: "i"): return Double(argument.pointee.i)
            case UInt8(ascii: "h"): return Double(argument.pointee.h)
            default: return nil
            }
        }
        let typeText = String(decoding: types, as: UTF8.self)
        func wrongArguments(_ expected: String) -> (String, Result<ControlRequest, ControlError>) {
            (address, .failure(ControlError(
                code: "osc-arguments", message: "\(address) takes \(expected), not '\(typeText)'")))
        }
        let parts = address.split(separator: "/", omittingEmptySubsequences: false)
        // "", "sluice", "node", node, parameter
        if parts.count == 5, parts[1] == "sluice", parts[2] == "node", !parts[3].isEmpty, !parts[4].isEmpty {
            guard types.count == 1 || types.count == 2, let value = number(0) else {
                return wrongArguments("one number (f, d, i or h), and optionally the frame to apply it at (i or h)")
            }
            var at: Int?
            if types.count == 2 {
                guard types[1] == UInt8(ascii: "i") || types[1] == UInt8(ascii: "h") else {
                    return wrongArguments("one number (f, d, i or h), and optionally the frame to apply it at (i or h)")
                }
                guard let frame = number(1).flatMap(ControlRequest.frame) else {
                    return (address, .failure(ControlError(code: "bad-value", message: ControlRequest.frameRule)))
                }
                at = frame
            }
            return (address, .success(.set(node: String(parts[3]), parameter: String(parts[4]), value: value, at: at)))
        }
        if parts.count == 5, parts[1] == "sluice", parts[2] == "configure", !parts[3].isEmpty, !parts[4].isEmpty {
            guard types.count == 1 else { return wrongArguments("one value (s, f, d, i or h)") }
            let text: String
            if let value = string(0) {
                text = value
            } else if let value = number(0) {
                text = ExternalNumber.text(value)
            } else {
                return wrongArguments("one value (s, f, d, i or h)")
            }
            return (address, .success(.configure(node: String(parts[3]), parameters: [String(parts[4]): text])))
        }
        switch address {
        case "/sluice/speak", "/sluice/interrupt":
            guard types.count == 1 || types.count == 2, let text = string(0) else {
                return wrongArguments("a string, and optionally the node's name (s or ss)")
            }
            let interrupt = address == "/sluice/interrupt"
            if types.count == 2 {
                guard let node = string(1) else { return wrongArguments("a string, and optionally the node's name (s or ss)") }
                return (address, .success(.speak(text: text, node: node, interrupt: interrupt)))
            }
            return (address, .success(.speak(text: text, node: nil, interrupt: interrupt)))
        case "/sluice/connect", "/sluice/disconnect":
            guard types.count == 2, let first = string(0), let second = string(1) else { return wrongArguments("two port names (ss)") }
            return (address, .success(.route(first, second, connected: address == "/sluice/connect")))
        case "/sluice/status", "/sluice/parameters", "/sluice/pause", "/sluice/resume", "/sluice/quit", "/sluice/cancel":
            guard types.isEmpty else { return wrongArguments("no arguments") }
            let requests: [String: ControlRequest] = [
                "status": .status, "parameters": .parameters, "pause": .pause, "resume": .resume, "quit": .quit,
                "cancel": .cancel,
            ]
            return (address, .success(requests[String(address.dropFirst("/sluice/".count))]!))
        default:
            let known = [
                "/sluice/node/<node>/<parameter>", "/sluice/configure/<node>/<parameter>", "/sluice/speak",
                "/sluice/interrupt", "/sluice/cancel", "/sluice/connect", "/sluice/disconnect",
                "/sluice/status", "/sluice/parameters",
                "/sluice/pause", "/sluice/resume", "/sluice/quit",
            ]
            return (address, .failure(ControlError(
                code: "osc-unknown-address", message: "no OSC address '\(address)'; addresses: \(known.joined(separator: ", "))")))
        }
    }

    /// Whether `given` equals `secret`, in a time that does not depend on where they differ.
    static func sameBytes(_ given: UnsafeBufferPointer<UInt8>, _ secret: [UInt8]) -> Bool {
        var difference = UInt8(given.count == secret.count ? 0 : 1)
        for index in 0..<secret.count {
            difference |= secret[index] ^ (index < given.count ? given[index] : 0)
        }
        return difference == 0
    }

    /// Sends an OSC message of string arguments to `destination`.
    private func send(_ reply: (path: String, arguments: [String]), to destination: inout sockaddr_in) {
        guard let message = lo_message_new() else { return }
        defer { lo_message_free(message) }
        for argument in reply.arguments { lo_message_add_string(message, argument) }
        let length = lo_message_length(message, reply.path)
        var bytes = [UInt8](repeating: 0, count: length)
        var size = length
        // SAFETY: `bytes` holds `lo_message_length` bytes, what serialising needs.
        _ = bytes.withUnsafeMutableBytes { lo_message_serialise(message, reply.path, $0.baseAddress, &size) }
        // SAFETY: `destination` is the sender's sockaddr_in, as recvfrom filled it.
        _ = withUnsafePointer(to: &destination) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(descriptor, bytes, size, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
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
