import Crypto
import Foundation
import SluiceAudio
import SluiceConfig
import SluiceGraph
import SluiceNodes
import SluiceTestSupport
import Synchronization
import Testing

@testable import SluicePlugins
@testable import SluiceSpeech

#if canImport(Glibc)
import Glibc
#endif

/// A clock that moves only when the test says so, in seconds since 1970.
final class TestClock: Sendable {
    let time: Mutex<Double>
    init(_ start: Double) { time = Mutex(start) }
    func set(_ seconds: Double) { time.withLock { $0 = seconds } }
    var now: @Sendable () -> Double { { self.time.withLock { $0 } } }
}

/// A fresh folder for one test, removed afterwards.
func withTemporaryFolder(_ body: (URL) throws -> Void) throws {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sluice-cache-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    try body(folder)
}

func fileExists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }

func mode(_ path: String) -> mode_t {
    var status = stat()
    return stat(path, &status) == 0 ? status.st_mode & 0o777 : 0
}

/// The file type bits of `path` itself (`S_IFREG`, `S_IFIFO`, `S_IFLNK` …), 0 when absent.
func fileType(_ path: String) -> mode_t {
    var status = stat()
    return lstat(path, &status) == 0 ? status.st_mode & S_IFMT : 0
}

/// Why the cache refuses the folder at `path`; nil if it opens.
func refusal(_ path: String) -> SynthesisCache.Error? {
    do throws(SynthesisCache.Error) {
        _ = try SynthesisCache(directory: URL(fileURLWithPath: path))
        return nil
    } catch {
        return error
    }
}

func audio(_ fill: UInt8, count: Int, rate: Int = 22_050) -> CachedAudio {
    CachedAudio(format: PCMFormat(.s16le, channels: 1, sampleRate: rate), bytes: (0..<count).map { UInt8(truncatingIfNeeded: $0) &+ fill })
}

func key(_ text: String) -> CacheKey { CacheKey(provider: "espeak", model: "", voice: "en", text: text) }

/// The cache: hit, miss, eviction by size, expiry, a corrupt entry, concurrent writers of the
/// same key, where the folder is and which folders it refuses, entries that are not regular
/// files, the index that spares a store from listing the folder, and the recording limit.
@Suite struct SynthesisCacheTests {
    @Test("the key is SHA-256 of the documented length-prefixed encoding, independent of settings order")
    func keys() {
        let settings = ["rate": "1.0", "pitch": "50"]
        var reordered: [String: String] = [:]
        reordered["pitch"] = "50"
        reordered["rate"] = "1.0"
        let key = CacheKey(provider: "espeak", model: "m1", voice: "en", settings: settings, text: "Hello")
        // Computed independently (Python's struct and hashlib over the same fields).
        #expect(key.hex == "11caa37efa8e8b0a7de59b1fc5faff767879ac5eb9de510ec5bdd76afe755a0a")
        #expect(key == CacheKey(provider: "espeak", model: "m1", voice: "en", settings: reordered, text: "Hello"))
        let encoding = CacheKey.encoding(provider: "espeak", model: "m1", voice: "en", settings: settings, text: "Hello")
        #expect(key.hex == SHA256.hash(data: encoding).map { String(format: "%02x", $0) }.joined())
        #expect(key.hex.count == 64 && SynthesisCache.isEntryName(key.hex))

        // Every field counts, and fields cannot bleed into one another.
        let others = [
            CacheKey(provider: "espeak", model: "m1", voice: "en", settings: settings, text: "Hello!"),
            CacheKey(provider: "espeak", model: "m1", voice: "de", settings: settings, text: "Hello"),
            CacheKey(provider: "espeak", model: "m2", voice: "en", settings: settings, text: "Hello"),
            CacheKey(provider: "openai", model: "m1", voice: "en", settings: settings, text: "Hello"),
            CacheKey(provider: "espeak", model: "m1", voice: "en", settings: ["rate": "1.5", "pitch": "50"], text: "Hello"),
            CacheKey(provider: "espeak", model: "m1", voice: "en", settings: ["rate": "1.0"], text: "Hello"),
            CacheKey(provider: "espeak", model: "m", voice: "1en", settings: settings, text: "Hello"),
            CacheKey(provider: "espeak", model: "m1", voice: "en", settings: ["rate": "1.0", "pitch": "5"], text: "0Hello"),
        ]
        #expect(Set(others.map(\.hex) + [key.hex]).count == others.count + 1)
    }

    @Test("a miss, then a hit with identical bytes and format; other text, voice or settings miss")
    func missThenHit() throws {
        try withTemporaryFolder { folder in
            let cache = try SynthesisCache(directory: folder)
            let settings = ["speed": "1.2", "stability": "0.5"]
            let hello = CacheKey(provider: "elevenlabs", model: "flash", voice: "rachel", settings: settings, text: "Hello")
            #expect(cache.lookup(hello) == nil)
            let stored = CachedAudio(format: PCMFormat(.f32le, channels: 2, sampleRate: 24_000), bytes: (0..<4_000).map { UInt8($0 % 251) })
            try cache.store(hello, stored)
            #expect(cache.lookup(hello) == stored)
            #expect(mode(cache.path(for: hello)) == 0o600)

            var reordered: [String: String] = [:]
            reordered["stability"] = "0.5"
            reordered["speed"] = "1.2"
            #expect(cache.lookup(CacheKey(provider: "elevenlabs", model: "flash", voice: "rachel", settings: reordered, text: "Hello")) == stored)
            #expect(cache.lookup(CacheKey(provider: "elevenlabs", model: "flash", voice: "rachel", settings: settings, text: "Hello.")) == nil)
            #expect(cache.lookup(CacheKey(provider: "elevenlabs", model: "flash", voice: "adam", settings: settings, text: "Hello")) == nil)
            #expect(cache.lookup(CacheKey(provider: "elevenlabs", model: "flash", voice: "rachel", settings: ["speed": "1.2"], text: "Hello")) == nil)

            // Storing again replaces the entry.
            let replaced = audio(7, count: 10, rate: 16_000)
            try cache.store(hello, replaced)
            #expect(cache.lookup(hello) == replaced)
        }
    }

    @Test("over the byte limit the least recently used entries go; a looked-up one survives")
    func evictionBySize() throws {
        try withTemporaryFolder { folder in
            let clock = TestClock(1_000)
            let cache = try SynthesisCache(directory: folder, byteLimit: 10_000, now: clock.now)
            let entrySize = SynthesisCache.headerSize + 3_000
            for (second, name) in ["a", "b", "c"].enumerated() {
                clock.set(1_000 + Double(second))
                try cache.store(key(name), audio(UInt8(second), count: 3_000))
            }
            clock.set(1_010)
            #expect(cache.lookup(key("a")) == audio(0, count: 3_000))  // now the most recent
            clock.set(1_011)
            try cache.store(key("d"), audio(3, count: 3_000))
            #expect(!fileExists(cache.path(for: key("b"))))
            #expect(fileExists(cache.path(for: key("a"))) && fileExists(cache.path(for: key("c"))))
            clock.set(1_012)
            try cache.store(key("e"), audio(4, count: 3_000))
            #expect(!fileExists(cache.path(for: key("c"))))

            let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            #expect(Set(names) == Set(["a", "d", "e"].map { key($0).hex }))
            #expect(names.count * entrySize <= 10_000)
            #expect(cache.lookup(key("a")) == audio(0, count: 3_000))
            #expect(cache.lookup(key("b")) == nil)
            #expect(cache.lookup(key("e")) == audio(4, count: 3_000))

            // An entry bigger than the whole limit does not stay.
            try cache.store(key("huge"), audio(5, count: 20_000))
            #expect(cache.lookup(key("huge")) == nil)
        }
    }

    @Test("temporary files of live writers stay; those older than a minute are removed")
    func staleTemporaryFiles() throws {
        try withTemporaryFolder { folder in
            let clock = TestClock(Date().timeIntervalSince1970)
            let cache = try SynthesisCache(directory: folder, now: clock.now)
            let temporary = folder.appendingPathComponent(".tmp-\(key("x").hex)-1-abc").path
            #expect(FileManager.default.createFile(atPath: temporary, contents: Data([1, 2, 3])))
            try cache.evict()
            #expect(fileExists(temporary))
            clock.set(Date().timeIntervalSince1970 + 120)
            try cache.evict()
            #expect(!fileExists(temporary))
        }
    }

    @Test("an entry older than its time to live is a miss and its file is removed, however recently used")
    func expiry() throws {
        try withTemporaryFolder { folder in
            let clock = TestClock(50_000)
            let cache = try SynthesisCache(directory: folder, timeToLive: 100, now: clock.now)
            try cache.store(key("old"), audio(1, count: 100))
            clock.set(50_090)
            #expect(cache.lookup(key("old")) == audio(1, count: 100))  // used: mtime is 50_090
            clock.set(50_101)
            #expect(cache.lookup(key("old")) == nil)  // created at 50_000
            #expect(!fileExists(cache.path(for: key("old"))))

            // Eviction sweeps entries unused for longer than the time to live.
            try cache.store(key("unused"), audio(2, count: 100))
            clock.set(50_300)
            try cache.store(key("new"), audio(3, count: 100))
            #expect(!fileExists(cache.path(for: key("unused"))))
            #expect(cache.lookup(key("new")) == audio(3, count: 100))
        }
    }

    @Test("a corrupt, truncated or foreign entry is a miss, is removed, and can be stored again")
    func corruptEntry() throws {
        try withTemporaryFolder { folder in
            let cache = try SynthesisCache(directory: folder)
            let good = audio(9, count: 1_000)
            let entry = key("corrupt")
            let path = cache.path(for: entry)

            func damage(_ change: (inout [UInt8]) -> Void) throws {
                try cache.store(entry, good)
                var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
                change(&bytes)
                try Data(bytes).write(to: URL(fileURLWithPath: path))
                #expect(cache.lookup(entry) == nil)
                #expect(!fileExists(path))
            }
            try damage { $0[SynthesisCache.headerSize + 500] ^= 0x01 }  // a payload byte
            try damage { $0[20] ^= 0x01 }  // the channel count in the header
            try damage { $0.removeLast(1) }  // truncated payload
            try damage { $0.removeLast($0.count - 40) }  // truncated header
            try damage { $0.append(0) }  // trailing bytes
            try damage { $0[0] = UInt8(ascii: "X") }  // wrong magic
            try damage { $0 = Array("not a cache entry at all".utf8) }
            try damage { $0 = [] }

            try cache.store(entry, good)
            #expect(cache.lookup(entry) == good)
        }
    }

    @Test("concurrent writers of one key: readers see nothing or one complete payload, one entry remains")
    func concurrentWriters() throws {
        try withTemporaryFolder { folder in
            let cache = try SynthesisCache(directory: folder)
            let entry = key("shared")
            let writers = 8
            let rounds = 50
            // Payload `id` has its own rate and length, and bytes derived from the id, so a
            // mix of two writes cannot pass for either.
            @Sendable func payload(_ id: Int) -> CachedAudio {
                CachedAudio(
                    format: PCMFormat(.s16le, channels: 1, sampleRate: 8_000 + id),
                    bytes: (0..<(2_000 + id * 37 % 6_000)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ id) })
            }
            let done = Atomic<Bool>(false)
            let failures = Mutex<[String]>([])
            let hits = Atomic<Int>(0)
            let group = DispatchGroup()
            func thread(_ body: @escaping @Sendable () -> Void) {
                group.enter()
                Thread {
                    body()
                    group.leave()
                }.start()
            }
            for reader in 0..<2 {
                thread {
                    while !done.load(ordering: .acquiring) {
                        guard let found = cache.lookup(entry) else { continue }
                        let id = found.format.sampleRate - 8_000
                        if id < 0 || id >= writers * rounds || found != payload(id) {
                            failures.withLock { $0.append("reader \(reader) saw a torn or unknown entry (rate \(found.format.sampleRate))") }
                        }
                        hits.add(1, ordering: .relaxed)
                    }
                }
            }
            let writersDone = DispatchGroup()
            for writer in 0..<writers {
                writersDone.enter()
                thread {
                    for round in 0..<rounds {
                        do { try cache.store(entry, payload(writer * rounds + round)) } catch {
                            failures.withLock { $0.append("writer \(writer): \(error)") }
                        }
                    }
                    writersDone.leave()
                }
            }
            writersDone.wait()
            done.store(true, ordering: .releasing)
            group.wait()

            #expect(failures.withLock { $0 } == [])
            #expect(hits.load(ordering: .relaxed) > 0)
            let final = try #require(cache.lookup(entry))
            #expect(final == payload(final.format.sampleRate - 8_000))
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == [entry.hex])
        }
    }

    @Test("the folder is $XDG_CACHE_HOME/sluice, else ~/.cache/sluice, created and kept at mode 0700")
    func location() throws {
        try withTemporaryFolder { folder in
            let xdg = folder.appendingPathComponent("xdg").path
            let home = folder.appendingPathComponent("home").path
            let fromXDG = try SynthesisCache(environment: ["XDG_CACHE_HOME": xdg, "HOME": home])
            #expect(fromXDG.directory.path == xdg + "/sluice")
            #expect(mode(xdg + "/sluice") == 0o700 && mode(xdg) == 0o700)
            #expect(!fileExists(home))

            // Unset, empty or relative XDG_CACHE_HOME falls back to HOME, as the XDG spec says.
            for environment in [["HOME": home], ["HOME": home, "XDG_CACHE_HOME": ""], ["HOME": home, "XDG_CACHE_HOME": "rel"]] {
                let fromHome = try SynthesisCache(environment: environment)
                #expect(fromHome.directory.path == home + "/.cache/sluice")
                #expect(mode(home + "/.cache/sluice") == 0o700)
            }

            // An existing folder readable by others (but writable only by its owner) is tightened.
            let loose = folder.appendingPathComponent("loose").path
            #expect(mkdir(loose, 0o755) == 0 && chmod(loose, 0o755) == 0)
            _ = try SynthesisCache(directory: URL(fileURLWithPath: loose))
            #expect(mode(loose) == 0o700)

            // A folder that cannot be made is a typed error naming the path.
            let file = folder.appendingPathComponent("file").path
            #expect(FileManager.default.createFile(atPath: file, contents: Data()))
            #expect(throws: SynthesisCache.Error.self) { try SynthesisCache(directory: URL(fileURLWithPath: file + "/sluice")) }
            do throws(SynthesisCache.Error) {
                _ = try SynthesisCache(directory: URL(fileURLWithPath: file))
                Issue.record("a regular file was accepted as the cache folder")
            } catch {
                #expect(error.code == ENOTDIR && error.path == file)
            }
            #expect(throws: SynthesisCache.Error.self) { try SynthesisCache(environment: [:]) }
        }
    }

    @Test("a FIFO at an entry's name is a miss at once (never a wait for a writer), is left alone, and a store replaces it")
    func fifoEntry() throws {
        try withTemporaryFolder { folder in
            let cache = try SynthesisCache(directory: folder)
            let entry = key("fifo")
            let path = cache.path(for: entry)
            #expect(mkfifo(path, 0o600) == 0)
            // Opened without O_NONBLOCK, the FIFO would hold this lookup until a writer came.
            #expect(cache.lookup(entry) == nil)
            #expect(fileType(path) == S_IFIFO)
            try cache.evict()  // a listing skips it too
            #expect(fileType(path) == S_IFIFO)
            #expect(cache.indexedNames.isEmpty)
            try cache.store(entry, audio(1, count: 100))
            #expect(fileType(path) == S_IFREG)
            #expect(cache.lookup(entry) == audio(1, count: 100))
        }
    }

    @Test("a symbolic link at an entry's name is not followed: a miss, its target unread and unchanged; a store replaces the link")
    func symlinkEntry() throws {
        try withTemporaryFolder { folder in
            let cache = try SynthesisCache(directory: folder.appendingPathComponent("cache"))
            let entry = key("link")
            let path = cache.path(for: entry)
            // A well-formed entry outside the folder, linked in as if it were the entry.
            let outside = folder.appendingPathComponent("outside").path
            let planted = Data(SynthesisCache.encode(audio(2, count: 500), created: Date().timeIntervalSince1970))
            #expect(FileManager.default.createFile(atPath: outside, contents: planted))
            #expect(utimensat(AT_FDCWD, outside, [timespec(tv_sec: 1_000, tv_nsec: 0), timespec(tv_sec: 1_000, tv_nsec: 0)], 0) == 0)
            #expect(symlink(outside, path) == 0)

            #expect(cache.lookup(entry) == nil)
            #expect(fileType(path) == S_IFLNK)
            var status = stat()
            #expect(stat(outside, &status) == 0 && status.st_mtim.tv_sec == 1_000)  // not even marked as used

            try cache.store(entry, audio(3, count: 100))
            #expect(fileType(path) == S_IFREG)
            #expect(try Data(contentsOf: URL(fileURLWithPath: outside)) == planted)
            #expect(cache.lookup(entry) == audio(3, count: 100))
        }
    }

    @Test("a folder that is a symbolic link, writable by group or others, or another user's is refused and left as it was")
    func folderRefused() throws {
        try withTemporaryFolder { folder in
            for bits: mode_t in [0o777, 0o770, 0o720, 0o702, 0o1777] {
                let path = folder.appendingPathComponent("open-\(String(bits, radix: 8))").path
                #expect(mkdir(path, 0o700) == 0 && chmod(path, bits) == 0)
                let refused = refusal(path)
                #expect(refused?.code == EPERM && refused?.path == path && refused?.operation == "use", "mode \(String(bits, radix: 8))")
                #expect(refused?.message.hasPrefix("it is writable by") == true)
                var status = stat()
                #expect(stat(path, &status) == 0 && status.st_mode & 0o7777 == bits)  // not tightened: refused
                #expect(FileManager.default.subpaths(atPath: path) == [])
            }

            // A link to a good folder, given as the folder or found as $XDG_CACHE_HOME/sluice.
            let real = folder.appendingPathComponent("real").path
            #expect(mkdir(real, 0o700) == 0)
            let link = folder.appendingPathComponent("link").path
            #expect(symlink(real, link) == 0)
            let refused = refusal(link)
            #expect(refused?.code == ELOOP && refused?.path == link)
            #expect(refused?.description == "cannot use \(link): it is a symbolic link; the cache folder must be a real folder")
            let xdg = folder.appendingPathComponent("xdg").path
            #expect(mkdir(xdg, 0o700) == 0 && symlink(real, xdg + "/sluice") == 0)
            #expect(throws: SynthesisCache.Error(
                "use", path: xdg + "/sluice", code: ELOOP, message: "it is a symbolic link; the cache folder must be a real folder"
            )) { try SynthesisCache(environment: ["XDG_CACHE_HOME": xdg]) }
            #expect(FileManager.default.subpaths(atPath: real) == [])
            // The folder itself is fine.
            #expect(refusal(real) == nil)

            // Only root can give a folder to another user; others skip this part.
            if geteuid() == 0 {
                let other = folder.appendingPathComponent("other").path
                #expect(mkdir(other, 0o700) == 0 && chown(other, 54_321, 54_321) == 0)
                let refused = refusal(other)
                #expect(refused?.code == EPERM && refused?.message == "it belongs to user 54321, not to this user (0)")
            }
        }
    }

    @Test("a store evicts by the index built when the cache opened and never lists the folder; evict() lists it again")
    func storeUsesTheIndex() throws {
        try withTemporaryFolder { folder in
            let clock = TestClock(Date().timeIntervalSince1970)
            let entrySize = SynthesisCache.headerSize + 3_000
            // Entries stored before the cache opens are in its index, oldest first.
            let earlier = try SynthesisCache(directory: folder, now: clock.now)
            for (second, name) in ["a", "b", "c"].enumerated() {
                clock.set(clock.now() + 1)
                try earlier.store(key(name), audio(UInt8(second), count: 3_000))
            }
            let cache = try SynthesisCache(directory: folder, byteLimit: 4 * entrySize - 1, now: clock.now)
            #expect(cache.indexedNames == ["a", "b", "c"].map { key($0).hex })
            #expect(cache.listings.load(ordering: .relaxed) == 1)

            // 2 000 files with entry names appear behind the cache's back, unused for ages (so a
            // listing would expire them all), and ten that are not entries at all.
            let planted = (0..<2_000).map { SHA256.hash(data: Array("planted \($0)".utf8)).map { String(format: "%02x", $0) }.joined() }
            for name in planted {
                let path = folder.appendingPathComponent(name).path
                #expect(FileManager.default.createFile(atPath: path, contents: Data(count: 100)))
                #expect(utimensat(AT_FDCWD, path, [timespec(tv_sec: 1_000, tv_nsec: 0), timespec(tv_sec: 1_000, tv_nsec: 0)], 0) == 0)
            }
            for index in 0..<10 {
                #expect(FileManager.default.createFile(atPath: folder.appendingPathComponent("notes-\(index).txt").path, contents: Data()))
            }

            // Four entries pass the limit: the least recently used known one goes, nothing else.
            clock.set(clock.now() + 1)
            try cache.store(key("d"), audio(3, count: 3_000))
            #expect(!fileExists(cache.path(for: key("a"))))
            #expect(["b", "c", "d"].allSatisfy { fileExists(cache.path(for: key($0))) })
            #expect(planted.allSatisfy { fileExists(folder.appendingPathComponent($0).path) })
            #expect(cache.indexedNames == ["b", "c", "d"].map { key($0).hex })
            #expect(cache.listings.load(ordering: .relaxed) == 1)

            // A hit moves an entry to the back; an entry another cache stores is learnt at its hit.
            #expect(cache.lookup(key("b")) == audio(1, count: 3_000))
            try earlier.store(key("e"), audio(4, count: 3_000))
            #expect(cache.lookup(key("e")) == audio(4, count: 3_000))
            #expect(cache.indexedNames == ["c", "d", "b", "e"].map { key($0).hex })
            clock.set(clock.now() + 1)
            try cache.store(key("f"), audio(5, count: 3_000))
            #expect(cache.indexedNames == ["b", "e", "f"].map { key($0).hex })
            #expect(!fileExists(cache.path(for: key("c"))) && !fileExists(cache.path(for: key("d"))))
            #expect(cache.listings.load(ordering: .relaxed) == 1)

            // evict() lists the folder: the planted files have expired; the rest stay.
            try cache.evict()
            #expect(cache.listings.load(ordering: .relaxed) == 2)
            let names = Set(try FileManager.default.contentsOfDirectory(atPath: folder.path))
            #expect(names == Set(["b", "e", "f"].map { key($0).hex } + (0..<10).map { "notes-\($0).txt" }))
            #expect(Set(cache.indexedNames) == Set(["b", "e", "f"].map { key($0).hex }))
        }
    }

    @Test("an utterance whose audio passes the 32 MiB recording limit is not stored, not even its tail; one at the limit is")
    func overLimitUtterance() throws {
        try withTemporaryFolder { folder in
            let cache = try SynthesisCache(directory: folder)
            let library = try PluginLibrary.load(path: TestFixtures.plugin("test-plugin-swift"))
            var registry = BuiltinNodes.registry()
            try PluginCatalog.register([library], into: &registry)
            let graph = try GraphCompiler(registry: registry).compile(GraphFile.parse("""
                name: speech
                nodes:
                  voice: { type: test-pcm, chunk: 65536 }
                  align: { type: aligner }
                  out:   { type: null.sink, rate: 16000, channels: 1 }
                links:
                  - voice -> align -> out
                """, file: "test.yaml", baseDirectory: nil))
            let voice = try #require(graph.nodes.first { $0.name == "voice" }?.instance as? PluginProviderSource)
            let provider = ProviderCache(cache: cache, provider: "test-pcm", parameters: ["chunk": "65536"])
            voice.useCache(provider)
            // test-pcm speaks 100 frames of S16LE, 200 bytes, per byte of text.
            let limit = PluginProviderSource.largestCachedUtterance
            // Over by a few reads, so a recording restarted after the limit would have a tail.
            let over = String(repeating: "o", count: limit / 200 + 1_000)
            let atLimit = String(repeating: "a", count: limit / 200)
            #expect(200 * over.utf8.count > limit && 200 * atLimit.utf8.count <= limit)
            voice.receive(text: over)
            voice.receive(text: atLimit)
            voice.receive(text: "hi")
            voice.finishText()

            let ports = NodePorts(inputs: [], outputs: [.bytes(voice.format)])
            let room = 65_536
            let buffer = UnsafeMutableRawPointer.allocate(byteCount: room, alignment: 8)
            defer { buffer.deallocate() }
            var produced = 0
            var finished = false
            for _ in 0..<20_000 where !finished {
                // SAFETY: `buffer` holds `room` bytes and lives until the loop is over (defer).
                ports.setOutput(0, base: buffer, units: room)
                var io = ProcessIO(ports)
                if case .finished = voice.produce(&io, at: 0) { finished = true }
                produced += ports.produced(output: 0)
                ports.removeMarkers(output: 0)
            }
            #expect(finished)
            #expect(produced == 200 * (over.utf8.count + atLimit.utf8.count + 2))

            #expect(cache.lookup(provider.key(over))?.bytes.count == nil)
            #expect(provider.audio(for: atLimit, format: voice.format)?.count == 200 * atLimit.utf8.count)
            #expect(provider.audio(for: "hi", format: voice.format)?.count == 400)
            #expect(Set(try FileManager.default.contentsOfDirectory(atPath: folder.path)) == [provider.key(atLimit).hex, provider.key("hi").hex])
        }
    }
}
