import Foundation
import HTTPTestSupport
import SluiceTestSupport
import Testing

/// The exit status tells the truth: a provider that fails during `render`, `run` or `speak`
/// makes the command exit 1 after writing what it received, faded; `--keep-going` makes that
/// 0; `--stats json` lists the failure with its code; a usage error exits 2. Each failure kind
/// comes from a loopback server answering as ElevenLabs' API does.
@Suite struct ExitStatusTests {
    static let key = "el-cli-key-81c3"
    static let keyVariable = "SLUICE_TEST_CLI_EL_KEY"

    /// S16LE noise-like PCM, 4 410 frames.
    static let speech: [UInt8] = (0..<4_410).flatMap { frame -> [UInt8] in
        let sample = UInt16(truncatingIfNeeded: frame &* 2_654_435_761 >> 13)
        return [UInt8(sample & 0xFF), UInt8(sample >> 8)]
    }

    /// A graph speaking through `elevenlabs` at `server` into a sink the render replaces.
    static func graph(_ server: HTTPTestServer, in folder: TemporaryFolder) throws -> URL {
        try folder.write("""
            name: exit-status
            nodes:
              voice: { type: elevenlabs, transport: http, base-url: "\(server.baseURL)", key-env: \(keyVariable), voice: v, retries: 1, retry-delay: 0.01, stall-timeout: 0.3 }
              align: { type: aligner }
              fade:  { type: fader, length: 256 }
              out:   { type: null.sink, rate: 24000, channels: 1 }
            links:
              - voice -> align -> fade -> out
            """, to: "exit-status.yaml")
    }

    /// A server that speaks "first" and answers the second sentence with `failure`.
    static func server(failing failure: HTTPTestServer.Reply) throws -> HTTPTestServer {
        try HTTPTestServer { request in
            request.json?["text"] as? String == "First." ? .init(body: Self.speech) : failure
        }
    }

    static func render(_ server: HTTPTestServer, _ extra: [String] = []) throws -> (CommandRunner.Outcome, SoundFileContents?) {
        let folder = TemporaryFolder()
        let graph = try Self.graph(server, in: folder)
        let output = folder.file("out.wav")
        let outcome = try CLI.sluice(
            ["render", graph.path, "--text", "First.\nSecond.", "-o", output.path] + extra, environment: [keyVariable: key])
        return (outcome, try? SoundFileContents(output))
    }

    static let failures: [(String, HTTPTestServer.Reply, String)] = [
        ("401 invalid key", .error(401, json: #"{"detail": {"status": "invalid_api_key", "message": "Invalid API key"}}"#), "invalid-key"),
        ("401 quota", .error(401, json: #"{"detail": {"status": "quota_exceeded", "message": "This request exceeds your quota."}}"#), "quota-exceeded"),
        ("429 after the retries", .error(429, json: #"{"detail": {"status": "system_busy", "message": "Busy."}}"#), "system-busy"),
        ("500", .error(500, json: #"{"detail": {"status": "internal_error", "message": "Something broke."}}"#), "server-error"),
        ("a dropped connection", .init(body: speech, ending: .drop(afterBytes: 1_000)), "connection-lost"),
        ("a stall", .init(body: speech, ending: .stall(afterBytes: 1_000)), "stalled"),
    ]

    @Test("render exits 1 for every provider failure kind, after writing the first sentence faded", arguments: 0..<failures.count)
    func renderFails(_ index: Int) throws {
        let (name, reply, code) = Self.failures[index]
        let server = try Self.server(failing: reply)
        let (outcome, file) = try Self.render(server, ["--stats", "json"])
        #expect(outcome.status == 1, "\(name): \(outcome.standardError)")
        #expect(outcome.standardError.contains("error: voice: "), "\(name): \(outcome.standardError)")
        #expect(!outcome.standardError.contains(Self.key))
        let stats = try #require(try JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8)) as? [String: Any])
        #expect((stats["failureCodes"] as? [String: String])?["voice"] == code, "\(name)")
        #expect((stats["failures"] as? [String])?.count == 1)
        // What arrived is kept: the first sentence whole (plus what a broken reply brought),
        // ending in the fader's fade rather than a click.
        let samples = try #require(file?.samples)
        #expect(samples.count >= 4_410, "\(name)")
        #expect(abs(samples.last ?? 1) < 0.001, "\(name)")
    }

    @Test("--keep-going counts a partial render as success; the failure is still reported")
    func keepGoing() throws {
        let server = try Self.server(failing: Self.failures[3].1)
        let (outcome, file) = try Self.render(server, ["--keep-going"])
        #expect(outcome.status == 0, "\(outcome.standardError)")
        #expect(outcome.standardError.contains("warning: voice: "), "\(outcome.standardError)")
        #expect((file?.frames ?? 0) >= 4_410)
    }

    @Test("a render without failures exits 0")
    func success() throws {
        let server = try HTTPTestServer { _ in .init(body: Self.speech) }
        let (outcome, file) = try Self.render(server)
        #expect(outcome.status == 0, "\(outcome.standardError)")
        #expect(file?.frames == 2 * 4_410)
    }

    @Test("speak exits 1 on a provider failure, 0 with --keep-going")
    func speak() throws {
        let server = try Self.server(failing: Self.failures[0].1)
        let folder = TemporaryFolder()
        let graph = try Self.graph(server, in: folder)
        let arguments = ["speak", "First. Second.", "--graph", graph.path, "--out", folder.file("s.wav").path, "--no-cache"]
        let failed = try CLI.sluice(arguments, environment: [Self.keyVariable: Self.key])
        #expect(failed.status == 1, "\(failed.standardError)")
        #expect(failed.standardError.contains("invalid-key"), "\(failed.standardError)")
        let kept = try CLI.sluice(arguments + ["--keep-going"], environment: [Self.keyVariable: Self.key])
        #expect(kept.status == 0, "\(kept.standardError)")
        #expect(kept.standardError.contains("warning: voice: "), "\(kept.standardError)")
        // --stats json lists the failure by its code, failed or kept going.
        for (outcome, status) in [(try CLI.sluice(arguments + ["--stats", "json"], environment: [Self.keyVariable: Self.key]), Int32(1)),
                                  (try CLI.sluice(arguments + ["--stats", "json", "--keep-going"], environment: [Self.keyVariable: Self.key]), 0)] {
            #expect(outcome.status == status, "\(outcome.standardError)")
            let stats = try JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8)) as? [String: Any]
            #expect(stats?["failureCodes"] as? [String: String] == ["voice": "invalid-key"], "\(outcome.standardOutput)")
            #expect((stats?["failures"] as? [String])?.first?.contains("HTTP 401") == true, "\(outcome.standardOutput)")
        }
    }

    @Test("usage errors exit 2, with the reason and the usage line")
    func usage() throws {
        let outcome = try CLI.sluice(["render", "graphs/speech.yaml", "--block", "3"])
        #expect(outcome.status == 2)
        #expect(outcome.standardError.contains("--block must be 16…8192 frames"), "\(outcome.standardError)")
        #expect(outcome.standardError.contains("Usage: sluice render"), "\(outcome.standardError)")
        let unknown = try CLI.sluice(["render", "--no-such-option"])
        #expect(unknown.status == 2)
        #expect(unknown.standardError.contains("Usage: sluice render"), "\(unknown.standardError)")
        // A subcommand is parsed on its own first (SluiceCommand.parseSubcommandDirectly);
        // its help still names it under `sluice`.
        let commandHelp = try CLI.sluice(["render", "--help"])
        #expect(commandHelp.status == 0)
        #expect(commandHelp.standardOutput.contains("USAGE: sluice render"), "\(commandHelp.standardOutput)")
        let help = try CLI.sluice(["--help"])
        #expect(help.status == 0)
        #expect(help.standardOutput.contains("Exit status: 0 success; 1 failure"))
    }

    @Test("a misspelt command suggests the right one, help for no command is a usage error; every error starts 'error: '")
    func unknownCommands() throws {
        let misspelt = try CLI.sluice(["speek", "hi"])
        #expect(misspelt.status == 2)
        #expect(misspelt.standardError.hasPrefix("error: 'speek' is not a sluice command; did you mean 'speak'?"), "\(misspelt.standardError)")
        let help = try CLI.sluice(["help", "nosuch"])
        #expect(help.status == 2)
        #expect(help.standardError.hasPrefix("error: 'nosuch' is not a sluice command to show help for"), "\(help.standardError)")
        #expect(try CLI.sluice(["help", "speak"]).status == 0)
        let missing = try CLI.sluice(["render"])
        #expect(missing.status == 2)
        #expect(missing.standardError.hasPrefix("error: Missing expected argument"), "\(missing.standardError)")
    }

    @Test("speak with no text: an empty argument is a usage error, standard input that ends at once is said so, exit 0")
    func nothingToSpeak() throws {
        for text in ["", "   "] {
            let empty = try CLI.sluice(["speak", text])
            #expect(empty.status == 2)
            #expect(empty.standardError.hasPrefix("error: nothing to speak: the text is empty"), "\(empty.standardError)")
        }
        let folder = TemporaryFolder()
        let closed = try CLI.sluice(["speak", "-", "-o", folder.file("nothing.wav").path], input: Data())
        #expect(closed.status == 0, "\(closed.standardError)")
        #expect(closed.standardError.contains("spoke nothing: the input ended before any text"), "\(closed.standardError)")
    }

    @Test("ctl with nothing served exits 1 naming `sluice serve`, whether it looked for the socket or was given one")
    func ctlWithNothingServed() throws {
        let runtime = TemporaryFolder()
        let looked = try CLI.sluice(["ctl", "status"], environment: ["XDG_RUNTIME_DIR": runtime.path])
        #expect(looked.status == 1, "\(looked.standardError)")
        #expect(looked.standardError.contains("error: no served graph found in \(runtime.path)/sluice: start one with `sluice serve GRAPH`"),
                "\(looked.standardError)")
        let given = try CLI.sluice(["ctl", "--socket", runtime.file("none.sock").path, "status"])
        #expect(given.status == 1, "\(given.standardError)")
        #expect(given.standardError.contains("start it with `sluice serve GRAPH`"), "\(given.standardError)")
        let named = try CLI.sluice(["ctl", "--graph", "../../x", "status"], environment: ["XDG_RUNTIME_DIR": runtime.path])
        #expect(named.status == 1, "\(named.standardError)")
        #expect(named.standardError.contains("cannot name its control socket"), "\(named.standardError)")
    }
}
