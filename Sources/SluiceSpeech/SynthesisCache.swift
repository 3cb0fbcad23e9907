import Crypto
import Foundation
import SluiceAudio

#if canImport(Glibc)
import Glibc
#endif

/// Synthesised audio kept on disk, so the same text with the same provider and settings is
/// synthesised once.
///
/// The file system is the index: an entry is a file named by its ``CacheKey`` in
/// ``directory``; its modification time is its last use (LRU), and its header holds the time
/// it was created (expiry). Several threads and processes may share one folder: writes
/// appear atomically (`rename`), and every operation tolerates files vanishing under it.
///
/// An entry file is a 76-byte header, then the payload:
///
/// | Bytes | Field |
/// | --- | --- |
/// | 0..<8 | magic `SLCACHE1` |
/// | 8..<12 | version (1), UInt32 little-endian |
/// | 12..<20 | sample format name (`s16le` …), NUL-padded |
/// | 20..<24 | channels, UInt32 LE |
/// | 24..<28 | sample rate, UInt32 LE |
/// | 28..<36 | created, seconds since 1970 as a Float64 LE bit pattern |
/// | 36..<44 | payload length, UInt64 LE |
/// | 44..<76 | SHA-256 of bytes 0..<44 and the payload |
///
/// Thread safety: `[thread-safe]`; all state is on disk.
public final class SynthesisCache: Sendable {
    /// An I/O failure that stops an operation: what was attempted, on which path, and the
    /// system's reason.
    public struct Error: Swift.Error, Equatable, CustomStringConvertible {
        public let operation: String
        public let path: String
        /// The `errno` value, or 0 when the failure is not a system call's.
        public let code: Int32
        public let message: String

        init(_ operation: String, path: String, code: Int32 = errno) {
            self.operation = operation
            self.path = path
            self.code = code
            message = String(cString: strerror(code))
        }

        init(_ operation: String, path: String, message: String) {
            self.operation = operation
            self.path = path
            code = 0
            self.message = message
        }

        public var description: String { "cannot \(operation) \(path): \(message)" }
    }

    public static let defaultByteLimit = 100_000_000
    /// Thirty days, in seconds.
    public static let defaultTimeToLive: Double = 30 * 24 * 60 * 60
    /// Another writer's temporary file younger than this is in use; older, it was left by a
    /// writer that died, and eviction removes it.
    static let staleTemporaryAge: Double = 60

    static let magic = Array("SLCACHE1".utf8)
    static let version: UInt32 = 1
    static let headerSize = 76
    static let checksumOffset = 44

    /// The cache's own folder (created with mode 0700).
    public let directory: URL
    /// Eviction keeps the entries' total size at or below this many bytes.
    public let byteLimit: Int
    /// Seconds after its creation an entry expires.
    public let timeToLive: Double
    /// Seconds since 1970: the system clock, or a test's.
    let now: @Sendable () -> Double

    /// The wall clock, in seconds since 1970.
    public static let systemNow: @Sendable () -> Double = { Date().timeIntervalSince1970 }

    /// `$XDG_CACHE_HOME/sluice`, else `$HOME/.cache/sluice`; nil when neither is usable. As
    /// the XDG specification says, an empty or relative `XDG_CACHE_HOME` is ignored.
    public static func defaultDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL? {
        if let cache = environment["XDG_CACHE_HOME"], cache.hasPrefix("/") {
            return URL(fileURLWithPath: cache, isDirectory: true).appendingPathComponent("sluice", isDirectory: true)
        }
        if let home = environment["HOME"], home.hasPrefix("/") {
            return URL(fileURLWithPath: home, isDirectory: true)
                .appendingPathComponent(".cache/sluice", isDirectory: true)
        }
        return nil
    }

    /// Opens the cache in `directory` (by default ``defaultDirectory(environment:)``),
    /// creating it and any missing parents with mode 0700, and tightening an existing
    /// folder to 0700: cached speech may be private text.
    public init(
        directory: URL? = nil, byteLimit: Int = SynthesisCache.defaultByteLimit,
        timeToLive: Double = SynthesisCache.defaultTimeToLive,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        now: @escaping @Sendable () -> Double = SynthesisCache.systemNow
    ) throws(Error) {
        guard let directory = directory ?? Self.defaultDirectory(environment: environment) else {
            throw Error("locate", path: "the cache folder", message: "neither XDG_CACHE_HOME nor HOME is set")
        }
        self.directory = directory.standardizedFileURL
        self.byteLimit = byteLimit
        self.timeToLive = timeToLive
        self.now = now
        try Self.makeDirectory(self.directory.path)
    }

    /// The path of `key`'s entry.
    public func path(for key: CacheKey) -> String { directory.appendingPathComponent(key.hex).path }

    // MARK: Lookup

    /// The audio stored under `key`, or nil: never stored, evicted, expired, unreadable or
    /// corrupt. Expired and corrupt entries are deleted, so the caller synthesises again and
    /// stores a good one; a corrupt entry's bytes are never returned. A hit marks the entry
    /// as just used.
    public func lookup(_ key: CacheKey) -> CachedAudio? {
        let path = path(for: key)
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return nil }
        guard let contents = Self.readAll(descriptor, size: Int(status.st_size)),
            let entry = Self.decode(contents)
        else {
            discard(path, ifStill: status)
            return nil
        }
        guard now() - entry.created <= timeToLive else {
            discard(path, ifStill: status)
            return nil
        }
        // The modification time is the entry's last use; eviction removes the oldest.
        // Failing to refresh it only makes the entry older in eviction's eyes.
        var times = [Self.timespec(now()), Self.timespec(now())]
        _ = futimens(descriptor, &times)
        return entry.audio
    }

    /// Deletes the entry at `path` if it is still the file that was opened: another writer
    /// may have renamed a good entry over it since, and that one must stay.
    private func discard(_ path: String, ifStill opened: stat) {
        var current = stat()
        guard stat(path, &current) == 0, current.st_dev == opened.st_dev, current.st_ino == opened.st_ino else {
            return
        }
        unlink(path)
    }

    // MARK: Store

    /// Stores `audio` under `key`, replacing any entry there, then evicts down to
    /// ``byteLimit``. The entry is written to a private temporary file and renamed into place,
    /// so readers and concurrent writers of the same key only ever see a complete file (the
    /// last rename wins). An entry larger than ``byteLimit`` on its own is evicted at once.
    public func store(_ key: CacheKey, _ audio: CachedAudio) throws(Error) {
        let contents = Self.encode(audio, created: now())
        let final = path(for: key)
        let temporary = directory.appendingPathComponent(
            ".tmp-\(key.hex)-\(getpid())-\(String(UInt64.random(in: 0...UInt64.max), radix: 16))"
        ).path
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw Error("create", path: temporary) }
        var written = 0
        while written < contents.count {
            // SAFETY: the buffer pointer is valid for the whole closure and the range written
            // from lies inside `contents` (written < count).
            let result = contents.withUnsafeBytes { buffer in
                write(descriptor, buffer.baseAddress! + written, buffer.count - written)
            }
            if result < 0 && errno == EINTR { continue }
            guard result > 0 else {
                let error = Error("write", path: temporary)
                close(descriptor)
                unlink(temporary)
                throw error
            }
            written += result
        }
        // The entry's last use is now, by the cache's clock (a test's clock sets the order).
        var times = [Self.timespec(now()), Self.timespec(now())]
        _ = futimens(descriptor, &times)
        close(descriptor)
        guard rename(temporary, final) == 0 else {
            let error = Error("rename into place", path: final)
            unlink(temporary)
            throw error
        }
        try evict()
    }

    // MARK: Eviction

    /// Removes entries unused for longer than ``timeToLive`` (they have expired, having been
    /// created before their last use), then the least recently used until the entries' total
    /// size is at most ``byteLimit``. Temporary files older than a minute, left by writers
    /// that died, are removed; younger ones belong to writers at work and are left alone.
    public func evict() throws(Error) {
        guard let folder = opendir(directory.path) else { throw Error("list", path: directory.path) }
        defer { closedir(folder) }
        let current = now()
        var entries: [(name: String, size: Int, used: Double)] = []
        while let record = readdir(folder) {
            // SAFETY: d_name is a NUL-terminated array inside the dirent readdir returned,
            // valid until the next readdir call; String(cString:) copies it before then.
            let name = withUnsafePointer(to: &record.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: Int(NAME_MAX) + 1) { String(cString: $0) }
            }
            let isEntry = Self.isEntryName(name)
            guard isEntry || name.hasPrefix(".tmp-") else { continue }
            let path = directory.appendingPathComponent(name).path
            var status = stat()
            // Gone already: another process evicted it, or a writer renamed it into place.
            guard lstat(path, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { continue }
            let used = Double(status.st_mtim.tv_sec) + Double(status.st_mtim.tv_nsec) / 1e9
            if !isEntry {
                if current - used > Self.staleTemporaryAge { unlink(path) }
            } else if current - used > timeToLive {
                unlink(path)
            } else {
                entries.append((name, Int(status.st_size), used))
            }
        }
        var total = entries.reduce(0) { $0 + $1.size }
        guard total > byteLimit else { return }
        entries.sort { ($0.used, $0.name) < ($1.used, $1.name) }
        for entry in entries where total > byteLimit {
            // ENOENT means another process removed it first: its bytes are gone either way.
            unlink(directory.appendingPathComponent(entry.name).path)
            total -= entry.size
        }
    }

    // MARK: The file format

    /// An entry's file name: 64 lowercase hex digits.
    static func isEntryName(_ name: String) -> Bool {
        name.utf8.count == 64 && name.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    static func encode(_ audio: CachedAudio, created: Double) -> [UInt8] {
        var bytes = magic
        bytes.reserveCapacity(headerSize + audio.bytes.count)
        func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { bytes += $0 } }
        append(version)
        let name = Array(audio.format.sampleFormat.rawValue.utf8)
        bytes += name + [UInt8](repeating: 0, count: 8 - name.count)
        append(UInt32(audio.format.channels))
        append(UInt32(audio.format.sampleRate))
        append(created.bitPattern)
        append(UInt64(audio.bytes.count))
        var hasher = SHA256()
        hasher.update(data: bytes)
        hasher.update(data: audio.bytes)
        bytes += hasher.finalize()
        return bytes + audio.bytes
    }

    /// The entry in `bytes`, or nil if they are not a complete, intact entry.
    static func decode(_ bytes: [UInt8]) -> (audio: CachedAudio, created: Double)? {
        guard bytes.count >= headerSize, bytes.starts(with: magic) else { return nil }
        func integer<T: FixedWidthInteger>(_ type: T.Type, at offset: Int) -> T {
            bytes[offset..<offset + MemoryLayout<T>.size].reversed().reduce(T(0)) { $0 << 8 | T($1) }
        }
        guard integer(UInt32.self, at: 8) == version else { return nil }
        let name = String(decoding: bytes[12..<20].prefix { $0 != 0 }, as: UTF8.self)
        let channels = integer(UInt32.self, at: 20)
        let rate = integer(UInt32.self, at: 24)
        let created = Double(bitPattern: integer(UInt64.self, at: 28))
        let length = integer(UInt64.self, at: 36)
        guard let sampleFormat = SampleFormat(rawValue: name), channels > 0, rate > 0, created.isFinite,
            length == UInt64(bytes.count - headerSize)
        else { return nil }
        var hasher = SHA256()
        hasher.update(data: bytes[0..<checksumOffset])
        hasher.update(data: bytes[headerSize...])
        guard hasher.finalize().elementsEqual(bytes[checksumOffset..<headerSize]) else { return nil }
        let format = PCMFormat(sampleFormat, channels: Int(channels), sampleRate: Int(rate))
        return (CachedAudio(format: format, bytes: Array(bytes[headerSize...])), created)
    }

    // MARK: System calls

    /// Reads the whole file, expecting `size` bytes; nil on a read error.
    static func readAll(_ descriptor: Int32, size: Int) -> [UInt8]? {
        guard size >= 0 else { return nil }
        var bytes = [UInt8](repeating: 0, count: size)
        var count = 0
        while count < size {
            // SAFETY: the pointer is valid for the closure; the range read into lies inside
            // `bytes` (count < size == bytes.count).
            let result = bytes.withUnsafeMutableBytes { buffer in
                read(descriptor, buffer.baseAddress! + count, size - count)
            }
            if result < 0 && errno == EINTR { continue }
            guard result >= 0 else { return nil }
            // Shorter than fstat said: a truncated file, which decode rejects.
            if result == 0 { break }
            count += result
        }
        return Array(bytes.prefix(count))
    }

    static func timespec(_ seconds: Double) -> Glibc.timespec {
        let whole = seconds.rounded(.down)
        return Glibc.timespec(tv_sec: Int(whole), tv_nsec: Int((seconds - whole) * 1e9))
    }

    /// Creates `path` and its missing parents with mode 0700, and tightens `path` itself to
    /// 0700 if it already exists with more permissive bits.
    static func makeDirectory(_ path: String) throws(Error) {
        var prefix = ""
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, 0o700) != 0 && errno != EEXIST { throw Error("create", path: prefix) }
        }
        var status = stat()
        guard stat(path, &status) == 0 else { throw Error("inspect", path: path) }
        guard status.st_mode & S_IFMT == S_IFDIR else { throw Error("use", path: path, code: ENOTDIR) }
        if status.st_mode & 0o777 != 0o700 && chmod(path, 0o700) != 0 { throw Error("restrict", path: path) }
    }
}
