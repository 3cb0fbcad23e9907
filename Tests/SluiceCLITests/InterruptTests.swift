import Foundation
import JackTestSupport
import SluiceTestSupport
import Testing

/// Stopping always works: Ctrl-C ends a run within its fade plus `InterruptHandler.grace`
/// whatever the JACK server does, a second Ctrl-C exits at once, and reading standard input
/// never keeps a cancel waiting. Real processes, real signals, a real (then frozen) jackd.
@Suite(.serialized) struct InterruptTests {
    /// `sluice arguments…` with a pipe on standard input that stays open (the writer sends
    /// nothing) and standard error captured.
    final class Running {
        let process = Process()
        let input = Pipe()
        let errors = Pipe()

        init(_ arguments: [String]) throws {
            process.executableURL = CommandRunner.productsFolder.appendingPathComponent("sluice")
            process.arguments = arguments
            process.standardInput = input
            process.standardError = errors
            process.standardOutput = FileHandle.nullDevice
            var environment = ProcessInfo.processInfo.environment
            environment["XDG_CACHE_HOME"] = CLI.cacheHome
            process.environment = environment
            try process.run()
        }

        /// Waits up to `seconds` for the process to end; its status, or nil (then kills it).
        func end(within seconds: Double) -> Int32? {
            let deadline = Date().addingTimeInterval(seconds)
            while process.isRunning && Date() < deadline { usleep(10_000) }
            guard !process.isRunning else {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                return nil
            }
            return process.terminationStatus
        }

        var standardError: String { String(decoding: errors.fileHandleForReading.availableData, as: UTF8.self) }

        func interrupt() { kill(process.processIdentifier, SIGINT) }
    }

    @Test("speak - --out ends at Ctrl-C while standard input stays open and silent, keeping what was spoken")
    func silentStandardInput() throws {
        let folder = TemporaryFolder()
        let output = folder.file("out.wav")
        let running = try Running(["speak", "-", "--out", output.path, "--no-cache"])
        try running.input.fileHandleForWriting.write(contentsOf: Data("Hello there. This is Sluice speaking. ".utf8))
        usleep(2_000_000)
        running.interrupt()
        let status = running.end(within: 5)
        #expect(status == 130, "\(running.standardError)")
        try? running.input.fileHandleForWriting.close()
        // The default `auto` strategy renders what has arrived while the text stream stays
        // open (it once waited for the stream's end, leaving 0.017 s here).
        let file = try SoundFileContents(output)
        #expect(Double(file.frames) / Double(file.rate) > 1.0, "\(file.frames) frames")
        #expect(running.standardError.contains("cancelled: heard \"Hello there."), "\(running.standardError)")
    }

    /// A `sluice launch` playing into a private server, which is then frozen (SIGSTOP): its
    /// process callback stops, so no fade is ever rendered.
    static func frozenServerRun(_ body: (Running) throws -> Void) throws {
        let server = try JackTestServer.start()
        defer {
            kill(server.pid, SIGCONT)
            server.stop()
        }
        let running = try Running(["launch", "tone duration=60 ! fader ! jack.sink", "--server", server.name])
        // Playing: the client is up once the server lists its port. Asked with jack_lsp, a
        // process of its own: a libjack client in this process would keep threads talking to
        // the server that is about to freeze.
        func listsPort() -> Bool {
            let outcome = try? CommandRunner.run(executable: URL(fileURLWithPath: "/usr/bin/jack_lsp"), ["-s", server.name], timeout: 10)
            return outcome?.standardOutput.contains("sluice:") == true
        }
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline, !listsPort() { usleep(50_000) }
        #expect(listsPort(), "the run never showed its ports")
        kill(server.pid, SIGSTOP)
        try body(running)
    }

    @Test("a hung JACK server: Ctrl-C still ends the run within the grace second, exit 130")
    func hungServer() throws {
        try Self.frozenServerRun { running in
            let start = Date()
            running.interrupt()
            let status = running.end(within: 10)
            #expect(status == 130)
            #expect(Date().timeIntervalSince(start) < 5)
            #expect(running.standardError.contains("did not end within 1.0 s of Ctrl-C"))
        }
    }

    @Test("a second Ctrl-C exits at once")
    func secondInterrupt() throws {
        try Self.frozenServerRun { running in
            running.interrupt()
            usleep(100_000)
            running.interrupt()
            let status = running.end(within: 10)
            #expect(status == 130)
            #expect(running.standardError.contains("interrupted again: exiting at once"), "\(running.standardError)")
        }
    }
}
