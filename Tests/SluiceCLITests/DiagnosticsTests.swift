import Foundation
import SluiceTestSupport
import Testing

/// Diagnostics through swift-log: `--log-level` on every command and `SLUICE_LOG_LEVEL`, the
/// option winning; one line each on standard error (`debug: …`, `debug: libjack: …`); libjack's
/// own messages only at debug, behind Sluice's one message.
@Suite struct DiagnosticsTests {
    /// Every subcommand of `sluice`.
    static let commands = ["run", "launch", "serve", "ctl", "check", "render", "dot", "nodes", "schema", "convert", "plugins", "speak"]

    static func debugLines(_ text: String) -> [String] {
        text.split(separator: "\n").map(String.init).filter { $0.hasPrefix("debug: ") }
    }

    @Test("--log-level debug prints debug lines; the default prints none, and the data is the same")
    func debugLevel() throws {
        let quiet = try CLI.sluice(["dot", "graphs/tone.yaml"])
        #expect(quiet.status == 0, "\(quiet.standardError)")
        #expect(quiet.standardError == "")
        let loud = try CLI.sluice(["dot", "graphs/tone.yaml", "--log-level", "debug"])
        #expect(loud.status == 0, "\(loud.standardError)")
        let lines = Self.debugLines(loud.standardError)
        #expect(lines.contains("debug: reading graph file graphs/tone.yaml"), "\(loud.standardError)")
        #expect(lines.contains("debug: graph 'tone' checked: 3 nodes, 2 links"), "\(loud.standardError)")
        #expect(lines.count == loud.standardError.split(separator: "\n").count, "every line is a log line: \(loud.standardError)")
        #expect(loud.standardOutput == quiet.standardOutput, "diagnostics never reach standard output")
    }

    @Test("SLUICE_LOG_LEVEL sets the level; --log-level wins over it")
    func environmentAndOption() throws {
        let fromEnvironment = try CLI.sluice(["check", "graphs/tone.yaml"], environment: ["SLUICE_LOG_LEVEL": "debug"])
        #expect(fromEnvironment.status == 0)
        #expect(!Self.debugLines(fromEnvironment.standardError).isEmpty, "\(fromEnvironment.standardError)")
        let optionWins = try CLI.sluice(
            ["check", "graphs/tone.yaml", "--log-level", "warning"], environment: ["SLUICE_LOG_LEVEL": "debug"])
        #expect(optionWins.status == 0)
        #expect(Self.debugLines(optionWins.standardError).isEmpty, "\(optionWins.standardError)")
    }

    @Test("a SLUICE_LOG_LEVEL that is no level is said once and the default used")
    func environmentTypo() throws {
        let outcome = try CLI.sluice(["check", "graphs/tone.yaml"], environment: ["SLUICE_LOG_LEVEL": "loud"])
        #expect(outcome.status == 0)
        #expect(outcome.standardError.hasPrefix(
            "warning: SLUICE_LOG_LEVEL='loud' is not a level (trace, debug, info, notice, warning, error, critical); using warning\n"),
            "\(outcome.standardError)")
        #expect(Self.debugLines(outcome.standardError).isEmpty)
    }

    @Test("every command takes --log-level; a level that is not one is a usage error (exit 2)", arguments: commands)
    func everyCommand(_ command: String) throws {
        let outcome = try CLI.sluice([command, "--log-level", "loud"])
        #expect(outcome.status == 2, "\(outcome.standardError)")
        #expect(outcome.standardError.contains("The value 'loud' is invalid for '--log-level <level>'"), "\(outcome.standardError)")
        #expect(outcome.standardOutput == "")
    }

    @Test("a warning goes through the logger: shown by default, hidden at --log-level error")
    func warningsFollowTheLevel() throws {
        let folder = TemporaryFolder()
        _ = try folder.write("not a library", to: "libsluice-broken.so")
        let environment = ["SLUICE_PLUGIN_PATH": folder.url.path]
        let shown = try CLI.sluice(["nodes", "tone"], environment: environment)
        #expect(shown.status == 0, "\(shown.standardError)")
        #expect(shown.standardError.hasPrefix("warning: a plugin did not load: "), "\(shown.standardError)")
        #expect(shown.standardError.contains("libsluice-broken.so"), "\(shown.standardError)")
        let hidden = try CLI.sluice(["nodes", "tone", "--log-level", "error"], environment: environment)
        #expect(hidden.status == 0)
        #expect(hidden.standardError == "")
        #expect(hidden.standardOutput == shown.standardOutput)
    }

    @Test("no server: Sluice's message alone by default; at debug, libjack's own lines too, marked libjack")
    func libjackMessages() throws {
        let server = "sluice-absent-log-\(getpid())"
        let arguments = ["launch", "tone duration=0.1 ! jack.sink", "--server", server]
        let quiet = try CLI.sluice(arguments)
        #expect(quiet.status == 1)
        #expect(quiet.standardError.hasPrefix("error: no JACK server named '\(server)' is running. Start one:"), "\(quiet.standardError)")
        #expect(quiet.standardError.split(separator: "\n").count == 1, "one message: \(quiet.standardError)")
        #expect(!quiet.standardError.contains("Cannot connect to server"), "\(quiet.standardError)")

        let loud = try CLI.sluice(arguments + ["--log-level", "debug"])
        #expect(loud.status == 1)
        let libjack = loud.standardError.split(separator: "\n").filter { $0.hasPrefix("debug: libjack: ") }
        #expect(libjack.contains { $0.contains("Cannot connect to server socket") }, "\(loud.standardError)")
        #expect(loud.standardError.contains("error: no JACK server named '\(server)' is running. Start one:"))
    }
}
