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

    /// The bash completion script the tool writes, loaded into a real bash and asked, as
    /// bash's readline would ask, for the words at the cursor (`compgen` underneath).
    @Test("bash completes graph files, output files and providers from the tool itself")
    func bashCompletions() throws {
        let folder = TemporaryFolder()
        let script = try CLI.sluice(["--generate-completion-script", "bash"])
        let scriptFile = try folder.write(script.standardOutput, to: "sluice.bash")
        let driver = try folder.write("""
            source "$1"
            PATH="$2:$PATH"
            cd "$3"
            complete_words() {
              COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
              COMPREPLY=()
              _sluice sluice "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
              printf '%s\\n' "${COMPREPLY[@]}" | sort
              echo --
            }
            complete_words sluice render graphs/to
            complete_words sluice check graphs/spe
            complete_words sluice speak hi --graph graphs/mor
            complete_words sluice render graphs/tone.yaml -o docs/ima
            complete_words sluice speak --provider e
            complete_words sluice speak --voice en-g
            """, to: "driver.sh")
        let outcome = try CommandRunner.run(
            executable: URL(fileURLWithPath: "/bin/bash"),
            [driver.path, scriptFile.path, CommandRunner.productsFolder.path, CLI.packageRoot.path])
        #expect(outcome.status == 0, "\(outcome.standardError)")
        let answers = outcome.standardOutput.components(separatedBy: "--\n").map { $0.split(separator: "\n").map(String.init) }
        #expect(answers.count >= 6, "\(outcome.standardOutput)")
        guard answers.count >= 6 else { return }
        #expect(answers[0] == ["graphs/tone.yaml"])
        #expect(answers[1].contains("graphs/speak.yaml") && answers[1].contains("graphs/speech-render.yaml"), "\(answers[1])")
        #expect(answers[2] == ["graphs/morse.yaml"])
        #expect(answers[3] == ["docs/images"], "a folder, to go on into")
        #expect(answers[4] == ["elevenlabs", "espeak"], "\(answers[4])")
        #expect(answers[5].contains("en-gb"), "\(answers[5])")
    }
}
