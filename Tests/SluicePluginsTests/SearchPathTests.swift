import Foundation
import SluicePlugins
import SluiceTestSupport
import Testing

@Suite struct SearchPathTests {
    @Test("the order: graph folder, SLUICE_PLUGIN_PATH entries, the install folder")
    func order() {
        let path = PluginSearchPath.standard(graphFolder: "/graphs", environmentPath: "/a:/b", installFolder: "/usr/lib/sluice/plugins")
        #expect(path.folders == [
            .init("/graphs", origin: .graphFolder), .init("/a", origin: .environment), .init("/b", origin: .environment),
            .init("/usr/lib/sluice/plugins", origin: .install),
        ])
    }

    @Test("never the current directory implicitly: no graph folder, empty entries skipped")
    func noImplicitCurrentDirectory() {
        let path = PluginSearchPath.standard(graphFolder: nil, environmentPath: ":/a::", installFolder: nil)
        #expect(path.folders == [.init("/a", origin: .environment)])
        #expect(PluginSearchPath.standard(graphFolder: "", environmentPath: "", installFolder: nil).folders.isEmpty)
    }

    @Test("the install folder: <prefix>/lib/sluice/plugins beside bin, else the tool's own folder")
    func installFolder() throws {
        let prefix = TemporaryFolder()
        let bin = prefix.url.appendingPathComponent("bin").path
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        #expect(PluginSearchPath.installFolder(forToolIn: bin) == bin)
        let plugins = prefix.url.appendingPathComponent("lib/sluice/plugins").path
        try FileManager.default.createDirectory(atPath: plugins, withIntermediateDirectories: true)
        #expect(PluginSearchPath.installFolder(forToolIn: bin) == prefix.path + "/lib/sluice/plugins")
    }

    @Test("an earlier folder's file shadows the same file name later on the path")
    func shadowing() throws {
        let graphFolder = TemporaryFolder()
        let environment = TemporaryFolder()
        let install = TemporaryFolder()
        let first = try graphFolder.copy(Plugins.ducker, as: "libsluice-ducker.so")
        let later = try environment.copy(Plugins.ducker, as: "libsluice-ducker.so")
        let swift = try environment.copy(Plugins.swiftTest, as: "libsluice-swift-test.so")
        let last = try install.copy(Plugins.ducker, as: "libsluice-ducker.so")
        let catalog = PluginCatalog(searchPath: .standard(
            graphFolder: graphFolder.path, environmentPath: environment.path, installFolder: install.path))
        #expect(catalog.errors.isEmpty)
        #expect(catalog.libraries.map(\.path) == [first, swift])
        let shadowed = catalog.entries.compactMap { entry -> String? in
            if case .shadowed(let by) = entry.outcome, by == first { return entry.path }
            return nil
        }
        #expect(shadowed == [later, last])
        #expect(catalog.entries.map(\.folder.origin) == [.graphFolder, .environment, .environment, .install])
    }
}
