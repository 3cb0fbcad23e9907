import Foundation
import JackTestSupport
import SluiceTestSupport
import Testing

/// jack.sink's process callback under clang's RealtimeSanitizer: the probe (linked with the
/// RTSan runtime, see Package.swift) plays the speech chain into the test server with
/// real-time context entered around every callback; any allocation, lock or blocking call in
/// it is a report and a non-zero exit.
@Suite struct RealtimeSanitizerTests {
    static let probe = "RealtimeSanitizerProbe"
    static let input = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("graphs/audio/hello-24k.s16").path

    @Test func theSanitizerIsWatching() throws {
        let outcome = try CommandRunner.run(Self.probe, ["--self-test"], timeout: 60)
        #expect(outcome.status != 0)
        #expect(outcome.standardError.contains("RealtimeSanitizer: unsafe-library-call"))
        #expect(outcome.standardError.contains("`malloc` in real-time context"))
    }

    @Test func theProcessCallbackIsRealtimeSafe() throws {
        let server = try JackTestServer.shared()
        let outcome = try CommandRunner.run(Self.probe, [server.name, Self.input], timeout: 60)
        #expect(!outcome.standardError.contains("RealtimeSanitizer"), "\(outcome.standardError.prefix(4000))")
        #expect(outcome.status == 0)
        #expect(outcome.standardOutput.hasPrefix("played 1.27"))
    }
}
