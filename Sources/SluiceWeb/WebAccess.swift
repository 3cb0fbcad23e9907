/// Who may use a served graph's web surface, decided from one request's head alone.
///
/// A loopback port is open to every local user and to every web page the user's browser
/// shows, so three rules hold:
/// - **Host.** Without a token only a loopback name is answered (`127.0.0.1`, `localhost`,
///   `[::1]`, with any port): a page on another site that makes its own name resolve to
///   127.0.0.1 (DNS rebinding) is refused, since its requests carry that name.
/// - **Origin.** A request a browser made for a page (it always sends `Origin` for a
///   WebSocket) must come from the same origin as the surface itself: another site's page may
///   not open the WebSocket and send commands in the user's name. A client that is not a
///   browser sends no `Origin` and is not subject to this rule.
/// - **Token.** On any address but loopback, every request carries the token from the token
///   file: `Authorization: Bearer TOKEN`, or `?token=TOKEN` in the address (how the page
///   passes it to its own requests). Compared in constant time.
///
/// Threading: [thread-safe] (a value).
public struct WebAccess: Sendable {
    /// The token every request must carry, or nil: loopback only, no token.
    public let token: String?

    public init(token: String?) {
        self.token = token
    }

    /// Why a request is refused, with the HTTP status it gets.
    public struct Refusal: Error, Sendable, Equatable {
        public let status: Int
        public let message: String
    }

    /// Checks one request's head: the `Host`, `Origin` and `Authorization` headers and the
    /// request's target (for `?token=`). Nil: it may go on.
    public func check(host: String?, origin: String?, authorization: String?, target: String) -> Refusal? {
        guard let host, !host.isEmpty else {
            return Refusal(status: 400, message: "the request names no Host")
        }
        if token == nil, !Self.isLoopback(host: host) {
            return Refusal(
                status: 403,
                message: "this surface answers only to 127.0.0.1, localhost or [::1] (it listens on loopback without a token); the request named '\(host)'")
        }
        if let origin, origin != "http://" + host {
            return Refusal(status: 403, message: "a page from \(origin) may not use this surface; open it at http://\(host)/")
        }
        if let token {
            let given = Self.bearer(authorization) ?? Self.queryToken(in: target)
            guard let given, Self.constantTimeEqual(given, token) else {
                return Refusal(status: 401, message: "this surface needs its token: open http://\(host)/?token=… with the token file's first line")
            }
        }
        return nil
    }

    /// Whether `host` (a Host header: a name or address, with an optional port) names loopback.
    public static func isLoopback(host: String) -> Bool {
        var name = Substring(host)
        if name.hasPrefix("[") {
            guard let end = name.firstIndex(of: "]") else { return false }
            let rest = name[name.index(after: end)...]
            guard rest.isEmpty || Self.isPort(rest.dropFirst()) && rest.first == ":" else { return false }
            return name[name.index(after: name.startIndex)..<end] == "::1"
        }
        if let colon = name.lastIndex(of: ":") {
            guard isPort(name[name.index(after: colon)...]) else { return false }
            name = name[..<colon]
        }
        return name == "127.0.0.1" || name.lowercased() == "localhost"
    }

    private static func isPort(_ text: Substring) -> Bool {
        !text.isEmpty && text.count <= 5 && text.allSatisfy { $0.isASCII && $0.isNumber }
    }

    private static func bearer(_ authorization: String?) -> String? {
        guard let authorization, authorization.lowercased().hasPrefix("bearer ") else { return nil }
        return String(authorization.dropFirst("bearer ".count))
    }

    /// The `token` in a request target's query, percent-decoded; nil if none.
    static func queryToken(in target: String) -> String? {
        guard let question = target.firstIndex(of: "?") else { return nil }
        for pair in target[target.index(after: question)...].split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            if parts.count == 2, parts[0] == "token" { return String(parts[1]).percentDecoded }
        }
        return nil
    }

    /// Compares every byte whatever the first difference, so the time taken does not tell how
    /// much of a guess was right.
    static func constantTimeEqual(_ given: String, _ expected: String) -> Bool {
        let a = Array(given.utf8)
        let b = Array(expected.utf8)
        var difference = UInt8(a.count == b.count ? 0 : 1)
        for index in 0..<b.count {
            difference |= (index < a.count ? a[index] : 0) ^ b[index]
        }
        return difference == 0
    }
}

private extension String {
    /// Percent-decoding without Foundation: nil when a `%` is not followed by two hex digits or
    /// the bytes are not UTF-8.
    var percentDecoded: String? {
        var bytes: [UInt8] = []
        var iterator = utf8.makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next().flatMap(Self.hexValue), let low = iterator.next().flatMap(Self.hexValue) else { return nil }
                bytes.append(high << 4 | low)
            } else if byte == UInt8(ascii: "+") {
                bytes.append(UInt8(ascii: " "))
            } else {
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
