import Foundation

/// Runs `jack-impulse-probe` (Tests/Support/JackImpulseProbe): two independent C JACK clients that
/// send a one-sample impulse every `interval` frames and time its arrival in JACK frames, so a
/// test measures the delay a client or chain between them adds, as a JACK user would.
public enum ImpulseProbe {
    public struct Report: Sendable {
        public var sent: Int
        public var received: Int
        /// Frames from each impulse sent to its arrival.
        public var delays: [Int]
        public var medianDelay: Int?
        public var xruns: Int
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Sends into `sendTo` and listens at `receiveFrom` (full port names) for `seconds`.
    public static func run(
        server: String, sendTo: String, receiveFrom: String, seconds: Double = 2, prefix: String = "impulse"
    ) throws -> Report {
        try report(CommandRunner.run(
            "jack-impulse-probe",
            ["--server", server, "--prefix", prefix, "--send-to", sendTo, "--receive-from", receiveFrom,
             "--seconds", String(seconds)],
            timeout: seconds + 20))
    }

    /// The two clients wired to each other: the reference, 0 frames.
    public static func runDirect(server: String, seconds: Double = 1, prefix: String = "impulse") throws -> Report {
        try report(CommandRunner.run(
            "jack-impulse-probe", ["--server", server, "--prefix", prefix, "--direct", "--seconds", String(seconds)],
            timeout: seconds + 20))
    }

    private static func report(_ outcome: CommandRunner.Outcome) throws -> Report {
        guard outcome.status == 0,
              let object = try? JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8)) as? [String: Any],
              let sent = object["sent"] as? Int, let received = object["received"] as? Int,
              let delays = object["delays"] as? [Int], let xruns = object["xruns"] as? Int
        else {
            throw Failure(description: "jack-impulse-probe failed (\(outcome.status)): \(outcome.standardError) \(outcome.standardOutput)")
        }
        return Report(sent: sent, received: received, delays: delays, medianDelay: object["medianDelay"] as? Int, xruns: xruns)
    }
}
