import Glibc

/// What `sluice ctl` uses: one request line to a control socket, one reply line back.
public enum ControlClient {
    /// Sends `line`, then hands every line that comes back to `each` (the reply first, then
    /// events, for `watch`) until `each` returns false or the server hangs up.
    public static func stream(_ line: String, to path: String, each: (String) -> Bool) throws(ControlError) {
        let descriptor = try connect(to: path)
        defer { close(descriptor) }
        try send(line, on: descriptor, path: path)
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return }
            pending.append(contentsOf: buffer[0..<count])
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let text = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                if !each(text) { return }
            }
        }
    }

    /// Sends `line` and returns the reply line (without its newline).
    ///
    /// - Throws: `ControlError` when nothing serves at `path`, or the server hung up first.
    public static func send(_ line: String, to path: String, timeout: Double = 10) throws(ControlError) -> String {
        let descriptor = try connect(to: path)
        defer { close(descriptor) }
        try send(line, on: descriptor, path: path)
        var reply: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4_096)
        let deadline = monotonicNow() + timeout
        while !reply.contains(UInt8(ascii: "\n")) {
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let remaining = Int32(max(0, (deadline - monotonicNow()) * 1000))
            guard remaining > 0, poll(&poller, 1, remaining) > 0 else {
                throw ControlError(code: "no-reply", message: "the server at '\(path)' did not answer within \(Int(timeout)) s")
            }
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw ControlError(code: "not-serving", message: "the server at '\(path)' hung up before replying") }
            reply.append(contentsOf: buffer[0..<count])
        }
        return String(decoding: reply.prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self)
    }

    private static func connect(to path: String) throws(ControlError) -> Int32 {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        guard path.utf8.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw ControlError(code: "socket-path", message: "the socket path '\(path)' is too long")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in raw.copyBytes(from: path.utf8) }
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw ControlError(code: "socket", message: String(cString: strerror(errno))) }
        // SAFETY: `address` is a complete sockaddr_un, passed with its own size.
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw ControlError(
                code: "not-serving", message: "nothing serves at '\(path)' (\(reason)); start it with `sluice serve GRAPH`")
        }
        // What is sent may be private (a screen reader's text): only to a server of this user's.
        let user = geteuid()
        guard let peer = SocketPlace.peerUID(descriptor), peer == user else {
            close(descriptor)
            throw ControlError(
                code: "not-yours", message: "the socket '\(path)' is served by another user's process, not yours; "
                    + "nothing was sent (remove it, or serve your own graph)")
        }
        return descriptor
    }

    private static func send(_ line: String, on descriptor: Int32, path: String) throws(ControlError) {
        var bytes = Array(line.utf8)
        bytes.append(UInt8(ascii: "\n"))
        guard Glibc.send(descriptor, bytes, bytes.count, Int32(MSG_NOSIGNAL)) == bytes.count else {
            throw ControlError(code: "not-serving", message: "the server at '\(path)' hung up")
        }
    }

    private static func monotonicNow() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) * 1e-9
    }
}
