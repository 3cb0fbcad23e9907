import Crypto
import Foundation
import SluiceAudio

import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Synthesised audio kept on disk, so the same text with the same provider and settings is
/// synthesised once.
///
/// An entry is a file named by its ``CacheKey`` in ``directory``; its modification time is its
/// last use (LRU), and its header holds the time it was created (expiry). Several threads and
/// processes may share one folder: writes appear atomically (`rename`), and every operation
/// tolerates files vanishing under it.
///
/// The folder is checked once, when the cache opens, and then used through a descriptor: it
/// must be a real folder (not a symbolic link), owned by the effective user and writable by no
/// one else. Entries are opened without following symbolic links and without waiting on a FIFO,
/// and only regular files are read. Each cache keeps an index of the entries' sizes and last
/// uses, built from the folder when it opens and kept up to date by its own lookups, stores and
/// evictions, so a store never lists the folder; ``evict()`` lists it again.
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
/// Thread safety: `[thread-safe]`; the index is behind a mutex, the entries are on disk.
public final class SynthesisCache: Sendable {
    /// An I/O failure that stops an operation, or a folder the cache refuses to use: what was
    /// attempted, on which path, and the reason.
    public struct Error: Swift.Error, Equatable, CustomStringConvertible {
        public let operation: String
        public let path: String
        /// The `errno` value, or 0 when the failure is not a system call's. A refused folder
        /// has `ELOOP` (a symbolic link), `ENOTDIR` (not a folder) or `EPERM` (another user's,
        /// or writable by group or others).
        public let code: Int32
        public let message: String

        init(_ operation: String, path: String, code: Int32 = errno) {
            self.operation = operation
            self.path = path
            self.code = code
            message = String(cString: strerror(code))
        }

        init(_ operation: String, path: String, message: String) {
            self.init(operation, path: path, code: 0, message: message)
        }

        init(_ operation: String, path: String, code: Int32, message: String) {
            self.operation = operation
            self.path = path
            self.code = code
            self.message = message
        }

        public var description: String { "cannot \(operation) \(path): \(message)" }
    }

    public static let defaultByteLimit = 100_000_000
    /// Thirty days, in seconds.
    public static let defaultTimeToLive: Double = 30 * 24 * 60 * 60
    /// Another writer's temporary file younger than this is in use; older, it was left by a
    /// writer that died, and a listing of the folder removes it.
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
    /// The folder, opened once with `O_DIRECTORY | O_NOFOLLOW` after its checks: entries are
    /// opened, renamed and removed relative to it, so the folder checked is the folder used,
    /// even if its path is later made to name something else.
    private let folder: Int32
    /// The entries this cache knows of, least recently used first. Also held while renaming
    /// and removing entries, so this process's own writers and evictions do not interleave.
    private let index: Mutex<EntryIndex>
    /// How many times the folder was listed: once when the cache opened, once per ``evict()``.
    let listings = Atomic<Int>(0)

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
    /// creating it and any missing parents with mode 0700: cached speech may be private text.
    /// An existing folder is refused (``Error``, so the caller goes without a cache) when it is
    /// a symbolic link, not a folder, owned by another user, or writable by group or others;
    /// one merely readable by others is tightened to 0700. The folder is then listed once to
    /// build the index, removing temporary files that writers which died left behind.
    public init(
        directory: URL? = nil, byteLimit: Int = SynthesisCache.defaultByteLimit,
        timeToLive: Double = SynthesisCache.defaultTimeToLive,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        now: @escaping @Sendable () -> Double = SynthesisCache.systemNow
    ) throws(Error) {
        guard let directory = directory ?? Self.defaultDirectory(environment: environment) else {
            throw Error("locate", path: "the cache folder", message: "neither XDG_CACHE_HOME nor HOME is set")
        }
        let standardized = directory.standardizedFileURL
        let folder = try Self.openFolder(standardized.path)
        self.directory = standardized
        self.byteLimit = byteLimit
        self.timeToLive = timeToLive
        self.now = now
        self.folder = folder
        let entries: EntryIndex
        do {
            entries = try Self.list(folder, path: standardized.path, at: now())
        } catch {
            close(folder)
            throw error
        }
        index = Mutex(entries)
        listings.add(1, ordering: .relaxed)
    }

    deinit {
        close(folder)
    }

    /// The path of `key`'s entry.
    public func path(for key: CacheKey) -> String { directory.appendingPathComponent(key.hex).path }

    // MARK: Lookup

    /// The audio stored under `key`, or nil: never stored, evicted, expired, unreadable,
    /// corrupt, or not a regular file (a symbolic link is not followed, a FIFO not waited on).
    /// Expired and corrupt entries are deleted, so the caller synthesises again and stores a
    /// good one; a corrupt entry's bytes are never returned. A hit marks the entry as just
    /// used.
    public func lookup(_ key: CacheKey) -> CachedAudio? {
        let name = key.hex
        // O_NOFOLLOW: a symbolic link at the entry's name fails (ELOOP) instead of leading out
        // of the folder. O_NONBLOCK: opening a FIFO returns at once instead of waiting for a
        // writer; it is cleared below once fstat shows a regular file.
        let descriptor = openat(folder, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else {
            // Removed by another process: the index forgets it.
            if errno == ENOENT { refresh(name, usedAt: nil) }
            return nil
        }
        defer { close(descriptor) }
        var status = stat()
        // Anything but a regular file is a miss and is left alone; a store renames over it.
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return nil }
        // Reads of a regular file never wait anyway; cleared so they behave as documented.
        let flags = fcntl(descriptor, F_GETFL)
        guard flags >= 0, fcntl(descriptor, F_SETFL, flags & ~O_NONBLOCK) == 0 else { return nil }
        guard let contents = Self.readAll(descriptor, size: Int(status.st_size)),
            let entry = Self.decode(contents)
        else {
            discard(name, ifStill: status)
            return nil
        }
        let current = now()
        guard current - entry.created <= timeToLive else {
            discard(name, ifStill: status)
            return nil
        }
        // The modification time is the entry's last use; eviction removes the oldest.
        // Failing to refresh it only makes the entry older in eviction's eyes.
        var times = [Self.timespec(current), Self.timespec(current)]
        _ = futimens(descriptor, &times)
        // An entry another process stored is learnt here.
        refresh(name, usedAt: current)
        return entry.audio
    }

    /// Brings the index's record of `name` in line with the folder: the entry there now (a
    /// writer may have renamed another over the one read), used at `used` if given, or none.
    /// Under the lock, so this process's own renames and removals cannot interleave.
    private func refresh(_ name: String, usedAt used: Double?) {
        index.withLock { index in
            var status = stat()
            if fstatat(folder, name, &status, AT_SYMLINK_NOFOLLOW) == 0, status.st_mode & S_IFMT == S_IFREG {
                if let used { index.use(name, size: Int(status.st_size), at: used) }
            } else {
                index.remove(name)
            }
        }
    }

    /// Deletes the entry `name` if it is still the file that was opened: another writer may
    /// have renamed a good entry over it since, and that one must stay.
    private func discard(_ name: String, ifStill opened: stat) {
        index.withLock { index in
            var current = stat()
            guard fstatat(folder, name, &current, AT_SYMLINK_NOFOLLOW) == 0, current.st_dev == opened.st_dev,
                current.st_ino == opened.st_ino
            else { return }
            unlinkat(folder, name, 0)
            index.remove(name)
        }
    }

    // MARK: Store

    /// Stores `audio` under `key`, replacing any entry there, then evicts down to
    /// ``byteLimit`` using the index (the folder is not listed). The entry is written to a new
    /// private temporary file in the folder (`O_CREAT | O_EXCL | O_NOFOLLOW`, mode 0600) and
    /// renamed into place, so readers and concurrent writers of the same key only ever see a
    /// complete file (the last rename wins). An entry larger than ``byteLimit`` on its own is
    /// evicted at once.
    public func store(_ key: CacheKey, _ audio: CachedAudio) throws(Error) {
        let contents = Self.encode(audio, created: now())
        let name = key.hex
        let temporary = ".tmp-\(name)-\(getpid())-\(String(UInt64.random(in: 0...UInt64.max), radix: 16))"
        // O_EXCL and O_NOFOLLOW: the file is new and this writer's; nothing placed at the
        // name beforehand (a symbolic link to elsewhere) is written through.
        let descriptor = openat(folder, temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw Error("create", path: pathInFolder(temporary)) }
        var written = 0
        while written < contents.count {
            // SAFETY: the buffer pointer is valid for the whole closure and the range written
            // from lies inside `contents` (written < count).
            let result = contents.withUnsafeBytes { buffer in
                write(descriptor, buffer.baseAddress! + written, buffer.count - written)
            }
            if result < 0 && errno == EINTR { continue }
            guard result > 0 else {
                let error = Error("write", path: pathInFolder(temporary))
                close(descriptor)
                unlinkat(folder, temporary, 0)
                throw error
            }
            written += result
        }
        // The entry's last use is now, by the cache's clock (a test's clock sets the order).
        let used = now()
        var times = [Self.timespec(used), Self.timespec(used)]
        _ = futimens(descriptor, &times)
        close(descriptor)
        try index.withLock { (index) throws(Error) in
            guard renameat(folder, temporary, folder, name) == 0 else {
                let error = Error("rename into place", path: pathInFolder(name))
                unlinkat(folder, temporary, 0)
                throw error
            }
            index.use(name, size: contents.count, at: used)
            evictByIndex(&index)
        }
    }

    // MARK: Eviction

    /// Lists the folder again — rebuilding the index, so entries other processes stored or
    /// removed are counted — then evicts: entries unused for longer than ``timeToLive`` go
    /// (they have expired, having been created before their last use), then the least
    /// recently used until the entries' total size is at most ``byteLimit``. Temporary files
    /// older than a minute, left by writers that died, are removed; younger ones belong to
    /// writers at work and are left alone. ``store(_:_:)`` evicts by the index alone.
    public func evict() throws(Error) {
        try index.withLock { (index) throws(Error) in
            index = try Self.list(folder, path: directory.path, at: now())
            listings.add(1, ordering: .relaxed)
            evictByIndex(&index)
        }
    }

    /// Removes the least recently used entries while they are unused for longer than
    /// ``timeToLive`` or the total is above ``byteLimit``. Each entry goes once, so the work is
    /// amortised over the stores that added them. Called with the index locked.
    private func evictByIndex(_ index: inout EntryIndex) {
        let current = now()
        while let oldest = index.oldest, index.totalSize > byteLimit || current - oldest.used > timeToLive {
            // ENOENT means another process removed it first: its bytes are gone either way.
            unlinkat(folder, oldest.name, 0)
            index.remove(oldest.name)
        }
    }

    /// The names the index holds, least recently used first.
    var indexedNames: [String] { index.withLock { $0.names } }

    /// The index of the entries in the folder open as `folder`: regular files with entry
    /// names, by their modification time. Removes stale temporary files on the way.
    private static func list(_ folder: Int32, path: String, at current: Double) throws(Error) -> EntryIndex {
        // A descriptor of its own (fdopendir takes it, and its offset must not be shared).
        let listing = openat(folder, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard listing >= 0, let stream = fdopendir(listing) else {
            let error = Error("list", path: path)
            if listing >= 0 { close(listing) }
            throw error
        }
        defer { closedir(stream) }
        var entries: [(name: String, size: Int, used: Double)] = []
        while let record = readdir(stream) {
            // SAFETY: d_name is a NUL-terminated array inside the dirent readdir returned,
            // valid until the next readdir call; String(cString:) copies it before then.
            let name = withUnsafePointer(to: &record.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: Int(NAME_MAX) + 1) { String(cString: $0) }
            }
            let isEntry = isEntryName(name)
            guard isEntry || name.hasPrefix(".tmp-") else { continue }
            var status = stat()
            // Gone already (another process evicted it, or a writer renamed it into place), or
            // not a regular file: not an entry.
            guard fstatat(folder, name, &status, AT_SYMLINK_NOFOLLOW) == 0, status.st_mode & S_IFMT == S_IFREG else {
                continue
            }
            let used = Double(status.st_mtim.tv_sec) + Double(status.st_mtim.tv_nsec) / 1e9
            if isEntry {
                entries.append((name, Int(status.st_size), used))
            } else if current - used > staleTemporaryAge {
                unlinkat(folder, name, 0)
            }
        }
        entries.sort { ($0.used, $0.name) < ($1.used, $1.name) }
        var index = EntryIndex()
        for entry in entries { index.use(entry.name, size: entry.size, at: entry.used) }
        return index
    }

    private func pathInFolder(_ name: String) -> String { directory.appendingPathComponent(name).path }

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

    /// Creates `path` and its missing parents with mode 0700, checks it, and opens it. Refused:
    /// a symbolic link, not a folder, another user's, or writable by group or others (any of
    /// them could plant, replace or read entries). A folder readable by others is tightened to
    /// 0700. The checks are made on the opened descriptor, so they hold for the folder used.
    static func openFolder(_ path: String) throws(Error) -> Int32 {
        var prefix = ""
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, 0o700) != 0 && errno != EEXIST { throw Error("create", path: prefix) }
        }
        var named = stat()
        guard lstat(path, &named) == 0 else { throw Error("inspect", path: path) }
        if named.st_mode & S_IFMT == S_IFLNK {
            throw Error("use", path: path, code: ELOOP, message: "it is a symbolic link; the cache folder must be a real folder")
        }
        guard named.st_mode & S_IFMT == S_IFDIR else { throw Error("use", path: path, code: ENOTDIR) }
        // O_NOFOLLOW | O_DIRECTORY: replaced by a link or a file since lstat, it fails here.
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { throw Error("open", path: path) }
        if let refusal = check(descriptor, path) {
            close(descriptor)
            throw refusal
        }
        return descriptor
    }

    /// Why the opened folder `descriptor` may not be the cache's, or nil once it is at 0700.
    private static func check(_ descriptor: Int32, _ path: String) -> Error? {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return Error("inspect", path: path) }
        guard status.st_uid == geteuid() else {
            return Error("use", path: path, code: EPERM, message: "it belongs to user \(status.st_uid), not to this user (\(geteuid()))")
        }
        guard status.st_mode & 0o022 == 0 else {
            let writers = status.st_mode & 0o020 != 0 ? "its group" : "others"
            return Error("use", path: path, code: EPERM, message: "it is writable by \(writers) (mode 0\(String(status.st_mode & 0o7777, radix: 8)))")
        }
        guard status.st_mode & 0o777 == 0o700 || fchmod(descriptor, 0o700) == 0 else { return Error("restrict", path: path) }
        return nil
    }
}

/// The entries a cache knows of, least recently used first: a dictionary from name to a slot
/// of a doubly linked list kept in an array, so using, adding and removing an entry are O(1)
/// and the oldest is at hand.
struct EntryIndex {
    struct Slot {
        var name: String
        var size: Int
        var used: Double
        var older: Int
        var newer: Int
    }

    private var slots: [Slot] = []
    private var free: [Int] = []
    private var byName: [String: Int] = [:]
    private var oldestSlot = -1
    private var newestSlot = -1
    /// The entries' total size in bytes.
    private(set) var totalSize = 0

    var count: Int { byName.count }

    /// The least recently used entry.
    var oldest: (name: String, size: Int, used: Double)? {
        oldestSlot < 0 ? nil : (slots[oldestSlot].name, slots[oldestSlot].size, slots[oldestSlot].used)
    }

    /// Oldest first.
    var names: [String] {
        var names: [String] = []
        var slot = oldestSlot
        while slot >= 0 {
            names.append(slots[slot].name)
            slot = slots[slot].newer
        }
        return names
    }

    /// Records that `name`, of `size` bytes, was used (or stored) at `used`: it becomes the
    /// most recently used.
    mutating func use(_ name: String, size: Int, at used: Double) {
        remove(name)
        let slot: Int
        let fresh = Slot(name: name, size: size, used: used, older: newestSlot, newer: -1)
        if let reused = free.popLast() {
            slot = reused
            slots[slot] = fresh
        } else {
            slot = slots.count
            slots.append(fresh)
        }
        if newestSlot >= 0 { slots[newestSlot].newer = slot } else { oldestSlot = slot }
        newestSlot = slot
        byName[name] = slot
        totalSize += size
    }

    mutating func remove(_ name: String) {
        guard let slot = byName.removeValue(forKey: name) else { return }
        let removed = slots[slot]
        if removed.older >= 0 { slots[removed.older].newer = removed.newer } else { oldestSlot = removed.newer }
        if removed.newer >= 0 { slots[removed.newer].older = removed.older } else { newestSlot = removed.older }
        totalSize -= removed.size
        slots[slot].name = ""
        free.append(slot)
    }
}
