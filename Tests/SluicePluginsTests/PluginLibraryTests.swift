import Foundation
@testable import SluicePlugins
import SluiceTestSupport
import Synchronization
import Testing

@Suite struct PluginLibraryTests {
    @Test("the same file loads once per process")
    func loadedOnce() throws {
        let a = try PluginLibrary.load(path: Plugins.ducker)
        let b = try PluginLibrary.load(path: Plugins.ducker)
        #expect(a === b)
    }

    /// The plugin's `deinit` must wait for the path's last object, even one made while an
    /// older one was being released: this used to wipe the newer object's plugin state.
    @Test("a load while the path's last object is being released shares the plugin; deinit waits for both")
    func loadDuringRelease() throws {
        let folder = TemporaryFolder()
        // A private copy: its own image and plugin state, loaded and released only here.
        let path = try folder.copy(Plugins.swiftTest, as: "libsluice-release.so")
        let yaml = SwiftKitPluginTests.speechGraph("chunk: 100")
        let loadedDuringRelease = Mutex<PluginLibrary?>(nil)
        PluginLibrary.releaseHook.withLock {
            $0 = { released in
                guard released == path, loadedDuringRelease.withLock({ $0 == nil }) else { return }
                let library = try? PluginLibrary.load(path: path)
                loadedDuringRelease.withLock { $0 = library }
            }
        }
        defer { PluginLibrary.releaseHook.withLock { $0 = nil } }
        do { _ = try PluginLibrary.load(path: path) }   // released at once: the hook loads again
        let library = try #require(loadedDuringRelease.withLock { $0 })
        let (samples, _) = try GraphRendering.render(try Plugins.compile(yaml, libraries: [library]), text: ["hi"])
        #expect(samples == SwiftKitPluginTests.expectedSpeech(["hi"]))
    }

    /// The plugin's `deinit` must not run while a newer load of its path is in use: a load
    /// racing the release of the last object for the path used to get a plugin whose state
    /// the old object's `deinit` then wiped ("this plugin has no provider of that name").
    @Test("loads racing releases on several threads: every graph finds the plugin's nodes")
    func loadsRacingReleases() throws {
        let folder = TemporaryFolder()
        // A private copy: its own image, so only this test loads and releases it.
        let path = try folder.copy(Plugins.swiftTest, as: "libsluice-race.so")
        let yaml = SwiftKitPluginTests.speechGraph("chunk: 100")
        let failures = Mutex<[String]>([])
        let done = DispatchGroup()
        for _ in 0..<4 {
            done.enter()
            Thread.detachNewThread {
                defer { done.leave() }
                for _ in 0..<150 {
                    do {
                        let graph = try Plugins.compile(yaml, libraries: [try PluginLibrary.load(path: path)])
                        _ = try GraphRendering.render(graph, text: ["hi"])
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }
            }
        }
        done.wait()
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0.first ?? "" })")
    }
}
