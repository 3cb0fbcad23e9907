import Foundation
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

    @Test func runChecksTheGraphFirst() throws {
        let outcome = try CLI.sluice(["run", "tone frequncy=440 ! jack.sink", "--server", "sluice-absent"])
        #expect(outcome.status == 1)
        #expect(outcome.standardError.contains("has no parameter 'frequncy'"))
    }
}
