import Foundation
import SluiceGraph
import SluiceNodes
import SluicePlugins
import SluiceTestSupport
import Testing

/// Every loader error, from real files on disk and real `dlopen` calls.
@Suite struct LoaderErrorTests {
    @Test("a missing file")
    func missingFile() {
        let folder = TemporaryFolder()
        let path = folder.path("libsluice-nothing.so")
        let error = pluginError { _ = try PluginLibrary.load(path: path) }
        #expect(error == .missingFile(path: path))
        #expect(error?.description == "plugin '\(path)' does not exist")
    }

    @Test("a text file named .so is not a shared library")
    func textFile() throws {
        let folder = TemporaryFolder()
        let path = try folder.write("this is not a library\n", to: "libsluice-text.so").path
        let error = pluginError { _ = try PluginLibrary.load(path: path) }
        #expect(error?.kind == "notALibrary")
        #expect(error?.path == path)
        let text = error?.description ?? ""
        #expect(text.hasPrefix("plugin '\(path)' is not a shared library ("), "\(text)")
    }

    @Test("a real shared library without the entry symbol")
    func noEntry() {
        let error = pluginError { _ = try PluginLibrary.load(path: Plugins.noEntry) }
        #expect(error == .missingEntry(path: Plugins.noEntry))
        #expect(error?.description.contains("does not export 'sluice_plugin_entry'") == true)
    }

    @Test("a plugin built for a newer ABI version is refused before its init runs")
    func wrongVersion() {
        // The test plugin reports SLUICE_ABI_VERSION + 1 (3 since version 2); its init, deinit
        // and get_factory abort: reaching them kills the test.
        let error = pluginError { _ = try PluginLibrary.load(path: Plugins.wrongABI) }
        #expect(error == .versionMismatch(path: Plugins.wrongABI, found: 3, expected: 2))
        #expect(
            error?.description.contains(
                "built for plugin ABI version 3, but this sluice loads versions 1 to 2 (the plugin is newer); update sluice, or rebuild it") == true,
            "\(error?.description ?? "")")
    }

    @Test("a relative path is resolved against the current directory only because it was given")
    func relativePath() {
        let error = pluginError { _ = try PluginLibrary.load(path: "no-such-folder/libsluice-x.so") }
        #expect(error?.kind == "missingFile")
        #expect(error?.path.hasPrefix("/") == true)
    }

    @Test("two plugins declaring the same type name")
    func duplicateAcrossPlugins() throws {
        let first = TemporaryFolder()
        let second = TemporaryFolder()
        let a = try first.copy(Plugins.ducker, as: "libsluice-ducker.so")
        let b = try second.copy(Plugins.ducker, as: "libsluice-ducker-copy.so")
        let catalog = PluginCatalog(searchPath: PluginSearchPath(folders: [
            .init(first.path, origin: .graphFolder), .init(second.path, origin: .environment),
        ]))
        #expect(catalog.errors.isEmpty)
        #expect(catalog.libraries.map(\.path) == [a, b])
        var registry = BuiltinNodes.registry()
        let error = pluginError { try catalog.register(into: &registry) }
        #expect(error == .duplicateType(name: "ducker", path: b, other: "plugin '\(a)'"))
        #expect(error?.description == "node type 'ducker' from plugin '\(b)' is already defined by plugin '\(a)'; remove one of them from the plugin search path")
    }

    @Test("a plugin type named like a built-in node")
    func duplicateOfBuiltin() throws {
        let library = try PluginLibrary.load(path: Plugins.ducker)
        var registry = NodeRegistry()
        try registry.register(NodeType(library.nodeTypes[0].descriptor) { _ in fatalError("not created") })
        let error = pluginError { try PluginCatalog.register([library], into: &registry) }
        #expect(error == .duplicateType(name: "ducker", path: library.path, other: "the built-in nodes"))
    }

    @Test("a catalog keeps going past a broken file and reports it")
    func brokenFileInCatalog() throws {
        let folder = TemporaryFolder()
        try folder.write("not a library", to: "libsluice-aaa.so")
        try folder.copy(Plugins.wrongABI, as: "libsluice-bbb.so")
        let ducker = try folder.copy(Plugins.ducker, as: "libsluice-ducker.so")
        try folder.copy(Plugins.ducker, as: "ducker.so")  // not named libsluice-*: ignored
        let catalog = PluginCatalog(searchPath: PluginSearchPath(folders: [.init(folder.path, origin: .environment)]))
        #expect(catalog.entries.map { URL(fileURLWithPath: $0.path).lastPathComponent } == [
            "libsluice-aaa.so", "libsluice-bbb.so", "libsluice-ducker.so",
        ])
        #expect(catalog.errors.map(\.kind) == ["notALibrary", "versionMismatch"])
        #expect(catalog.libraries.map(\.path) == [ducker])
    }
}
