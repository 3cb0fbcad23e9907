import Foundation

/// A URL a provider connects to, parsed once: the secret policy decides on this value, and
/// the connection dials this value, so what is checked is what is dialled.
///
/// Strict where URLs are ambiguous between parsers (the way a key was once sent to another
/// host: `https://api.elevenlabs.io#@evil:443` is a fragment to one parser and user info to
/// another). Refused: user info (`user@`), a fragment (`#`), backslashes, spaces, control and
/// non-ASCII characters, percent-encoding in the host, an empty host, a port outside 1…65535.
public struct ProviderURL: Sendable, Hashable {
    /// Lowercased: one of the schemes the caller allowed.
    public var scheme: String
    /// Lowercased, without the brackets of an IPv6 address.
    public var host: String
    /// The port, the scheme's own when the URL names none.
    public var port: Int
    /// The request target: the path (at least "/") and the query, as written.
    public var target: String

    /// Why a text is not a URL a provider may connect to.
    public struct Refusal: Error, Sendable, Hashable, CustomStringConvertible {
        public var reason: String
        public var description: String { reason }
    }

    public static let defaultPorts = ["http": 80, "https": 443, "ws": 80, "wss": 443]

    public init(_ text: String, schemes: Set<String>) throws(Refusal) {
        guard text.utf8.allSatisfy({ (0x21...0x7e).contains($0) }) else {
            throw Refusal(reason: "it has a space, a control character or a character outside ASCII (percent-encode it)")
        }
        guard !text.contains("\\") else { throw Refusal(reason: "it has a backslash, which URL parsers read differently") }
        guard !text.contains("#") else { throw Refusal(reason: "it has a fragment ('#'), which a connection never uses") }
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased() else {
            throw Refusal(reason: "it is not a URL")
        }
        guard schemes.contains(scheme), let defaultPort = Self.defaultPorts[scheme] else {
            throw Refusal(reason: "its scheme is not \(schemes.sorted().joined(separator: " or "))")
        }
        guard components.percentEncodedUser == nil, components.percentEncodedPassword == nil else {
            throw Refusal(reason: "it has user info ('…@'); put credentials in the key's variable, not the URL")
        }
        guard var host = components.percentEncodedHost?.lowercased(), !host.isEmpty else {
            throw Refusal(reason: "it has no host")
        }
        guard !host.contains("%") else { throw Refusal(reason: "its host is percent-encoded") }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if let port = components.port, !(1...65_535).contains(port) {
            throw Refusal(reason: "its port \(port) is not 1 to 65535")
        }
        self.scheme = scheme
        self.host = host
        port = components.port ?? defaultPort
        let path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        target = path + (components.percentEncodedQuery.map { "?" + $0 } ?? "")
    }

    /// https and wss.
    public var isSecure: Bool { scheme == "https" || scheme == "wss" }

    public var isDefaultPort: Bool { port == Self.defaultPorts[scheme] }

    /// `host`, or `host:port` when the port is not the scheme's own; IPv6 in brackets.
    public var authority: String {
        let name = host.contains(":") ? "[\(host)]" : host
        return isDefaultPort ? name : "\(name):\(port)"
    }

    /// This machine: localhost, ::1 or 127.x.y.z.
    public var isLoopback: Bool {
        if host == "localhost" || host == "::1" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
    }
}
