import Foundation

/// Loopback web clients for the tests and benchmarks: HTTP/1.1 and a WebSocket over plain
/// sockets, so a test sets every header and can stop reading.
public struct TestFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// HTTP/1.1 over a plain socket, so a test chooses every header (a browser's Host, Origin).
public enum RawHTTP {
    public struct Response: CustomStringConvertible {
        public var status: Int
        /// By lowercased name.
        public var headers: [String: String]
        public var body: String
        public var description: String { "\(status) \(body)" }
    }

    public static func get(_ path: String, port: Int, host: String? = nil, extraHeaders: [String] = []) throws -> Response {
        try request("GET \(path) HTTP/1.1", port: port, host: host, extraHeaders: extraHeaders)
    }

    public static func request(_ line: String, port: Int, host: String? = nil, extraHeaders: [String] = [], body: Data = Data()) throws -> Response {
        let socket = try TCPClient(port: port)
        defer { socket.close() }
        let head = ([line, "Host: \(host ?? "127.0.0.1:\(port)")", "Connection: close"] + extraHeaders).joined(separator: "\r\n")
        guard socket.send(Array((head + "\r\n\r\n").utf8) + Array(body)) else { throw TestFailure("could not send") }
        let text = String(decoding: socket.readResponse(timeout: 10), as: UTF8.self)
        guard let split = text.range(of: "\r\n\r\n") else { throw TestFailure("no response head in: \(text)") }
        let lines = text[..<split.lowerBound].split(separator: "\r\n")
        let status = Int(lines.first?.split(separator: " ").dropFirst().first ?? "") ?? 0
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return Response(status: status, headers: headers, body: String(text[split.upperBound...]))
    }
}

/// A WebSocket client over a plain socket (RFC 6455, text frames, masked as clients must):
/// one that can also stop reading.
public final class RawWebSocket: @unchecked Sendable {
    public static let upgradeHeaders = [
        "Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13",
    ]
    private let socket: TCPClient
    private var pending: [UInt8] = []
    private var sawClose = false

    /// False once the server sent a close frame or hung up (seen by `receive`).
    public var isOpen: Bool { !sawClose && !socket.peerClosed }

    public init(port: Int, receiveBuffer: Int? = nil) throws {
        socket = try TCPClient(port: port, receiveBuffer: receiveBuffer)
        let head = (["GET /ws HTTP/1.1", "Host: 127.0.0.1:\(port)"] + Self.upgradeHeaders).joined(separator: "\r\n") + "\r\n\r\n"
        guard socket.send(Array(head.utf8)) else { throw TestFailure("could not send the handshake") }
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline {
            if let end = pending.indices.dropLast(3).first(where: { pending[$0..<($0 + 4)].elementsEqual("\r\n\r\n".utf8) }) {
                let response = String(decoding: pending[..<end], as: UTF8.self)
                pending.removeFirst(end + 4)
                guard response.hasPrefix("HTTP/1.1 101") else { throw TestFailure("refused: \(response)") }
                return
            }
            pending += socket.receive(timeout: 0.2)
        }
        throw TestFailure("no handshake response")
    }

    @discardableResult
    public func sendText(_ text: String) -> Bool {
        send(opcode: 1, Array(text.utf8))
    }

    /// Sends one frame, masked: `opcode` 1 text, 2 binary.
    @discardableResult
    public func send(opcode: UInt8, _ payload: [UInt8]) -> Bool {
        var frame: [UInt8] = [0x80 | opcode]
        if payload.count < 126 {
            frame.append(0x80 | UInt8(payload.count))
        } else if payload.count < 65_536 {
            frame += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        } else {
            frame.append(0x80 | 127)
            frame += (0..<8).reversed().map { UInt8((payload.count >> (8 * $0)) & 0xFF) }
        }
        let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        frame += mask
        frame += payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
        return socket.send(frame)
    }

    /// The next text message, or nil after `timeout`.
    public func receive(timeout: Double) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if pending.count >= 2 {
                var length = Int(pending[1] & 0x7F)
                var offset = 2
                if length == 126, pending.count >= 4 {
                    length = Int(pending[2]) << 8 | Int(pending[3])
                    offset = 4
                } else if length == 127, pending.count >= 10 {
                    length = pending[2..<10].reduce(0) { $0 << 8 | Int($1) }
                    offset = 10
                }
                if length < 126 || offset > 2, pending.count >= offset + length {
                    let opcode = pending[0] & 0x0F
                    let payload = Array(pending[offset..<(offset + length)])
                    pending.removeFirst(offset + length)
                    if opcode == 1 { return String(decoding: payload, as: UTF8.self) }
                    if opcode == 8 { sawClose = true }
                    continue
                }
            }
            guard Date() < deadline else { return nil }
            pending += socket.receive(timeout: 0.1)
        }
    }

    /// The events that arrive within `seconds` (replies are skipped).
    public func events(for seconds: Double) -> [[String: Any]] {
        var events: [[String: Any]] = []
        let deadline = Date().addingTimeInterval(seconds)
        while deadline.timeIntervalSinceNow > 0, let message = receive(timeout: deadline.timeIntervalSinceNow) {
            if let object = try? JSONSerialization.jsonObject(with: Data(message.utf8)) as? [String: Any], object["event"] != nil {
                events.append(object)
            }
        }
        return events
    }

    /// Sends a request and returns its reply (events before it are skipped).
    public func request(_ text: String, timeout: Double = 10) throws -> [String: Any] {
        guard sendText(text) else { throw TestFailure("could not send \(text)") }
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            guard let message = receive(timeout: deadline.timeIntervalSinceNow) else { break }
            let object = try JSONSerialization.jsonObject(with: Data(message.utf8)) as? [String: Any] ?? [:]
            if object["event"] == nil { return object }
        }
        throw TestFailure("no reply to \(text)")
    }

    public func close() { socket.close() }
}

/// A TCP connection to 127.0.0.1 with plain sockets.
public final class TCPClient: @unchecked Sendable {
    private let descriptor: Int32
    private var closed = false

    public init(port: Int, receiveBuffer: Int? = nil) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw TestFailure("no socket") }
        if var size = receiveBuffer.map(Int32.init) {
            setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            Glibc.close(descriptor)
            throw TestFailure("cannot connect to port \(port)")
        }
    }

    public func send(_ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count <= 0 { return false }
            sent += count
        }
        return true
    }

    /// True once a `receive` found the connection closed by the other side.
    public private(set) var peerClosed = false

    public func receive(timeout: Double) -> [UInt8] {
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, Int32(max(0, timeout) * 1000)) > 0 else { return [] }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        if count <= 0 { peerClosed = true }
        return count > 0 ? Array(buffer[..<count]) : []
    }

    /// An HTTP response: to its `Content-Length` (servers may keep the connection open
    /// whatever the request asked), or to the close when it has none.
    public func readResponse(timeout: Double) -> [UInt8] {
        var bytes: [UInt8] = []
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let text = String(decoding: bytes, as: UTF8.self)
            if let split = text.range(of: "\r\n\r\n") {
                let head = text[..<split.lowerBound].lowercased()
                if let line = head.split(separator: "\r\n").first(where: { $0.hasPrefix("content-length:") }),
                    let length = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)),
                    text[split.upperBound...].utf8.count >= length
                {
                    return bytes
                }
            }
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 200) > 0 else { continue }
            var buffer = [UInt8](repeating: 0, count: 65_536)
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            bytes += buffer[..<count]
        }
        return bytes
    }

    public func close() {
        guard !closed else { return }
        closed = true
        shutdown(descriptor, Int32(SHUT_RDWR))
        Glibc.close(descriptor)
    }

    deinit { close() }
}
