import Foundation
import Synchronization
import JackTestSupport
import SluiceTestSupport
import Testing

/// speech-dispatcher (Debian's 0.11) speaking through a served graph: a private
/// speech-dispatcher configured by the test to use the `sd_sluice` module, `spd-say` as any
/// application would call it, and a JACK recording of what is heard.
@Suite(.serialized, .timeLimit(.minutes(2))) struct SpeechDispatcherTests {
    /// A private speech-dispatcher whose only module is sd_sluice, talking to `socket`.
    final class Dispatcher {
        let process = Process()
        let folder: TemporaryFolder
        let address: String

        init(controlSocket: String) throws {
            folder = TemporaryFolder()
            let socket = folder.file("speechd.sock").path
            address = "unix_socket:\(socket)"
            try FileManager.default.createDirectory(at: folder.file("logs"), withIntermediateDirectories: true)
            let module = CommandRunner.productsFolder.appendingPathComponent("sd_sluice").path
            let moduleConfig = try folder.write("SluiceSocket \"\(controlSocket)\"\n", to: "sluice.conf")
            _ = try folder.write(
                """
                CommunicationMethod "unix_socket"
                SocketPath "\(socket)"
                DefaultModule sluice
                DefaultLanguage "en"
                AddModule "sluice" "\(module)" "\(moduleConfig.path)"

                """, to: "speechd.conf")
            process.executableURL = URL(fileURLWithPath: "/usr/bin/speech-dispatcher")
            process.arguments = [
                "--run-single", "--timeout", "0", "--config-dir", folder.url.path, "--socket-path", socket,
                "--communication-method", "unix_socket", "--log-dir", folder.file("logs").path,
                "--pid-file", folder.file("speechd.pid").path,
            ]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            let deadline = Date().addingTimeInterval(10)
            while !FileManager.default.fileExists(atPath: socket) && Date() < deadline { usleep(50_000) }
        }

        /// `spd-say ARGUMENTS…` against this speech-dispatcher.
        func say(_ arguments: [String]) throws -> CommandRunner.Outcome {
            try CommandRunner.run(
                executable: URL(fileURLWithPath: "/usr/bin/spd-say"), arguments, timeout: 30,
                environment: ["SPEECHD_ADDRESS": address])
        }

        /// What the module logged, for failure messages.
        var log: String {
            let logs = (try? FileManager.default.contentsOfDirectory(atPath: folder.file("logs").path)) ?? []
            return logs.map { (try? String(contentsOf: folder.file("logs/\($0)"), encoding: .utf8)) ?? "" }
                .joined(separator: "\n").suffix(2_000).description
        }

        deinit {
            guard process.isRunning else { return }
            // SIGTERM first (it tells its modules to quit), SIGKILL if it is still there.
            process.terminate()
            let deadline = Date().addingTimeInterval(3)
            while process.isRunning && Date() < deadline { usleep(20_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
    }

    @Test("spd-say is heard through the served graph in JACK, and spd-say -S cuts it with a fade")
    func spdSayThroughSluice() throws {
        let server = try JackTestServer.shared()
        let recorder = try JackRecorder(
            server: server.name, clientName: "speechd-ear-\(getpid())", channels: 2, capacityFrames: 30 * 48_000)
        defer { recorder.stop() }
        try recorder.start()
        let folder = TemporaryFolder()
        let serve = ServeCommandTests()
        let served = try ServeCommandTests.Served(
            graph: try serve.speechGraph(in: folder, client: "speechd-\(getpid())", recorder: recorder),
            socket: folder.file("control.sock").path, server: server.name)
        _ = try #require(served.readyLine(), "serve never said it was serving")
        let dispatcher = try Dispatcher(controlSocket: served.socket)

        // -w: spd-say returns once speech-dispatcher heard the module's END.
        let hello = try dispatcher.say(["-w", "Hello from speech dispatcher."])
        #expect(hello.status == 0, "\(hello.standardError)\n\(dispatcher.log)")
        usleep(300_000)
        let first = serve.stretches(recorder.samples(channel: 0))
        #expect(first.count == 1, "\(first)\n\(dispatcher.log)")

        // A long sentence, stopped once it has been heard for a while.
        let long = "This is a long sentence that will be stopped well before it ends, because it goes on and on and on."
        #expect(try dispatcher.say([long]).status == 0)
        var heard = 0
        for _ in 0..<100 where heard < 48_000 {
            usleep(50_000)
            let spans = serve.stretches(recorder.samples(channel: 0))
            heard = spans.count > 1 ? spans[1].length : 0
        }
        #expect(try dispatcher.say(["-S"]).status == 0)
        usleep(1_500_000)
        #expect(try served.ctl(["quit"]).status == 0)
        #expect(served.wait() == 0)
        recorder.stop()

        let samples = recorder.samples(channel: 0)
        let spans = serve.stretches(samples)
        #expect(spans.count == 2, "\(spans)")
        if spans.count == 2 {
            // The sentence takes about six seconds; the stop cut it within a second or two,
            // ending in a fade rather than a click.
            #expect(spans[1].length < 4 * 48_000, "\(spans)")
            let end = spans[1].start + spans[1].length
            #expect(abs(samples[end - 1]) < 0.01, "the stop ends on \(samples[end - 1])")
        }
    }

    @Test("speech-dispatcher's punctuation mode reaches the voice: with all, the marks are spoken by name and the message takes longer; a mode it does not have is refused")
    func punctuationMode() throws {
        let server = try JackTestServer.shared()
        let recorder = try JackRecorder(
            server: server.name, clientName: "speechd-punct-ear-\(getpid())", channels: 2, capacityFrames: 30 * 48_000)
        defer { recorder.stop() }
        try recorder.start()
        let folder = TemporaryFolder()
        let serve = ServeCommandTests()
        let graph = try serve.speechGraph(in: folder, client: "speechd-punct-\(getpid())", recorder: recorder)
        let socket = folder.file("control.sock").path
        let served = try ServeCommandTests.Served(graph: graph, socket: socket, server: server.name)
        _ = try #require(served.readyLine(), "serve never said it was serving")
        let module = try Module.initialised(socket: socket)

        func heard(_ text: String) -> Int { module.heard(text, on: recorder) }
        let text = "Yes, no; maybe: fine."
        let plain = heard(text)
        #expect(module.set(["punctuation_mode=all"]) == "203 OK SETTINGS RECEIVED")
        let named = heard(text)
        // "comma", "semicolon", "colon" and the full stop's name: well over half a second more.
        #expect(plain > 48_000 / 2 && named > plain + 48_000 / 2, "\(plain) frames plain, \(named) with punctuation spoken")
        #expect(module.set(["punctuation_mode=loud"]) == "303 ERROR INVALID PARAMETER OR VALUE")
        #expect(try served.ctl(["quit"]).status == 0)
        #expect(served.wait() == 0)
        module.send("QUIT")
        #expect(module.next() == "210 OK QUIT")
    }

    @Test("sd_sluice speaks through a Piper graph: speech-dispatcher's rate reaches Piper as a speed factor, and what Piper lacks is not sent")
    func piperGraph() throws {
        let server = try JackTestServer.shared()
        let recorder = try JackRecorder(
            server: server.name, clientName: "speechd-piper-ear-\(getpid())", channels: 2, capacityFrames: 30 * 48_000)
        defer { recorder.stop() }
        try recorder.start()
        let folder = TemporaryFolder()
        var yaml = try String(contentsOf: CLI.graphsFolder.appendingPathComponent("piper.yaml"), encoding: .utf8)
        yaml = yaml.replacingOccurrences(
            of: "{ type: jack.sink, client: sluice-speak, connect: auto }",
            with: "{ type: jack.sink, client: speechd-piper-\(getpid()), connect: [\(recorder.portNames.joined(separator: ", "))] }")
        let graph = try folder.write(yaml, to: "piper.yaml")
        let socket = folder.file("control.sock").path
        let served = try ServeCommandTests.Served(graph: graph, socket: socket, server: server.name)
        _ = try #require(served.readyLine(timeout: 60), "serve never said it was serving")
        let module = try Module.initialised(socket: socket)

        func heard(_ text: String) -> Int { module.heard(text, on: recorder) }
        let text = "The river carves the valley first, and people settle where the water allows."
        let normal = heard(text)
        // Pitch, punctuation and a language Piper's voice does not take come along, as Orca
        // sends them: were they passed on, the configure would be refused whole.
        #expect(module.set(["rate=100", "pitch=30", "punctuation_mode=all", "language=en"]) == "203 OK SETTINGS RECEIVED")
        let fast = heard(text)
        // Three times the voice's speed asked: Piper's shortest sounds and pauses shrink less,
        // so it is about half as long; the same length would mean the configure was refused.
        #expect(normal > 48_000 * 3 && fast < normal * 7 / 10, "\(normal) frames at rate 0, \(fast) at rate 100")
        #expect(try served.ctl(["quit"]).status == 0)
        #expect(served.wait() == 0)
        module.send("QUIT")
        #expect(module.next() == "210 OK QUIT")
    }

    /// sd_sluice driven directly over its standard input and output, as speech-dispatcher
    /// drives it.
    final class Module {
        let process = Process()
        let input = Pipe()
        let output = Pipe()
        /// Every line the module wrote, in order (its reading thread appends).
        final class Lines: Sendable {
            let lines = Mutex<[String]>([])
        }
        let written = Lines()
        var cursor = 0

        init(socket: String) throws {
            process.executableURL = CommandRunner.productsFolder.appendingPathComponent("sd_sluice")
            process.environment = ProcessInfo.processInfo.environment.merging(["SLUICE_CONTROL_SOCKET": socket]) { $1 }
            process.standardInput = input
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try process.run()
            let handle = output.fileHandleForReading
            Thread { [written] in
                var pending = Data()
                while true {
                    let chunk = handle.availableData
                    if chunk.isEmpty { return }
                    pending += chunk
                    while let newline = pending.firstIndex(of: 0x0a) {
                        let line = String(decoding: pending[..<newline], as: UTF8.self)
                        pending.removeSubrange(...newline)
                        written.lines.withLock { $0.append(line) }
                    }
                }
            }.start()
        }

        /// A module started as speech-dispatcher starts it: INIT, and its answer that it loaded.
        static func initialised(socket: String) throws -> Module {
            let module = try Module(socket: socket)
            module.send("INIT")
            #expect(module.next()?.hasPrefix("299-Sluice: graph") == true)
            #expect(module.next() == "299 OK LOADED SUCCESSFULLY")
            return module
        }

        func send(_ text: String) { input.fileHandleForWriting.write(Data((text + "\n").utf8)) }

        /// The next line the module writes, within `timeout` seconds (nil if none).
        func next(timeout: Double = 20) -> String? {
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                if let line = written.lines.withLock({ cursor < $0.count ? $0[cursor] : nil }) {
                    cursor += 1
                    return line
                }
                usleep(10_000)
            }
            return nil
        }

        func speak(_ text: String) {
            send("SPEAK")
            send(text)
            send(".")
        }

        /// Speaks `text` and waits for its END; the frames from its first sound to its last,
        /// as `recorder` recorded them.
        func heard(_ text: String, on recorder: JackRecorder) -> Int {
            let from = recorder.framesRecorded
            speak(text)
            #expect(next() == "202 OK RECEIVING MESSAGE")
            #expect(next() == "200 OK SPEAKING")
            #expect(next() == "701 BEGIN")
            #expect(next(timeout: 30) == "702 END")
            usleep(200_000)
            let samples = recorder.samples(channel: 0).dropFirst(from)
            let sounding = samples.indices.filter { abs(samples[$0]) > 1e-4 }
            return (sounding.last ?? 0) - (sounding.first ?? 0)
        }

        /// A SET block of `lines`; the module's answer to it.
        func set(_ lines: [String]) -> String? {
            send("SET")
            #expect(next() == "203 OK RECEIVING SETTINGS")
            for line in lines { send(line) }
            send(".")
            return next()
        }

        deinit {
            if process.isRunning { process.terminate() }
        }
    }

    @Test("sd_sluice follows a graph that was served again, and refuses with 301 what it cannot speak, never a false BEGIN and END")
    func moduleFollowsARestartedGraph() throws {
        let server = try JackTestServer.shared()
        let recorder = try JackRecorder(
            server: server.name, clientName: "speechd-restart-ear-\(getpid())", channels: 2, capacityFrames: 4 * 48_000)
        defer { recorder.stop() }
        try recorder.start()
        let folder = TemporaryFolder()
        let serve = ServeCommandTests()
        let graph = try serve.speechGraph(in: folder, client: "speechd-restart-\(getpid())", recorder: recorder)
        let socket = folder.file("control.sock").path
        var served = try ServeCommandTests.Served(graph: graph, socket: socket, server: server.name)
        _ = try #require(served.readyLine(), "serve never said it was serving")

        let module = try Module.initialised(socket: socket)
        module.speak("Hello.")
        #expect(module.next() == "202 OK RECEIVING MESSAGE")
        #expect(module.next() == "200 OK SPEAKING")
        #expect(module.next() == "701 BEGIN")
        #expect(module.next() == "702 END")

        // The graph goes, and is served again at the same socket.
        #expect(try served.ctl(["quit"]).status == 0)
        #expect(served.wait() == 0)
        served = try ServeCommandTests.Served(graph: graph, socket: socket, server: server.name)
        _ = try #require(served.readyLine(), "serve never said it was serving again")
        module.speak("Again.")
        #expect(module.next() == "202 OK RECEIVING MESSAGE")
        #expect(module.next() == "200 OK SPEAKING")
        #expect(module.next() == "701 BEGIN")
        #expect(module.next() == "702 END")

        // More than a request line may carry: refused with speechd's code, nothing reported.
        module.speak(String(repeating: "A long document line. ", count: 60_000))
        #expect(module.next() == "202 OK RECEIVING MESSAGE")
        #expect(module.next() == "301 ERROR CANT SPEAK")
        // Nothing served: refused the same way, not BEGIN and END.
        #expect(try served.ctl(["quit"]).status == 0)
        #expect(served.wait() == 0)
        module.speak("Nobody hears this.")
        #expect(module.next() == "202 OK RECEIVING MESSAGE")
        #expect(module.next() == "301 ERROR CANT SPEAK")
        module.send("QUIT")
        #expect(module.next() == "210 OK QUIT")
    }
}
