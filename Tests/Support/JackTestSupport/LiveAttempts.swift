import Foundation

/// When a live comparison may run again.
///
/// Without real-time scheduling, a loaded 2-core machine has xruns now and then, and an
/// xrun loses a period of the recording. An attempt that differs *and* saw an xrun is
/// run again (up to five attempts); a difference without an xrun fails at once. Three were
/// too few for a whole test run on a fresh machine: a CI run had xruns in all three
/// attempts of the speech chain's comparison.
///
/// Under PipeWire's JACK layer (scripts/test-pipewire) a late cycle is no xrun: PipeWire
/// (0.3.65) logs that the graph had not finished, and tells no JACK client. There the
/// server's log is read, and late cycles count as xruns do (`JackTestServer.lateCycles`).
public enum LiveAttempts {
    public static let count = 5

    /// Whether a failed attempt may be run again: only when something outside the graph
    /// spoiled it — xruns the clients saw, or cycles PipeWire logged as late — and never
    /// silently (each retry is reported on standard error, with its cause).
    public static func mayRetry(after attempt: Int, xruns: Int, lateCycles: Int, test: String = #function) -> Bool {
        guard attempt < count, xruns + lateCycles > 0 else { return false }
        let message = "retrying \(test): attempt \(attempt) was spoiled by \(xruns) xruns and \(lateCycles) late cycles\n"
        FileHandle.standardError.write(Data(message.utf8))
        return true
    }
}
