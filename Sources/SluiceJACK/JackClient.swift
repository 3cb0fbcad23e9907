import CJack
import Glibc

/// A JACK problem, told in a sentence a user can act on.
public struct JackError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }

    /// No server answered.
    static func noServer(_ server: String?) -> JackError {
        let name = JackDeadline.serverName(server)
        return JackError(
            "no JACK server named '\(name)' is running. Start one: `jackd -d alsa` for a sound card, "
                + "`jackd --no-realtime -d dummy -r 48000 -p 256 &` for a test server (add `-n \(name)` for a named one), "
                + "or run Sluice under PipeWire's JACK layer with `pw-jack sluice …`")
    }
}

/// A client of a JACK server: opened without starting a server, closed on deinit.
///
/// Threading: [control-thread] for everything here. The process, xrun and shutdown callbacks are
/// registered by the sink that owns the client.
public final class JackClient: @unchecked Sendable {
    // SAFETY: a jack_client_t* owned by this object from open to close.
    let handle: OpaquePointer
    /// The name JACK gave the client (it appends `-01` … when the name is taken).
    public let name: String
    /// The server asked for, or nil for JACK's default (`$JACK_DEFAULT_SERVER`, then
    /// "default").
    public let server: String?
    private var closed = false

    /// Whether the `libjack` loaded is PipeWire's JACK layer (`pw-jack`), which says so in
    /// its version string; jack2 and JACK1 do not.
    static let isPipeWire: Bool = {
        guard let version = jack_get_version_string() else { return false }
        return String(cString: version).contains("PipeWire")
    }()

    /// Opens a client named `name` on `server`. Never starts a server; gives up with an error
    /// when the server does not answer within ``JackDeadline/openTimeout``.
    public init(name: String, server: String?) throws(JackError) {
        JackLibraryMessages.install()
        let options = jack_options_t(rawValue: JackNoStartServer.rawValue)
        let handle = try JackDeadline.openClient(named: name, options: options, server: server)
        self.handle = handle
        self.server = server
        self.name = String(cString: jack_get_client_name(handle))
        JackLibraryMessages.sluiceLogger.debug(
            "client '\(self.name)' opened on server '\(JackDeadline.serverName(server))': \(jack_get_sample_rate(handle)) Hz, \(jack_get_buffer_size(handle)) frames a period")
    }

    deinit {
        close()
    }

    /// The server's sample rate, in Hz.
    public var sampleRate: Int { Int(jack_get_sample_rate(handle)) }

    /// Frames per process callback now (it may change while running).
    public var bufferSize: Int { Int(jack_get_buffer_size(handle)) }

    /// Closes the client (deactivating it first), waiting at most
    /// ``JackDeadline/closeTimeout`` for the server. Safe to call more than once.
    public func close() {
        guard !closed else { return }
        closed = true
        JackDeadline.close(handle, server: server)
    }

    /// Marks the client closed without asking the server: for a server that stopped
    /// answering, where closing would wait for ever.
    func abandon() {
        closed = true
    }

    /// Port names matching a regular expression (nil: all) with all of `flags`.
    public func ports(matching pattern: String? = nil, flags: JackPortFlags) -> [String] {
        guard let list = jack_get_ports(handle, pattern, nil, UInt(flags.rawValue)) else { return [] }
        defer { jack_free(UnsafeMutableRawPointer(mutating: list)) }
        var names: [String] = []
        var index = 0
        while let name = list[index] {
            names.append(String(cString: name))
            index += 1
        }
        return names
    }
}

/// A client handle moved to a thread that makes one call with it.
struct JackClientHandle: @unchecked Sendable {
    // SAFETY: the owner keeps the client open while the call runs, and uses it no more if
    // the call is abandoned.
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
}

/// The environment without Foundation.
enum ProcessInfoLite {
    static func environment(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }
}
