import Foundation
import JackTestSupport
import SluiceTestSupport
import Testing

/// `sluice run` / `sluice launch` without a server: a clear message and a non-zero exit. (Live
/// playback itself is tested against a real server in SluiceJACKTests.)
@Suite struct RunCommandTests {
    @Test func launchWithoutAServerSaysHowToStartOne() throws {
        let server = "sluice-absent-\(getpid())"
        let outcome = try CLI.sluice(["launch", "tone duration=0.1 ! jack.sink", "--server", server])
        #expect(outcome.status == 1)
        #expect(outcome.standardError.contains("error: no JACK server named '\(server)' is running. Start one:"),
                "\(outcome.standardError)")
        #expect(outcome.standardError.contains("jackd"))
    }

    @Test("jack.source without a server says how to start one too, and libjack's own lines stay quiet")
    func jackSourceWithoutAServerSaysHowToStartOne() throws {
        let server = "sluice-absent-source-\(getpid())"
        let outcome = try CLI.sluice(["run", "jack.source channels=1 ! fader ! jack.sink", "--server", server])
        #expect(outcome.status == 1)
        #expect(outcome.standardError.contains("error: node 'jack.source' (jack.source): no JACK server named '\(server)' is running. Start one:"),
                "\(outcome.standardError)")
        #expect(!outcome.standardError.contains("Cannot connect to server socket"), "\(outcome.standardError)")
    }

    @Test func runChecksTheGraphFirst() throws {
        let outcome = try CLI.sluice(["run", "tone frequncy=440 ! jack.sink", "--server", "sluice-absent"])
        #expect(outcome.status == 1)
        #expect(outcome.standardError.contains("has no parameter 'frequncy'"))
    }

    @Test("a live run whose text starts with a thousand lines that make no sound plays to the end")
    func silentLinesFloodLive() throws {
        let server = try JackTestServer.shared()
        let folder = TemporaryFolder()
        let flood = try folder.write(String(repeating: "~\n", count: 1_000) + "E\n", to: "flood.txt")
        let outcome = try CLI.sluice([
            "run", "morse wpm=60 ! fader ! jack.sink connect=none", "--text-file", flood.path, "--server", server.name, "--stats", "json",
        ])
        #expect(outcome.status == 0, "\(outcome.standardError)")
        let stats = try #require(try JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8)) as? [String: Any])
        // E, then the utterance's closing gap: 8 dits.
        let frames = MorseTiming.dits(text: "E") * MorseTiming.ditFrames(wpm: 60, rate: server.sampleRate)
        #expect(stats["audioSeconds"] as? Double == Double(frames) / Double(server.sampleRate))
    }
}
