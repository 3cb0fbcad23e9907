import Foundation
import SluiceTestSupport
import Testing

@testable import SluicePlugins

/// The plugin index's file: what is written reads back the same, whatever the path or message
/// holds, and a file that is not an index (an old JSON one, a cut-off line) reads as none.
@Suite("plugin index file")
struct PluginIndexTests {
    static let awkward: [String: PluginIndex.Record] = [
        "/opt/plugins/libsluice-espeak.so": .init(size: 123_456, changed: 1_732_500_000_123_456_789, inode: 42, types: ["espeak"], error: nil),
        "/home/ann/my\tplugins/100%,\nnew/libsluice-ünï.so": .init(size: 0, changed: -1, inode: .max, types: ["a,b", "c%d"], error: "not a library:\tbad ELF\n(line 2)"),
        "/p/libsluice-none.so": .init(size: 7, changed: 8, inode: 9, types: [], error: nil),
    ]

    @Test("every record reads back exactly, tabs, newlines, commas and percent signs included")
    func roundTrip() throws {
        let bytes = PluginIndex.Format.encode(Self.awkward)
        #expect(PluginIndex.Format.decode(bytes) == Self.awkward)
        // One line per record after the header: nothing inside a field broke a line.
        #expect(bytes.filter { $0 == UInt8(ascii: "\n") }.count == Self.awkward.count + 1)
    }

    @Test("written to disk by save and read by a new index: the same records", .timeLimit(.minutes(1)))
    func throughTheFile() throws {
        let folder = TemporaryFolder()
        let plugin = try folder.write("not really a library", to: "libsluice-x.so")
        let first = PluginIndex(path: folder.file("plugin-index").path)
        first.remember(plugin.path, types: ["x-node"], error: nil)
        first.save()
        let again = PluginIndex(path: folder.file("plugin-index").path)
        #expect(again.freshRecord(for: plugin.path)?.types == ["x-node"])
    }

    @Test("a file rewritten in place with its size, inode and modification time kept is opened again", .timeLimit(.minutes(1)))
    func rewrittenInPlaceIsNotTrusted() throws {
        let folder = TemporaryFolder()
        let plugin = try folder.write("library one", to: "libsluice-x.so")
        let index = PluginIndex(path: folder.file("plugin-index").path)
        index.remember(plugin.path, types: ["x-node"], error: nil)
        #expect(index.freshRecord(for: plugin.path) != nil)
        var before = stat()
        #expect(stat(plugin.path, &before) == 0)
        // Same size, same inode (written through the open file), the mtime set back: only
        // the ctime tells.
        usleep(20_000)
        let handle = try FileHandle(forWritingTo: plugin)
        try handle.write(contentsOf: Data("library two".utf8))
        try handle.close()
        var times = [before.st_atim, before.st_mtim]
        #expect(utimensat(AT_FDCWD, plugin.path, &times, 0) == 0)
        var after = stat()
        #expect(stat(plugin.path, &after) == 0)
        #expect(after.st_size == before.st_size && after.st_ino == before.st_ino && after.st_mtim.tv_nsec == before.st_mtim.tv_nsec)
        #expect(index.freshRecord(for: plugin.path) == nil)
    }

    @Test("saving leaves out the records of files that are gone, and keeps the others", .timeLimit(.minutes(1)))
    func savingPrunesVanishedFiles() throws {
        let folder = TemporaryFolder()
        let kept = try folder.write("not really a library", to: "libsluice-kept.so")
        let gone = try folder.write("not really a library", to: "libsluice-gone.so")
        let index = PluginIndex(path: folder.file("plugin-index").path)
        index.remember(kept.path, types: ["kept-node"], error: nil)
        index.remember(gone.path, types: ["gone-node"], error: nil)
        index.save()
        try FileManager.default.removeItem(atPath: gone.path)
        let later = try folder.write("not really a library", to: "libsluice-new.so")
        let again = PluginIndex(path: folder.file("plugin-index").path)
        again.remember(later.path, types: ["new-node"], error: nil)
        again.save()
        let bytes = try #require(FileManager.default.contents(atPath: folder.file("plugin-index").path))
        let records = try #require(PluginIndex.Format.decode(Array(bytes)))
        #expect(records.mapValues(\.types) == [kept.path: ["kept-node"], later.path: ["new-node"]])
    }

    @Test("not an index: nothing is trusted", arguments: [
        "{\"version\":1,\"plugins\":{}}",
        "sluice-plugin-index 3\n/p\t1\t2\n",
        "sluice-plugin-index 3\n/p\t1\tx\t3\t\t\n",
        "sluice-plugin-index 3\n/p%2\t1\t2\t3\t\t\n",
        "sluice-plugin-index 2\n/p\t1\t2\t3\t\t\n",
        "sluice-plugin-index 4\n",
    ])
    func malformed(_ text: String) {
        #expect(PluginIndex.Format.decode(Array(text.utf8)) == nil)
    }

    @Test("an empty index reads as no records, not as none")
    func empty() {
        #expect(PluginIndex.Format.decode(Array("sluice-plugin-index 3\n".utf8)) == [:])
    }
}
