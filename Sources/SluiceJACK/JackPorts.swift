import CJack
import Glibc
import SluiceGraph

/// What `jack.sink` and `jack.source` share: their client, server, ports and connect
/// parameters, and how a `connect` list becomes port connections.
enum JackPorts {
    static let clientParameter = ParameterDescriptor(
        "client", .string, default: nil,
        summary: "The graph's JACK client name (one client holds every jack.sink and jack.source port); absent takes playback.client, then the graph's name. JACK appends -01, -02… when it is taken.")

    static let serverParameter = ParameterDescriptor(
        "server", .string, default: nil,
        summary: "JACK server name; absent follows --server, then $JACK_DEFAULT_SERVER, then \"default\".")

    static func portsParameter(prefix: String) -> ParameterDescriptor {
        ParameterDescriptor(
            "ports", .list, default: nil,
            summary: "Port names, one per channel; absent names them \(prefix)_1, \(prefix)_2, …")
    }

    static func connectParameter(physical: String, others: String) -> ParameterDescriptor {
        ParameterDescriptor(
            "connect", .list, default: .list(["auto"]),
            summary: "auto (the physical \(physical) ports found), none, or \(others) names / regular expressions, one per channel.")
    }

    static let waitForPortsParameter = ParameterDescriptor(
        "wait-for-ports", .number(0...86_400), default: .number(0), unit: "s",
        summary: "How long to wait at the start for the ports `connect` names to appear (a NetJack2 slave joining, a client started later); the graph runs meanwhile and connects them when they come. 0: a name nothing matches is an error at once.")

    /// Which way our ports carry audio.
    enum Direction {
        /// Our outputs feed others' inputs (a sink).
        case playback
        /// Others' outputs feed our inputs (a source).
        case capture
    }

    /// Connects `ours` (full port names) as `connect` says: `none`; `auto`, the physical ports
    /// the server has (none found is not an error; one playback port goes to the first two
    /// speakers); or one port name or regular expression per channel.
    ///
    /// - Returns: the connections made, as (from, to).
    static func connect(
        _ ours: [String], as direction: Direction, following connect: [String], client: JackClient
    ) throws(JackError) -> [(from: String, to: String)] {
        let theirFlag = direction == .playback ? JackPortIsInput.rawValue : JackPortIsOutput.rawValue
        var theirs: [String] = []
        switch connect {
        case ["none"]:
            return []
        case ["auto"]:
            let physical = client.ports(flags: JackPortFlags(rawValue: JackPortIsPhysical.rawValue | theirFlag))
            let count = direction == .playback && ours.count == 1 ? 2 : ours.count
            theirs = Array(physical.prefix(count))
        default:
            for pattern in connect {
                let found = client.ports(matching: pattern, flags: JackPortFlags(rawValue: theirFlag))
                guard let first = found.first(where: { !theirs.contains($0) }) else {
                    let kind = direction == .playback ? "input" : "output"
                    throw JackError("no JACK \(kind) port matches '\(pattern)' (connect)")
                }
                theirs.append(first)
            }
        }
        var made: [(from: String, to: String)] = []
        for (index, their) in theirs.enumerated() {
            let our = ours[min(index, ours.count - 1)]
            let (from, to) = direction == .playback ? (our, their) : (their, our)
            guard direction == .playback || index < ours.count else { break }
            let result = jack_connect(client.handle, from, to)
            guard result == 0 || result == EEXIST else { throw JackError("JACK could not connect '\(from)' to '\(to)'") }
            made.append((from, to))
        }
        return made
    }
}
