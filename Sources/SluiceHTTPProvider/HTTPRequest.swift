/// One HTTP request: what a speech service sends for an utterance (or a quota check).
public struct HTTPRequest: Sendable, Hashable {
    public var method: String
    public var url: String
    public var headers: [HTTPHeader]
    public var body: [UInt8]?

    public init(method: String, url: String, headers: [HTTPHeader] = [], body: [UInt8]? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }
}

public struct HTTPHeader: Sendable, Hashable {
    public var name: String
    public var value: String

    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// A complete (small) response: a failed request's body, or a quota check's.
public struct HTTPResponse: Sendable, Hashable {
    public var status: Int
    public var body: [UInt8]

    public init(status: Int, body: [UInt8]) {
        self.status = status
        self.body = body
    }

    public var text: String { String(decoding: body, as: UTF8.self) }
}

extension HTTPRequest {
    /// The URL without its query or credentials: what error messages may show, since a query
    /// (or `user:password@`) can carry a key.
    public var displayURL: String { HTTPRequest.display(url) }

    /// `url` without its query or credentials (see `displayURL`).
    public static func display(_ url: String) -> String {
        var shown = url
        if let query = shown.firstIndex(where: { $0 == "?" || $0 == "#" }) { shown = String(shown[..<query]) }
        if let scheme = shown.range(of: "://"), let at = shown[scheme.upperBound...].firstIndex(of: "@"),
            !shown[scheme.upperBound..<at].contains("/")
        {
            shown.removeSubrange(scheme.upperBound...at)
        }
        return shown
    }
}
