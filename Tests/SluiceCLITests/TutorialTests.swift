import Foundation
import SluiceTestSupport
import Testing

/// docs/tutorial.md, run as a reader would: every ```sh block in order, in one bash, with the
/// files the page says to save written where the reader would save them; what the page shows a
/// command printing (the ```text block after it) must be what it prints, and every command
/// must exit as the page says. Then the files the tutorial made are read back: the WAV files
/// with libsndfile, the live run's stats as JSON.
///
/// The page's conventions (`TutorialPage`):
/// - ```sh: commands, one a line (a line ending in `\` continues); `#` lines are comments.
///   `<!-- status: N -->` right before the block: its one command exits N (0 otherwise).
/// - ```text right after a ```sh block (prose between is fine, another block is not): all the
///   block prints, standard output and error as a terminal shows them. `…` in a line stands
///   for any text; a line holding only `…` stands for any number of lines.
/// - `<!-- file: NAME -->` right before a block of any kind: the reader saves it as NAME in the
///   folder they are in. Any other block is refused, so nothing on the page goes unchecked.
///
/// What differs from a reader's machine:
/// - `scripts/setup`, the page's single exception, is not run: CI runs it before the tests.
/// - `swift` is a stand-in that answers `swift build --show-bin-path` with the folder holding
///   the products under test (CommandRunner.productsFolder). The real one answers for the
///   default configuration and scratch path (`.build/debug`), which need not be the build
///   under test (`swift test -c release`, `--scratch-path`).
/// - HOME is a temporary folder, so `~/sluice-tutorial` is made there; the commands start in
///   the package root (the reader's checkout), as the page says; `SLUICE_PLUGIN_PATH` is empty.
///
/// The page starts its own JACK server (`jackd -n tutorial -d dummy`) and stops it. So that no
/// jackd outlives the test whatever happens, the script stops any background job still running
/// when it exits, and after a timeout the test ends the script's background jobs and process
/// group itself (`TutorialRun.endScript`).
@Suite("docs/tutorial.md")
struct TutorialTests {
    static let pagePath = "docs/tutorial.md"

    /// The whole page takes a few seconds (its live run plays about two); this is the limit
    /// before the test ends it as hung.
    static let timeout: Double = 60

    @Test("every command on the page runs and prints what the page shows")
    func tutorial() throws {
        let text = try String(contentsOf: CLI.packageRoot.appendingPathComponent(Self.pagePath), encoding: .utf8)
        let page = try TutorialPage(text)
        #expect(page.skipped.map(\.text) == ["scripts/setup"], "the page's single exception is scripts/setup")

        let folder = TemporaryFolder("sluice-tutorial-test")
        let run = try TutorialRun(page: page, folder: folder, timeout: Self.timeout)
        try #require(run.verify(), "see the issues above")

        // What the tutorial made, read back.
        let work = run.home.appendingPathComponent("sluice-tutorial")

        // A first sound: graphs/tone.yaml, 2 s at 48 kHz, mono.
        let tone = try SoundFileContents(work.appendingPathComponent("a4.wav"))
        #expect(tone.rate == 48_000 && tone.channels == 1 && tone.frames == 96_000,
                "a4.wav: \(tone.frames) frames at \(tone.rate) Hz, \(tone.channels) channels")

        // The mistake: the error's file:line:column points at the word it quotes, in the file
        // as the page had the reader save it.
        try checkErrorPlace(page: page, run: run)

        // beeps.yaml: "SOS" in Morse at 24 wpm, 48 kHz.
        let beeps = try SoundFileContents(work.appendingPathComponent("beeps.wav"))
        let morseFrames = MorseTiming.dits(text: "SOS") * MorseTiming.ditFrames(wpm: 24, rate: 48_000)
        #expect(morseFrames == 81_600)
        #expect(beeps.rate == 48_000 && beeps.frames == morseFrames, "beeps.wav: \(beeps.frames) frames at \(beeps.rate) Hz")

        // The plugin built without a word from the compiler, and is the file sluice loads.
        let compile = try #require(run.block(containing: "cc "), "no `cc` command on the page")
        #expect(compile.output.isEmpty, "cc printed:\n\(compile.output)")
        #expect(FileManager.default.fileExists(atPath: work.appendingPathComponent("libsluice-tremolo.so").path))

        // wobble.yaml: a 220 Hz tone (amplitude 0.5) under a tremolo of rate 2, depth 1:
        // silent at 0.25 s, full at 0.5 s.
        let wobble = try SoundFileContents(work.appendingPathComponent("wobble.wav"))
        #expect(wobble.rate == 48_000 && wobble.channels == 1 && wobble.frames == 96_000,
                "wobble.wav: \(wobble.frames) frames at \(wobble.rate) Hz, \(wobble.channels) channels")
        if wobble.frames == 96_000 {
            let trough = peak(wobble.samples, around: 12_000), crest = peak(wobble.samples, around: 24_000)
            #expect(trough < 0.01, "peak \(trough) within 5 ms of 0.25 s, where the tremolo is at its deepest")
            #expect(abs(crest - 0.5) < 0.01, "peak \(crest) within 5 ms of 0.5 s, where the level is full")
        }

        // speech.yaml rendered: a sentence of speech at 48 kHz.
        let speech = try SoundFileContents(work.appendingPathComponent("speech.wav"))
        let speechSeconds = Double(speech.frames) / Double(max(speech.rate, 1))
        #expect(speech.rate == 48_000 && speech.channels == 1, "speech.wav: \(speech.rate) Hz, \(speech.channels) channels")
        #expect((0.8...5).contains(speechSeconds), "speech.wav lasts \(speechSeconds) s")
        #expect((speech.samples.map { abs($0) }.max() ?? 0) > 0.05, "speech.wav is (nearly) silent")

        // speech.yaml live: the same sentence played into the page's JACK server (48 kHz).
        let live = try #require(run.block(containing: "sluice run"), "no `sluice run` command on the page")
        let statsLine = try #require(live.output.split(separator: "\n").last.map(String.init))
        let stats = try #require(
            try JSONSerialization.jsonObject(with: Data(statsLine.utf8)) as? [String: Any], "not JSON: \(statsLine)")
        let played = try #require(stats["audioSeconds"] as? Double)
        #expect(abs(played - speechSeconds) < 0.05, "played \(played) s live, rendered \(speechSeconds) s")
        #expect((stats["failures"] as? [Any])?.isEmpty == true, "\(statsLine)")
        // One client per graph, named after the graph (speech.yaml says `name: speech`).
        #expect(stats["jackClients"] as? [String] == ["speech"], "\(statsLine)")

        // sluice speak --graph speech.yaml --out spoken.wav: the tutorial's graph, tremolo and
        // all; offline its jack.sink has no rate, so the resampler keeps espeak's 22050 Hz.
        let spoken = try SoundFileContents(work.appendingPathComponent("spoken.wav"))
        #expect(spoken.rate == 22_050 && spoken.channels == 1, "spoken.wav: \(spoken.rate) Hz, \(spoken.channels) channels")
        #expect(Double(spoken.frames) / 22_050 > 0.8, "spoken.wav lasts \(Double(spoken.frames) / 22_050) s")
        #expect((spoken.samples.map { abs($0) }.max() ?? 0) > 0.05, "spoken.wav is (nearly) silent")
    }

    /// The `sluice check` that fails on the page: its first line is `FILE:LINE:COLUMN: error: …`,
    /// FILE is a file the page saved before it, and LINE:COLUMN is where a word the message
    /// quotes ('wmp') begins in that file.
    private func checkErrorPlace(page: TutorialPage, run: TutorialRun) throws {
        let failing = try #require(page.shellBlocks.first { $0.status != 0 }, "no command on the page fails on purpose")
        let output = run.output(of: failing)
        let first = output.split(separator: "\n").first.map(String.init) ?? ""
        let parts = first.split(separator: ":", maxSplits: 3).map(String.init)
        try #require(parts.count == 4 && parts[3].hasPrefix(" error: "), "not FILE:LINE:COLUMN: error: … — \(first)")
        let (name, line, column) = (parts[0], Int(parts[1]) ?? 0, Int(parts[2]) ?? 0)
        let saved = try #require(page.file(named: name, before: failing), "the error names '\(name)', which the page did not save")
        let lines = saved.split(separator: "\n", omittingEmptySubsequences: false)
        try #require(line >= 1 && line <= lines.count, "line \(line) of \(name), which has \(lines.count)")
        let text = Array(lines[line - 1])
        try #require(column >= 1 && column <= text.count, "column \(column) of a line of \(text.count) characters")
        let there = String(text[(column - 1)...])
        let quoted = parts[3].split(separator: "'", omittingEmptySubsequences: false).enumerated()
            .filter { $0.offset % 2 == 1 }.map { String($0.element) }
        #expect(quoted.contains { !$0.isEmpty && there.hasPrefix($0) },
                "\(name):\(line):\(column) is at \"\(there)\", none of \(quoted)")
    }

    /// The largest |sample| within 5 ms (at 48 kHz) of frame `center`.
    private func peak(_ samples: [Float], around center: Int, halfWidth: Int = 240) -> Float {
        samples[(center - halfWidth)..<(center + halfWidth)].map { abs($0) }.max() ?? 0
    }

    // MARK: The conventions themselves

    @Test("… stands for any text in a line, and a line of … for any number of lines")
    func outputPatterns() {
        #expect(OutputPattern.matches("a.yaml: ok", "a.yaml: ok"))
        #expect(!OutputPattern.matches("a.yaml: ok", "a.yaml: ok (3 nodes)"))
        #expect(OutputPattern.matches("{\"a\":…,\"c\":3,…}", "{\"a\":1,\"b\":2,\"c\":3,\"d\":4}"))
        #expect(!OutputPattern.matches("{\"a\":…,\"c\":3,…}", "{\"a\":1,\"c\":4}"))
        #expect(OutputPattern.matches("…\nserver is available", "server is available\n"))
        #expect(OutputPattern.matches("…\nserver is available", "noise\nmore noise\nserver is available"))
        #expect(!OutputPattern.matches("…\nserver is available", "server is available\ntimeout"))
        #expect(OutputPattern.matches("head\n…", "head\n\nany\nlines"))
        #expect(!OutputPattern.matches("one\ntwo", "one"))
    }

    @Test("the page's blocks: commands, their output, files; anything else is refused")
    func pageConventions() throws {
        let page = try TutorialPage("""
            Intro.

            ```sh
            scripts/setup
            ```

            <!-- file: g.yaml -->
            ```yaml
            name: g
            ```

            <!-- status: 1 -->
            ```sh
            # a comment
            sluice check \\
              g.yaml
            ```

            It prints:

            ```text
            g.yaml: …
            ```

            <!-- an ordinary comment -->
            """)
        #expect(page.skipped.map(\.text) == ["scripts/setup"])
        #expect(page.shellBlocks.count == 2)
        let check = page.shellBlocks[1]
        #expect(check.commands.map(\.text) == ["sluice check \\\n  g.yaml"])
        #expect(check.commands.first?.line == 15)
        #expect(check.status == 1)
        #expect(check.expectedOutput?.text == "g.yaml: …\n")
        #expect(page.file(named: "g.yaml", before: check) == "name: g\n")

        #expect(throws: TutorialPage.Malformed.self) { try TutorialPage("```yaml\nname: g\n```\n") }
        #expect(throws: TutorialPage.Malformed.self) { try TutorialPage("```text\nout\n```\n") }
        #expect(throws: TutorialPage.Malformed.self) {
            try TutorialPage("```sh\nls\n```\n```text\na\n```\n```text\nb\n```\n")
        }
        #expect(throws: TutorialPage.Malformed.self) { try TutorialPage("<!-- file: x -->\n\n```yaml\nx\n```\n") }
        #expect(throws: TutorialPage.Malformed.self) { try TutorialPage("```sh\nls \\\n```\n") }
    }
}

// MARK: - The page

/// docs/tutorial.md read as steps: files to save and blocks of commands, in page order.
struct TutorialPage {
    struct Malformed: Error, CustomStringConvertible {
        let line: Int
        let problem: String
        var description: String { "\(TutorialTests.pagePath):\(line): \(problem)" }
    }

    struct Command {
        /// As on the page, continuation lines included.
        var text: String
        /// The page line it starts on (1-based).
        var line: Int
    }

    struct ShellBlock {
        /// Position among the page's ```sh blocks.
        var index: Int
        var line: Int
        var commands: [Command]
        /// The exit status the page gives its command (`<!-- status: N -->`), 0 otherwise.
        var status: Int32
        /// The ```text block after it: what it prints.
        var expectedOutput: (text: String, line: Int)?
    }

    enum Step {
        case file(name: String, contents: String, line: Int)
        case shell(ShellBlock)
    }

    /// The command the test does not run (CI runs it before the tests).
    static let exception = "scripts/setup"

    private(set) var steps: [Step] = []
    /// Commands on the page left out of the run: `exception` wherever it appears.
    private(set) var skipped: [Command] = []

    var shellBlocks: [ShellBlock] {
        steps.compactMap { if case .shell(let block) = $0 { block } else { nil } }
    }

    /// The contents of the last file `name` saved before `block`.
    func file(named name: String, before block: ShellBlock) -> String? {
        var contents: String?
        for step in steps {
            switch step {
            case .file(let saved, let text, _) where saved == name: contents = text
            case .shell(let shell) where shell.index == block.index: return contents
            default: break
            }
        }
        return contents
    }

    init(_ page: String) throws {
        let lines = page.components(separatedBy: "\n")
        var pendingFile: (name: String, line: Int)?
        var pendingStatus: (status: Int32, line: Int)?
        // The step index of the ```sh block just read, while its ```text may still follow.
        var openShell: Int?
        var shellCount = 0
        var index = 0
        while index < lines.count {
            let line = lines[index]
            let number = index + 1
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            index += 1
            if trimmed.hasPrefix("<!--"), trimmed.hasSuffix("-->") {
                if pendingFile != nil || pendingStatus != nil {
                    throw Malformed(line: number, problem: "a directive must come right before its block")
                }
                let body = trimmed.dropFirst(4).dropLast(3).trimmingCharacters(in: .whitespaces)
                if body.hasPrefix("file:") {
                    let name = body.dropFirst(5).trimmingCharacters(in: .whitespaces)
                    guard !name.isEmpty, !name.contains("'"), !name.contains("/") else {
                        throw Malformed(line: number, problem: "a file name without quotes or slashes, please: '\(name)'")
                    }
                    pendingFile = (name, number)
                } else if body.hasPrefix("status:") {
                    guard let status = Int32(body.dropFirst(7).trimmingCharacters(in: .whitespaces)) else {
                        throw Malformed(line: number, problem: "status: needs a number")
                    }
                    pendingStatus = (status, number)
                }
                continue
            }
            guard line.hasPrefix("```") else {
                if let directive = pendingFile?.line ?? pendingStatus?.line {
                    throw Malformed(line: directive, problem: "a directive must come right before its block")
                }
                continue
            }
            let info = line.dropFirst(3).trimmingCharacters(in: .whitespaces)
            let language = info.split(separator: " ").first.map(String.init) ?? ""
            var body: [String] = []
            while index < lines.count, lines[index].trimmingCharacters(in: .whitespaces) != "```" {
                body.append(lines[index])
                index += 1
            }
            guard index < lines.count else { throw Malformed(line: number, problem: "the block never ends") }
            index += 1
            let contents = body.map { $0 + "\n" }.joined()

            defer { (pendingFile, pendingStatus) = (nil, nil) }
            if let file = pendingFile {
                if pendingStatus != nil { throw Malformed(line: number, problem: "a file has no exit status") }
                steps.append(.file(name: file.name, contents: contents, line: number))
                openShell = nil
            } else if language == "sh" {
                var commands = try Self.commands(in: body, firstLine: number + 1)
                skipped += commands.filter { $0.text == Self.exception }
                commands.removeAll { $0.text == Self.exception }
                let status = pendingStatus?.status ?? 0
                if status != 0, commands.count != 1 {
                    throw Malformed(line: number, problem: "a status is for a block of one command")
                }
                steps.append(.shell(ShellBlock(index: shellCount, line: number, commands: commands, status: status)))
                shellCount += 1
                openShell = commands.isEmpty ? nil : steps.count - 1
            } else if language == "text" {
                guard let open = openShell, case .shell(var block) = steps[open] else {
                    throw Malformed(line: number, problem: "```text shows what the ```sh block right before it prints; there is none")
                }
                block.expectedOutput = (contents, number)
                steps[open] = .shell(block)
                openShell = nil
            } else {
                throw Malformed(
                    line: number,
                    problem: "a ```\(info) block is neither commands (```sh), their output (```text) nor a file (<!-- file: NAME --> before it)")
            }
        }
        if let directive = pendingFile?.line ?? pendingStatus?.line {
            throw Malformed(line: directive, problem: "a directive must come right before its block")
        }
    }

    /// One command a line; a line ending in `\` continues on the next; blank and `#` lines skipped.
    private static func commands(in body: [String], firstLine: Int) throws -> [Command] {
        var commands: [Command] = []
        var current: Command?
        for (offset, line) in body.enumerated() {
            if var command = current {
                command.text += "\n" + line
                current = command
            } else {
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
                current = Command(text: line, line: firstLine + offset)
            }
            if !line.hasSuffix("\\"), let command = current {
                commands.append(command)
                current = nil
            }
        }
        if let current { throw Malformed(line: current.line, problem: "the command's last line ends in \\") }
        return commands
    }
}

// MARK: - Output patterns

/// What a ```text block promises: the output line by line, where `…` in a line matches any
/// text and a line of `…` alone matches any number of lines. Trailing spaces and blank lines
/// at the end are ignored.
enum OutputPattern {
    static let wildcard = "…"

    static func matches(_ pattern: String, _ output: String) -> Bool {
        let patternLines = lines(of: pattern), outputLines = lines(of: output)
        return wildcardMatch(patternLines, outputLines, isWildcard: { $0 == wildcard }) { pattern, line in
            let pieces = pattern.components(separatedBy: wildcard)
            if pieces.count == 1 { return pattern == line }
            return wildcardMatch(
                Array(pattern).map { String($0) }, Array(line).map { String($0) },
                isWildcard: { $0 == wildcard }, matches: ==)
        }
    }

    static func lines(of text: String) -> [String] {
        var lines = text.components(separatedBy: "\n").map { line in
            String(line.reversed().drop { $0 == " " || $0 == "\t" || $0 == "\r" }.reversed())
        }
        while lines.last?.isEmpty == true { lines.removeLast() }
        return lines
    }

    /// Classic wildcard matching (a wildcard takes any run of items, none included; anything
    /// else takes one item it matches), with backtracking to the last wildcard.
    static func wildcardMatch<Item>(
        _ pattern: [Item], _ items: [Item], isWildcard: (Item) -> Bool, matches: (Item, Item) -> Bool
    ) -> Bool {
        var p = 0, i = 0
        var lastWildcard: Int?
        var resumeAt = 0
        while i < items.count {
            if p < pattern.count, isWildcard(pattern[p]) {
                lastWildcard = p
                resumeAt = i
                p += 1
            } else if p < pattern.count, matches(pattern[p], items[i]) {
                p += 1
                i += 1
            } else if let wildcard = lastWildcard {
                p = wildcard + 1
                resumeAt += 1
                i = resumeAt
            } else {
                return false
            }
        }
        while p < pattern.count, isWildcard(pattern[p]) { p += 1 }
        return p == pattern.count
    }
}

// MARK: - The run

/// The page's commands run in order by one bash, as one reader's shell: variables, `cd` and
/// background jobs carry from command to command. Each command's output (standard output and
/// error together, as a terminal shows them) goes to its block's file, its exit status to a
/// file of its own; the run stops at the first command that exits otherwise than the page says.
final class TutorialRun {
    let page: TutorialPage
    let home: URL
    private let state: URL
    /// Set when the run did not finish in time.
    private(set) var timedOut: CommandRunner.TimedOut?
    /// bash's own output, outside any command (the script's errors).
    private(set) var scriptOutput: CommandRunner.Outcome?

    init(page: TutorialPage, folder: TemporaryFolder, timeout: Double) throws {
        self.page = page
        home = folder.file("home")
        state = folder.file("state")
        let bin = folder.file("bin"), files = folder.file("files")
        for made in [home, state, bin, files] {
            try FileManager.default.createDirectory(at: made, withIntermediateDirectories: true)
        }
        for path in [home.path, state.path, files.path, CommandRunner.productsFolder.path] {
            precondition(!path.contains("'"), "a path with a quote: \(path)")
        }

        // `swift build --show-bin-path` answers with the products under test (see TutorialTests).
        let swift = bin.appendingPathComponent("swift")
        try Data("""
            #!/bin/sh
            # TutorialTests' stand-in for swift: the folder holding the products under test.
            if [ "$*" = "build --show-bin-path" ]; then
              printf '%s\\n' '\(CommandRunner.productsFolder.path)'
            else
              echo "TutorialTests' stand-in for swift answers 'swift build --show-bin-path' only, not 'swift $*'" >&2
              exit 1
            fi

            """.utf8).write(to: swift)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: swift.path)

        var script = """
            set -o pipefail
            read -r _ _ _ _ __tutorial_group _ < /proc/$$/stat
            printf '%s %s\\n' "$$" "$__tutorial_group" > '\(state.path)/shell'
            # Stop whatever the page left running in the background (its JACK server), and wait.
            trap '__tutorial_jobs=$(jobs -p); [ -z "$__tutorial_jobs" ] || kill $__tutorial_jobs 2>/dev/null; wait' EXIT

            """
        for (stepIndex, step) in page.steps.enumerated() {
            switch step {
            case .file(let name, let contents, let line):
                let staged = files.appendingPathComponent("\(stepIndex)")
                try Data(contents.utf8).write(to: staged)
                script += "# \(TutorialTests.pagePath):\(line): save \(name)\ncp '\(staged.path)' '\(name)' || exit 101\n"
            case .shell(let block):
                let output = "\(state.path)/out-\(block.index)"
                script += ": > '\(output)'\n"
                for (commandIndex, command) in block.commands.enumerated() {
                    let status = "\(state.path)/status-\(block.index)-\(commandIndex)"
                    script += """
                        # \(TutorialTests.pagePath):\(command.line)
                        {
                        \(command.text)
                        } >> '\(output)' 2>&1
                        __tutorial_status=$?
                        printf '%s\\n' "$__tutorial_status" > '\(status)'
                        jobs -p > '\(state.path)/jobs'
                        [ "$__tutorial_status" -eq \(block.status) ] || exit 100

                        """
                }
            }
        }
        let scriptFile = state.appendingPathComponent("tutorial.sh")
        try Data(script.utf8).write(to: scriptFile)

        let environment = [
            "HOME": home.path,
            "PATH": bin.path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"),
            "SLUICE_PLUGIN_PATH": "",
        ]
        do {
            scriptOutput = try CommandRunner.run(
                executable: URL(fileURLWithPath: "/bin/bash"), [scriptFile.path], timeout: timeout,
                currentDirectory: CLI.packageRoot, environment: environment)
        } catch let error as CommandRunner.TimedOut {
            timedOut = error
            endScript()
        }
    }

    /// After a timeout, ends what the script left running: its background jobs (the JACK
    /// server the page starts, which puts itself in a session of its own) with SIGTERM, so they
    /// clean up, then the script's process group (bash and the command that hung) with SIGKILL.
    /// SIGTERM would not do for those: children of the test runner inherit its signal mask,
    /// which blocks SIGTERM (jackd sets a mask of its own). A job is ended only while it is
    /// still bash's child, and a group only when it is bash's own, never the test runner's.
    private func endScript() {
        guard let shell = try? String(contentsOf: state.appendingPathComponent("shell"), encoding: .utf8) else { return }
        let ids = shell.split(whereSeparator: \.isWhitespace).compactMap { pid_t($0) }
        guard ids.count == 2, ids[0] > 1 else { return }
        let (bash, group) = (ids[0], ids[1])
        let jobs = (try? String(contentsOf: state.appendingPathComponent("jobs"), encoding: .utf8)) ?? ""
        for job in jobs.split(whereSeparator: \.isWhitespace).compactMap({ pid_t($0) }) where Self.parent(of: job) == bash {
            kill(job, SIGTERM)
        }
        if group == bash, group != getpgrp() {
            kill(-group, SIGKILL)
        } else {
            kill(bash, SIGKILL)
        }
    }

    /// The parent of process `pid` (field 4 of /proc/PID/stat, after the command name in
    /// parentheses), or nil when it is gone.
    private static func parent(of pid: pid_t) -> pid_t? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        return fields.count > 1 ? pid_t(fields[1]) : nil
    }

    func output(of block: TutorialPage.ShellBlock) -> String {
        (try? String(contentsOf: state.appendingPathComponent("out-\(block.index)"), encoding: .utf8)) ?? ""
    }

    private func status(of block: TutorialPage.ShellBlock, command: Int) -> Int32? {
        guard let text = try? String(contentsOf: state.appendingPathComponent("status-\(block.index)-\(command)"), encoding: .utf8)
        else { return nil }
        return Int32(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// The first block with a command containing `fragment`, and what the block printed.
    func block(containing fragment: String) -> (block: TutorialPage.ShellBlock, output: String)? {
        guard let block = page.shellBlocks.first(where: { $0.commands.contains { $0.text.contains(fragment) } }) else { return nil }
        return (block, output(of: block))
    }

    /// Records an issue for the first command that failed, did not run or printed other than
    /// the page shows; true when there is none.
    func verify() -> Bool {
        for block in page.shellBlocks {
            let printed = output(of: block)
            for (index, command) in block.commands.enumerated() {
                let place = "\(TutorialTests.pagePath):\(command.line)"
                guard let status = status(of: block, command: index) else {
                    var reason = "did not finish"
                    if let timedOut { reason += ": the run was killed after \(TutorialTests.timeout) s (\(timedOut))" }
                    if let scriptOutput, !scriptOutput.standardError.isEmpty { reason += "; bash said:\n\(scriptOutput.standardError)" }
                    Issue.record("\(place): `\(command.text)` \(reason)\nIt printed:\n\(printed)")
                    return false
                }
                if status != block.status {
                    Issue.record("\(place): `\(command.text)` exited \(status), the page says \(block.status). It printed:\n\(printed)")
                    return false
                }
            }
            if let expected = block.expectedOutput, !OutputPattern.matches(expected.text, printed) {
                Issue.record("""
                    \(TutorialTests.pagePath):\(expected.line): the page shows
                    \(expected.text)
                    but `\(block.commands.map(\.text).joined(separator: "; "))` printed
                    \(printed)
                    """)
                return false
            }
        }
        if let scriptOutput, scriptOutput.status != 0 {
            Issue.record("the tutorial's script exited \(scriptOutput.status): \(scriptOutput.standardError)")
            return false
        }
        return true
    }
}
