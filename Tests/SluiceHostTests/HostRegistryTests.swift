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

    @Test("load: a library on the path that is not a plugin is a failure named in the result, not an error")
    func brokenLibrary() throws {
        let folder = TemporaryFolder("sluice-host")
        let path = folder.url.appendingPathComponent("libsluice-broken.so").path
        FileManager.default.createFile(atPath: path, contents: Data("not a library".utf8))
        let loaded = try HostRegistry.load(graphFolder: nil, pluginFolders: [folder.url.path])
        #expect(loaded.failures.count == 1)
        #expect(loaded.failures.first?.contains("libsluice-broken.so") == true)
        #expect(loaded.registry.type(named: "fader") != nil)
        let unknown = GraphDiagnostics([GraphDiagnostic("unknown node type 'x' for node 'x'", at: nil, fix: "run `sluice nodes`")])
        #expect(loaded.explaining(unknown).diagnostics.first?.fix?.contains("did not load: ") == true)
    }
}

/// Where each plugin node type came from (what `sluice nodes` marks them with), and the one
/// version constant.
@Suite struct HostRegistryOriginTests {
    @Test("load: each plugin type maps to the file that provides it; built-in types are not there")
    func pluginFiles() throws {
        let folder = CommandRunner.productsFolder.path
        let loaded = try HostRegistry.load(graphFolder: nil, pluginFolders: [folder])
        #expect(loaded.pluginFiles["ducker"] == folder + "/libsluice-ducker.so")
        #expect(loaded.pluginFiles["espeak"] == folder + "/libsluice-espeak.so")
        #expect(loaded.pluginFiles["fader"] == nil && loaded.pluginFiles["jack.sink"] == nil)
        #expect(Set(loaded.pluginFiles.keys).isSubset(of: Set(loaded.registry.all.map(\.descriptor.typeName))))
    }

    @Test("SluiceVersion is MAJOR.MINOR.PATCH")
    func version() {
        #expect(SluiceVersion.string.wholeMatch(of: /\d+\.\d+\.\d+/) != nil, "\(SluiceVersion.string)")
    }
}
