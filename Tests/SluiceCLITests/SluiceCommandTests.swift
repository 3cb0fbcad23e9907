import Foundation
import SluiceTestSupport
import Testing

/// What every command agrees on: data (DOT, JSON, a schema, listings, --stats json) on standard
/// output, a summary and diagnostics on standard error, as `sluice --help` says.
@Suite struct SluiceCommandTests {
    /// A command's output is data: standard output parses as what it is, and standard error
    /// holds only its summary (here: nothing, or the given text).
    @Test("data commands: standard output is the data, standard error empty", arguments: [
        ["dot", "graphs/tone.yaml"], ["nodes", "tone"], ["nodes", "--json"], ["schema"], ["plugins"], ["check", "-v", "graphs/tone.yaml"],
        ["--version"],
    ])
    func dataOnStandardOutput(_ arguments: [String]) throws {
        let outcome = try CLI.sluice(arguments)
        #expect(outcome.status == 0, "\(outcome.standardError)")
        #expect(!outcome.standardOutput.isEmpty)
        let expectedError = arguments.first == "check" ? "graphs/tone.yaml: ok (3 nodes, 2 links)\n" : ""
        #expect(outcome.standardError == expectedError, "\(outcome.standardError)")
        if arguments.contains("--json") || arguments == ["schema"] {
            #expect((try? JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8))) != nil, "not JSON: \(outcome.standardOutput)")
        }
    }

    @Test("--stats json is the only thing on standard output: render, and speak with its summary on standard error")
    func statsOnStandardOutput() throws {
        let folder = TemporaryFolder()
        let render = try CLI.sluice(["render", "graphs/tone.yaml", "-o", folder.file("t.wav").path, "--stats", "json"])
        #expect(render.status == 0, "\(render.standardError)")
        #expect((try? JSONSerialization.jsonObject(with: Data(render.standardOutput.utf8))) as? [String: Any] != nil)
        #expect(render.standardError == "")
        let speak = try CLI.sluice(["speak", "Hi.", "-o", folder.file("s.wav").path, "--no-cache", "--stats", "json"])
        #expect(speak.status == 0, "\(speak.standardError)")
        #expect((try? JSONSerialization.jsonObject(with: Data(speak.standardOutput.utf8))) as? [String: Any] != nil)
        #expect(speak.standardError.hasPrefix("spoke "), "\(speak.standardError)")
        let quiet = try CLI.sluice(["speak", "Hi.", "-o", folder.file("q.wav").path, "--no-cache"])
        #expect(quiet.standardOutput == "", "without --stats nothing is data")
    }

    @Test("sluice --help says where data and summaries go, and the exit statuses")
    func helpSaysIt() throws {
        let help = try CLI.sluice(["--help"])
        #expect(help.status == 0)
        let text = help.standardOutput.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(text.contains("a command's data (DOT, JSON, a schema, listings, --stats json) goes to standard output; its summary line, errors and diagnostics (--log-level) go to standard error"), "\(text)")
        #expect(text.contains("143 terminated (SIGTERM, faded out as Ctrl-C)"), "\(text)")
    }
}
