import Foundation
import Glibc

/// A loopback HTTP/1.1 server for provider tests: it records every request (method, path,
/// query, headers, body) and answers each with the `Reply` its handler picks — PCM in chunks
/// of random sizes (1 byte to 64 KiB, splitting samples), fast or paced, or a failure on cue
/// (an error status, a connection dropped mid-stream, a stall). Connections stay open between
/// requests, as a real API's do.
public final class HTTPTestServer: @unchecked Sendable {
    // SAFETY (@unchecked Sendable): the recorded requests and transfers, the open connections
    // and the stop flag are behind `lock`; the listening socket is set once in init.

    public struct Request: Sendable {
        public var method: String
        public var path: String
        /// The query string without '?', "" when none.
        public var query: String
        /// Header names in lowercase.
        public var headers: [String: String]
        public var body: [UInt8]

        /// The body parsed as a JSON object.
        public var json: [String: Any]? {
            (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
        }

        /// One query parameter's (still percent-encoded) value.
        public func queryValue(_ name: String) -> String? {
            for pair in query.split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                if parts.first.map(String.init) == name { return parts.count > 1 ? String(parts[1]) : "" }
            }
            return nil
        }
    }

    /// How a reply's body leaves.
    public enum Ending: Sendable {
        /// All of it, then the connection stays open for the next request.
        case complete
        /// This many bytes, then the connection is closed (Content-Length promised more).
        case drop(afterBytes: Int)
        /// This many bytes, then nothing until the client gives up.
        case stall(afterBytes: Int)
    }

    public struct Reply: Sendable {
        public var status: Int
        public var contentType: String
        public var body: [UInt8]
        /// Chunk sizes are drawn from this range (each chunk one `send`).
        public var chunkSizes: ClosedRange<Int>
        /// Seconds between chunks (0: as fast as the socket takes them).
        public var delay: Double
        public var ending: Ending
        /// `Transfer-Encoding: chunked` (one HTTP chunk per send, as streaming APIs answer)
        /// instead of a Content-Length.
        public var chunked: Bool

        public init(
            status: Int = 200, contentType: String = "audio/pcm", body: [UInt8], chunkSizes: ClosedRange<Int> = 1...65_536,
            delay: Double = 0, ending: Ending = .complete, chunked: Bool = false
        ) {
            self.chunked = chunked
            self.status = status
            self.contentType = contentType
            self.body = body
            self.chunkSizes = chunkSizes
            self.delay = delay
            self.ending = ending
        }

        /// An error status with a JSON body, sent whole.
        public static func error(_ status: Int, json: String) -> Reply {
            Reply(status: status, contentType: "application/json", body: Array(json.utf8), chunkSizes: 1...65_536)
        }
    }

    /// What the server saw of one reply's body going out.
    public struct Transfer: Sendable {
        public var bytesSent: Int
        /// Wall-clock (monotonic) seconds when the first and the last byte were sent.
        public var started: Double
        public var finished: Double?
        /// Seconds spent inside `send` (blocked by a full socket: the client not reading).
        public var blockedSeconds: Double
    }

    public let port: Int
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    private let listener: Int32
    private let handler: @Sendable (Request) -> Reply
    private let sendBufferBytes: Int?
    private let lock = NSLock()
    private var recorded: [Request] = []
    private var transfers: [Transfer] = []
    private var connections: Set<Int32> = []
    private var stopped = false
    private var listenerOpen = true
    private var generator: SplitMix64

    /// - Parameters:
    ///   - sendBufferBytes: SO_SNDBUF for replies (small, so a client that stops reading
    ///     blocks the sender soon); the kernel's default when nil.
    ///   - seed: seeds the chunk sizes, so a failing run can be replayed.
    public init(sendBufferBytes: Int? = nil, seed: UInt64 = 1, handler: @escaping @Sendable (Request) -> Reply) throws {
        self.handler = handler
        self.sendBufferBytes = sendBufferBytes
        generator = SplitMix64(seed: seed)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 16) == 0 else {
            close(fd)
            throw POSIXError(.init(rawValue: errno) ?? .EIO)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        listener = fd
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    deinit { stop() }

    /// Closes the listener and every connection; stalled replies end.
    public func stop() {
        // Under the lock: descriptors are closed under it too, so none of these numbers can
        // have been reused by another socket in this process (another test's server or
        // client) by the time it is shut down here.
        lock.withLock {
            if stopped { return }
            stopped = true
            if listenerOpen { shutdown(listener, Int32(SHUT_RDWR)) }
            for fd in connections { shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    public var requests: [Request] { lock.withLock { recorded } }
    public var replies: [Transfer] { lock.withLock { transfers } }

    private var isStopped: Bool { lock.withLock { stopped } }

    // MARK: Connections

    private func acceptLoop() {
        defer {
            lock.withLock {
                listenerOpen = false
                close(listener)
            }
        }
        while !isStopped {
            let fd = accept(listener, nil, nil)
            if fd < 0 {
                if errno == EINTR { continue }
                return
            }
            // Glibc's module does not export accept4; a child spawned in this instant would
            // only keep this connection open longer.
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            var yes: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
            if var size = sendBufferBytes.map(Int32.init) {
                setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
            }
            let accepted = lock.withLock { () -> Bool in
                if stopped { return false }
                connections.insert(fd)
                return true
            }
            guard accepted else {
                close(fd)
                return
            }
            Thread { [self] in serve(fd) }.start()
        }
    }

    private func serve(_ fd: Int32) {
        defer {
            lock.withLock {
                connections.remove(fd)
                close(fd)
            }
        }
        var pending: [UInt8] = []
        while let request = readRequest(fd, &pending) {
            lock.withLock { recorded.append(request) }
            guard respond(fd, handler(request)) else { return }
        }
    }

    /// Reads one request (head and Content-Length body); nil when the client closed.
    private func readRequest(_ fd: Int32, _ pending: inout [UInt8]) -> Request? {
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        var headEnd: Int?
        while true {
            if let end = pending.firstRange(of: separator) { headEnd = end.lowerBound; break }
            guard receive(fd, &pending) else { return nil }
        }
        let head = String(decoding: pending[..<headEnd!], as: UTF8.self)
        pending.removeFirst(headEnd! + 4)
        var lines = head.components(separatedBy: "\r\n")
        let start = lines.removeFirst().split(separator: " ")
        guard start.count >= 2 else { return nil }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let length = Int(headers["content-length"] ?? "0") ?? 0
        while pending.count < length {
            guard receive(fd, &pending) else { return nil }
        }
        let body = Array(pending.prefix(length))
        pending.removeFirst(length)
        let target = String(start[1])
        let parts = target.split(separator: "?", maxSplits: 1)
        return Request(
            method: String(start[0]), path: String(parts[0]), query: parts.count > 1 ? String(parts[1]) : "",
            headers: headers, body: body)
    }

    private func receive(_ fd: Int32, _ pending: inout [UInt8]) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let count = recv(fd, &buffer, buffer.count, 0)
        guard count > 0 else { return false }
        pending += buffer[..<count]
        return true
    }

    /// Sends `reply`; false when the connection must close.
    private func respond(_ fd: Int32, _ reply: Reply) -> Bool {
        let reason = [200: "OK", 401: "Unauthorized", 429: "Too Many Requests", 500: "Internal Server Error"][reply.status] ?? "Status"
        let length = reply.chunked ? "Transfer-Encoding: chunked" : "Content-Length: \(reply.body.count)"
        let head = "HTTP/1.1 \(reply.status) \(reason)\r\nContent-Type: \(reply.contentType)\r\n\(length)\r\n\r\n"
        guard sendAll(fd, Array(head.utf8)[...]) != nil else { return false }
        let limit: Int =
            switch reply.ending {
            case .complete: reply.body.count
            case .drop(let bytes), .stall(let bytes): min(bytes, reply.body.count)
            }
        let index = lock.withLock { () -> Int in
            transfers.append(Transfer(bytesSent: 0, started: Self.now(), finished: nil, blockedSeconds: 0))
            return transfers.count - 1
        }
        var offset = 0
        while offset < limit {
            let size = min(limit - offset, lock.withLock { Int.random(in: reply.chunkSizes, using: &generator) })
            var piece = reply.body[offset..<offset + size]
            if reply.chunked { piece = ArraySlice(Array("\(String(size, radix: 16))\r\n".utf8) + piece + Array("\r\n".utf8)) }
            guard let blocked = sendAll(fd, piece) else { return false }
            offset += size
            lock.withLock {
                transfers[index].bytesSent = offset
                transfers[index].blockedSeconds += blocked
            }
            if reply.delay > 0 { Thread.sleep(forTimeInterval: reply.delay) }
        }
        switch reply.ending {
        case .complete:
            if reply.chunked && sendAll(fd, Array("0\r\n\r\n".utf8)[...]) == nil { return false }
            lock.withLock { transfers[index].finished = Self.now() }
            return true
        case .drop:
            lock.withLock { transfers[index].finished = Self.now() }
            return false
        case .stall:
            lock.withLock { transfers[index].finished = Self.now() }
            // Hold the connection silently until the client (or stop) closes it.
            var byte: UInt8 = 0
            while recv(fd, &byte, 1, 0) > 0 {}
            return false
        }
    }

    /// Sends every byte; the seconds spent blocked, or nil when the peer went away.
    private func sendAll(_ fd: Int32, _ bytes: ArraySlice<UInt8>) -> Double? {
        let start = Self.now()
        var offset = bytes.startIndex
        while offset < bytes.endIndex {
            let sent = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent < 0 && errno == EINTR { continue }
            guard sent > 0 else { return nil }
            offset += sent
        }
        return Self.now() - start
    }

    public static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}

/// A seeded generator (SplitMix64), so chunk sizes repeat from run to run.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
