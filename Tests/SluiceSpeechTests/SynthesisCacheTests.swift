import Crypto
import Foundation
import SluiceAudio
import Synchronization
import Testing

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

func audio(_ fill: UInt8, count: Int, rate: Int = 22_050) -> CachedAudio {
    CachedAudio(format: PCMFormat(.s16le, channels: 1, sampleRate: rate), bytes: (0..<count).map { UInt8(truncatingIfNeeded: $0) &+ fill })
}

func key(_ text: String) -> CacheKey { CacheKey(provider: "espeak", model: "", voice: "en", text: text) }

/// The cache: hit, miss, eviction by size, expiry, a corrupt entry, concurrent writers of the
/// same key, and where the folder is.
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

            // An existing folder open to others is tightened.
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
}
