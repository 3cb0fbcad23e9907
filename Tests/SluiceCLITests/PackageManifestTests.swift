import Foundation
import SluiceTestSupport
import Testing

/// What a user of the package sees in its manifest: the products are what they can use, and
/// nothing the tests or benchmarks need (those live in Tests/Fixtures, a package of its own,
/// or are targets without products).
@Suite struct PackageManifestTests {
    /// Every product, as `swift package dump-package` lists them.
    static func productNames() throws -> [String] {
        // A scratch folder of its own: the `swift test` running this holds `.build`'s lock.
        let scratch = TemporaryFolder("sluice-manifest")
        let outcome = try CommandRunner.run(
            executable: URL(fileURLWithPath: "/usr/bin/env"),
            ["swift", "package", "--scratch-path", scratch.path, "dump-package"], timeout: 120,
            currentDirectory: CLI.packageRoot)
        #expect(outcome.status == 0, "\(outcome.standardError)")
        let manifest = try #require(try JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8)) as? [String: Any])
        let products = try #require(manifest["products"] as? [[String: Any]])
        return products.compactMap { $0["name"] as? String }
    }

    @Test("the products are the libraries, tools and plugins users can use; no test plugin, helper or probe")
    func onlyPublicProducts() throws {
        let names = try Self.productNames()
        #expect(names.sorted() == [
            "SluiceAudio", "SluiceConfig", "SluiceControl", "SluiceControlProtocol", "SluiceGraph", "SluiceHost",
            "SluiceJACK", "SluiceNodes", "SluicePluginABI", "SluicePluginKit", "SluicePlugins", "SluiceRT",
            "SluiceSpeech", "SluiceSpeechd", "SluiceTestKit", "sd_sluice", "sluice", "sluice-ducker",
            "sluice-elevenlabs", "sluice-espeak", "sluice-espeak-engine", "sluice-http-pcm", "sluice-openai", "sluice-piper",
        ])
        #expect(names.filter { $0.hasPrefix("test-plugin") || $0.hasSuffix("TestSupport") || $0.contains("probe") } == [])
    }

    @Test("the test-only plugins build from their own package, and load")
    func fixturesBuild() throws {
        for name in ["test-plugin-swift", "test-plugin-events", "test-plugin-abi-v1", "test-plugin-wrong-abi", "test-plugin-no-entry"] {
            #expect(FileManager.default.fileExists(atPath: TestFixtures.plugin(name)), "\(TestFixtures.plugin(name))")
        }
    }
}
