import CJack
import SluiceJACK

/// The test clients' opens and closes, with the product's deadlines (``JackDeadline``): a
/// server that stops answering fails the test that waited on it, in seconds, naming the server
/// and the client, instead of holding the whole run.
enum BoundedClients {
    /// Opens `name` on `server` (never starting one), or throws naming both.
    static func open(
        _ name: String, options: jack_options_t = JackNullOption, server: String
    ) throws(JackTestError) -> OpaquePointer {
        let options = jack_options_t(rawValue: options.rawValue | JackNoStartServer.rawValue)
        do {
            return try JackDeadline.openClient(named: name, options: options, server: server)
        } catch {
            throw JackTestError("could not open client '\(name)' on JACK server '\(server)': \(error.message)")
        }
    }

    /// Closes `client`; false when the server did not answer in time (the client is left).
    @discardableResult
    static func close(_ client: OpaquePointer, server: String) -> Bool {
        JackDeadline.close(client, server: server)
    }
}
