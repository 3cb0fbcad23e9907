import Foundation
import Glibc
import ProviderTestSupport
import SluiceTestSupport
import Testing

/// The espeak plugin's engine processes (Plugins/espeak/engines.c, engine/main.c): the helper
/// on its own, spoken to over its protocol (engine/protocol.h), and the plugin starting,
/// using, losing and ending helpers when voices wait for the process's own engine.
///
/// Nested in `EspeakProviderTests`, so serialized with its tests: both hold the process's
/// engine on purpose. The helpers a test sees are this process's children named
/// `sluice-espeak-engine`; another suite's espeak node may start one too (and keeps the ones
/// here running while it is open), so the tests count at least theirs, not exactly.
extension EspeakProviderTests {
    @Suite struct EngineProcesses {
        static var helper: String { Plugins.built("sluice-espeak-engine") }

        // MARK: The helper on its own

        /// The protocol as the plugin speaks it, over a pipe each way.
        final class Helper {
            let process = Process()
            let requests = Pipe()
            let replies = Pipe()

            struct Message: Equatable {
                var type: UInt32
                var payload: [UInt8]
            }

            let complaints = Pipe()

            init() throws {
                process.executableURL = URL(fileURLWithPath: EngineProcesses.helper)
                process.standardInput = requests
                process.standardOutput = replies
                process.standardError = complaints
                try process.run()
            }

            func send(_ type: UInt32, _ payload: [UInt8] = []) throws {
                var header = [UInt8]()
                withUnsafeBytes(of: type.littleEndian) { header += $0 }
                withUnsafeBytes(of: UInt32(payload.count).littleEndian) { header += $0 }
                try requests.fileHandleForWriting.write(contentsOf: header + payload)
            }

            /// ENGINE_SELECT or ENGINE_SPEAK's payload: voice[128], rate, pitch, volume,
            /// punctuation and capitals (none), then the text.
            func request(_ type: UInt32, voice: String, rate: Int32 = 175, pitch: Int32 = 50, volume: Int32 = 100, text: String? = nil) throws {
                var payload = Array(voice.utf8) + [UInt8](repeating: 0, count: 128 - voice.utf8.count)
                for value in [rate, pitch, volume, 0, 0] { withUnsafeBytes(of: value.littleEndian) { payload += $0 } }
                if let text { payload += Array(text.utf8) + [0] }
                try send(type, payload)
            }

            func receive() throws -> Message {
                func exactly(_ count: Int) throws -> [UInt8] {
                    var bytes: [UInt8] = []
                    while bytes.count < count {
                        guard let more = try replies.fileHandleForReading.read(upToCount: count - bytes.count), !more.isEmpty
                        else { throw RawEspeak.Timeout(what: "the helper's reply (it ended)") }
                        bytes += more
                    }
                    return bytes
                }
                let header = try exactly(8)
                let type = header.withUnsafeBytes { $0.load(as: UInt32.self) }
                let size = header.withUnsafeBytes { $0.load(fromByteOffset: 4, as: UInt32.self) }
                return Message(type: type, payload: try exactly(Int(size)))
            }

            static func int32s(_ payload: [UInt8]) -> [Int32] {
                stride(from: 0, to: payload.count, by: 4).map { at in payload.withUnsafeBytes { $0.load(fromByteOffset: at, as: Int32.self) } }
            }
        }

        static let select: UInt32 = 1, speak: UInt32 = 2, abort: UInt32 = 3
        static let ready: UInt32 = 101, word: UInt32 = 102, audio: UInt32 = 103, done: UInt32 = 104

        /// A fresh helper's first utterance starts from espeak-ng's initial state, as the command
        /// line's does: the same samples, every one; a word event per word; then the protocol's
        /// other requests, and an exit when its input closes.
        @Test("the engine process speaks bit for bit what espeak-ng's command line says, aborts on request, refuses an unknown voice, and ends when its input closes")
        func helperProtocol() throws {
            let helper = try Helper()
            let ready = try helper.receive()
            #expect(ready.type == Self.ready && Helper.int32s(ready.payload) == [22_050])

            try helper.request(Self.speak, voice: "en-us", rate: 250, pitch: 30, volume: 60, text: EspeakProviderTests.sentence)
            var samples: [Int16] = []
            var words: [[Int32]] = []
            while true {
                let message = try helper.receive()
                if message.type == Self.done {
                    #expect(Helper.int32s(message.payload) == [0, 0])
                    break
                }
                if message.type == Self.word { words.append(Helper.int32s(message.payload)) }
                if message.type == Self.audio {
                    samples += stride(from: 0, to: message.payload.count, by: 2).map { Int16(bitPattern: UInt16(message.payload[$0]) | UInt16(message.payload[$0 + 1]) << 8) }
                }
            }
            let folder = TemporaryFolder("sluice-espeak-engine")
            let cli = try CommandRunner.run(
                executable: URL(fileURLWithPath: "/usr/bin/espeak-ng"),
                ["-w", folder.path("cli.wav"), "-v", "en-us", "-s", "250", "-p", "30", "-a", "60", "--", EspeakProviderTests.sentence])
            try #require(cli.status == 0, "\(cli.standardError)")
            let theirs = try WAVData(path: folder.path("cli.wav")).samples
            #expect(samples.count > 22_050 && samples.count == theirs.count, "\(samples.count) vs \(theirs.count)")
            let difference = samples.indices.first { $0 >= theirs.count || samples[$0] != theirs[$0] }
            #expect(difference == nil, "sample \(difference ?? 0) differs (of \(samples.count))")
            // espeak-ng's word events, the empty one at the end included: 18 words, in order.
            let spoken = words.filter { $0[1] > 0 }
            #expect(spoken.count == 18)
            #expect(spoken.map { $0[0] } == spoken.map { $0[0] }.sorted() && spoken.first?[0] == 1)

            // An abort after the first chunk ends the synthesis early: DONE says "aborted".
            try helper.request(Self.speak, voice: "en", text: EspeakProviderTests.long)
            var chunks = 0
            var outcome: [Int32] = []
            while outcome.isEmpty {
                let message = try helper.receive()
                if message.type == Self.audio {
                    chunks += 1
                    if chunks == 1 { try helper.send(Self.abort) }
                }
                if message.type == Self.done { outcome = Helper.int32s(message.payload) }
            }
            #expect(outcome.first == 3)
            #expect(chunks < 100, "\(chunks) chunks after an abort (the text is about 14 s, 700 chunks)")
            // An abort with nothing to abort is ignored; the next request is answered.
            try helper.send(Self.abort)
            try helper.request(Self.select, voice: "xx-nonexistent")
            let refused = try helper.receive()
            #expect(refused.type == Self.done && Helper.int32s(refused.payload).first == 1)
            try helper.request(Self.select, voice: "de")
            #expect(Helper.int32s(try helper.receive().payload) == [0, 0])

            try helper.requests.fileHandleForWriting.close()
            helper.process.waitUntilExit()
            #expect(helper.process.terminationReason == .exit && helper.process.terminationStatus == 0)
        }

        @Test("the engine process exits with status 3 and a message on a request it does not know")
        func helperRefusesGarbage() throws {
            let helper = try Helper()
            _ = try helper.receive()
            try helper.send(77, [1, 2, 3])
            helper.process.waitUntilExit()
            #expect(helper.process.terminationStatus == 3)
            let complaint = String(decoding: helper.complaints.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(complaint == "sluice-espeak-engine: an unknown request\n")
        }

        // MARK: The plugin's engines

        /// This process's children that are engine processes.
        static func helperProcesses() -> [pid_t] {
            let me = getpid()
            let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
            return entries.compactMap { pid_t($0) }.filter { pid in
                guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                    let close = stat.lastIndex(of: ")")
                else { return false }
                // "pid (comm) state ppid …": comm is cut to 15 characters by the kernel.
                let name = stat[stat.index(after: stat.firstIndex(of: "(")!)..<close]
                let fields = stat[stat.index(close, offsetBy: 2)...].split(separator: " ")
                return name == "sluice-espeak-e" && fields.count > 1 && pid_t(fields[1]) == me && fields[0] != "Z"
            }
        }

        /// A voice that holds the process's own engine: a long utterance, a small ring, nobody
        /// reading, and no other voice waiting (so it waits for its ring, keeping the engine).
        static func stalledVoice(engines: Int) throws -> RawEspeak {
            let voice = try RawEspeak(buffer: 0.05, engines: engines)
            voice.say(EspeakProviderTests.long)
            voice.endText()
            try voice.waitUntil { $0["peak-buffered-bytes"]! >= Int((0.05 * 22_050).rounded()) * 2 }
            return voice
        }

        @Test("with the process's engine busy, a voice speaks in an engine process: all its audio and word marks, in order")
        func busyEngineStartsHelper() throws {
            let reference = try EspeakProviderTests.render("voice: en-us, engines: 1", [EspeakProviderTests.sentence]).0
            let stalled = try Self.stalledVoice(engines: 2)
            let second = try RawEspeak(voice: "en-us", engines: 2)
            second.say(EspeakProviderTests.sentence)
            second.endText()
            var marks: [UInt64] = []
            var bytes = 0
            var ends = 0
            let deadline = Date().addingTimeInterval(60)
            reading: while Date() < deadline {
                switch second.read() {
                case .data(let data):
                    marks += second.takeWordMarks().map(\.audio_offset)
                    bytes += data.count
                case .utteranceEnd: ends += 1
                case .end: break reading
                case .wouldBlock: usleep(1_000)
                case .error(let code, let message): Issue.record("\(code): \(message)"); break reading
                }
            }
            #expect(ends == 1)
            #expect(EspeakProviderTests.sameLength(bytes / 2, reference.count), "\(bytes / 2) vs \(reference.count) samples")
            #expect(marks.count == 18 && marks == marks.sorted(), "\(marks)")
            #expect(second.counters()["helper-utterances"] == 1)
            #expect(!Self.helperProcesses().isEmpty)
            // The stalled voice kept its engine and all of its audio.
            let rest = try stalled.readToEnd()
            #expect(rest.events == [.utteranceEnd, .end])
            #expect(stalled.counters()["helper-utterances"] == 0)
            second.destroy()
            stalled.destroy()
        }

        @Test("engines: 0, the default, is one engine per processor but one: on two cores a voice that finds the process's engine busy waits for it rather than start an engine process")
        func defaultLeavesTheHostACore() throws {
            let processors = sysconf(Int32(_SC_NPROCESSORS_ONLN))
            let stalled = try Self.stalledVoice(engines: 0)
            let second = try RawEspeak(voice: "en-us", engines: 0)
            second.say(EspeakProviderTests.sentence)
            second.endText()
            let reading = try second.readToEnd()
            #expect(reading.events == [.utteranceEnd, .end] && reading.bytes > 22_050 / 2)
            // One engine process is allowed from three processors up; on two, none.
            #expect(second.counters()["helper-utterances"] == (processors > 2 ? 1 : 0), "\(processors) processors")
            let rest = try stalled.readToEnd()
            #expect(rest.events == [.utteranceEnd, .end])
            second.destroy()
            stalled.destroy()
        }

        @Test("an engine process killed mid-utterance fails that utterance with engine-ended after its audio so far; the next voice gets a new one")
        func helperKilledMidUtterance() throws {
            let stalled = try Self.stalledVoice(engines: 2)
            defer { stalled.destroy() }
            let victim = try RawEspeak(buffer: 0.05, engines: 2)
            // Long enough to be still synthesising when killed: while other voices wait for an
            // engine (another suite's, in the whole test run) the holder spills and finishes at
            // full speed, and one `long` (about 12 s of speech) could end first — the utterance
            // then ended normally (seen once in a whole run of the suite).
            victim.say(String(repeating: EspeakProviderTests.long + " ", count: 20))
            victim.endText()
            try victim.waitUntil { $0["peak-buffered-bytes"]! >= Int((0.05 * 22_050).rounded()) * 2 }
            let helpers = Self.helperProcesses()
            try #require(!helpers.isEmpty)
            var received = 0
            if case .data(let data) = victim.read() { received += data.count }
            #expect(received > 0)
            for helper in helpers { kill(helper, SIGKILL) }

            var failure: (code: String, message: String)?
            let deadline = Date().addingTimeInterval(30)
            reading: while Date() < deadline {
                switch victim.read() {
                case .data(let data): received += data.count
                case .wouldBlock: usleep(1_000)
                case .error(let code, let message): failure = (code, message); break reading
                case let other: Issue.record("\(other) before the failure"); break reading
                }
            }
            let failed = try #require(failure)
            #expect(failed.code == "engine-ended")
            #expect(helpers.contains { failed.message.contains("(sluice-espeak-engine, pid \($0)) was killed by signal 9 mid-utterance; the next utterance starts another") },
                    "\(failed.message)")
            // What was synthesised before the kill is all read; the stream stops at the failure.
            #expect(received == victim.counters()["synthesised-bytes"])
            victim.destroy()

            let next = try RawEspeak(engines: 2)
            defer { next.destroy() }
            next.say("Hello again.")
            next.endText()
            let reading = try next.readToEnd()
            #expect(reading.events == [.utteranceEnd, .end] && reading.bytes > 22_050 / 2)
            #expect(next.counters()["helper-utterances"] == 1)
            let now = Self.helperProcesses()
            #expect(!now.isEmpty && Set(now).isDisjoint(with: helpers))
        }

        /// In a `sluice` process of its own: a second copy of the plugin in this one would share
        /// espeak-ng's process globals with the first.
        @Test("engines: 3 with the plugin copied away from its engine process fails the graph at the node with engine-helper-missing and the fix; engines: 0 speaks with one engine")
        func helperMissing() throws {
            let folder = TemporaryFolder("sluice-espeak-alone")
            try FileManager.default.createDirectory(atPath: folder.path("plugins"), withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: Plugins.espeak, toPath: folder.path("plugins/libsluice-espeak.so"))
            func graph(engines: Int) throws -> String {
                try folder.write("""
                    name: alone
                    nodes:
                      voice: { type: espeak, engines: \(engines) }
                      align: { type: aligner }
                      out:   { type: null.sink }
                    links:
                      - voice -> align -> out
                    """, to: "alone-\(engines).yaml").path
            }
            let environment = ["SLUICE_PLUGIN_PATH": folder.path("plugins")]
            let missing = try CommandRunner.run("sluice", ["render", try graph(engines: 3), "--text", "Hello."], timeout: 120, environment: environment)
            #expect(missing.status != 0)
            #expect(missing.standardError.contains(
                "engines: 3 needs the engine helper '\(folder.path("plugins/sluice-espeak-engine"))' (installed beside the plugin), which cannot be run (No such file or directory); reinstall Sluice, or set engines: 1"),
                "\(missing.standardError)")
            #expect(missing.standardError.contains("alone-3.yaml:3:3: error: node 'voice' (espeak)"), "\(missing.standardError)")
            let auto = try CommandRunner.run("sluice", ["render", try graph(engines: 0), "--text", "Hello.", "--stats", "json"], timeout: 120, environment: environment)
            #expect(auto.status == 0, "\(auto.standardError)")
            #expect(auto.standardOutput.contains("\"voice.utterances-synthesised\":1"), "\(auto.standardOutput)")
        }
    }
}
