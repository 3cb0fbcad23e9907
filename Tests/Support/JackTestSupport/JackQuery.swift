import CJack

/// Questions about a server's ports, each asked through a short-lived client.
///
/// Threading: [thread-safe] (each call opens its own client).
public enum JackQuery {
    /// Port names matching `pattern` (a regular expression; nil: all) and `type` (nil: any),
    /// with all of `flags` (e.g. `[JackPortIsInput, JackPortIsPhysical]`).
    public static func ports(
        matching pattern: String? = nil, type: String? = nil, flags: [JackPortFlags] = [], server: String
    ) throws(JackTestError) -> [String] {
        let mask = flags.reduce(UInt(0)) { $0 | UInt($1.rawValue) }
        return try withClient(server: server) { client in
            takeNames(jack_get_ports(client, pattern, type, mask))
        }
    }

    /// Names of the ports connected to `port` ("client:port").
    /// - Throws: `JackTestError` when no such port exists.
    public static func connections(of port: String, server: String) throws(JackTestError) -> [String] {
        try withClient(server: server) { client throws(JackTestError) in
            guard let handle = jack_port_by_name(client, port) else {
                throw JackTestError("JACK server '\(server)' has no port named '\(port)'")
            }
            return takeNames(jack_port_get_all_connections(client, handle))
        }
    }

    /// Runs `body` with a client open on `server`, closing it afterwards.
    public static func withClient<Result>(
        server: String, named clientName: String = "sluice-query",
        _ body: (OpaquePointer) throws(JackTestError) -> Result
    ) throws(JackTestError) -> Result {
        let client = try BoundedClients.open(clientName, server: server)
        defer { BoundedClients.close(client, server: server) }
        return try body(client)
    }

    /// Copies a NULL-terminated list of names that libjack allocated, and frees it.
    static func takeNames(_ list: UnsafeMutablePointer<UnsafePointer<CChar>?>?) -> [String] {
        guard let list else { return [] }
        defer { jack_free(list) }
        var names: [String] = []
        var index = 0
        while let name = list[index] {
            names.append(String(cString: name))
            index += 1
        }
        return names
    }
}

/// Names of the ports connected to `port` on `server`.
public func connections(of port: String, server: String) throws(JackTestError) -> [String] {
    try JackQuery.connections(of: port, server: server)
}

/// Port names on `server` matching `pattern` with all of `flags`.
public func ports(
    matching pattern: String? = nil, type: String? = nil, flags: [JackPortFlags] = [], server: String
) throws(JackTestError) -> [String] {
    try JackQuery.ports(matching: pattern, type: type, flags: flags, server: server)
}
