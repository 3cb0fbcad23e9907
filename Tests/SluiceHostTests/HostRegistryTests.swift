import Foundation
import SluiceGraph
import SluiceHost
import SluiceTestSupport
import Testing

/// The host's one registry: built-ins and JACK endpoints always, plugins from the search path,
/// and load problems reported together.
@Suite struct HostRegistryTests {
    @Test("builtin: every built-in node type, jack.sink and jack.source")
    func builtin() {
        let names = Set(HostRegistry.builtin().all.map(\.descriptor.typeName))
        #expect(names.isSuperset(of: ["aligner", "resampler", "crossfader", "fader", "mixer", "channel-map", "tee",
                                      "tone", "wav.source", "bytes.source", "morse", "wav.sink", "null.sink",
                                      "jack.sink", "jack.source"]))
    }

    @Test("full: the plugins built beside the tests register their node types")
    func plugins() throws {
        let registry = try HostRegistry.full(graphFolder: nil, pluginFolders: [CommandRunner.productsFolder.path])
        for name in ["ducker", "espeak", "elevenlabs", "openai", "http-pcm"] {
            #expect(registry.type(named: name) != nil, "\(name)")
        }
        #expect(registry.type(named: "jack.sink") != nil)
    }

    @Test("full: a library on the path that is not a plugin is reported by name")
    func brokenLibrary() throws {
        let folder = TemporaryFolder("sluice-host")
        let path = folder.url.appendingPathComponent("libsluice-broken.so").path
        FileManager.default.createFile(atPath: path, contents: Data("not a library".utf8))
        #expect {
            _ = try HostRegistry.full(graphFolder: nil, pluginFolders: [folder.url.path])
        } throws: { error in
            (error as? HostRegistry.LoadError)?.description.contains("libsluice-broken.so") == true
        }
    }
}
