import Foundation
import Glibc

/// What each plugin file on the search path provides, remembered between runs so a command
/// opens only the plugins its graph needs (opening a library runs its code and costs start-up
/// time). A record is trusted only while its file is unchanged: same size, modification time
/// and inode; any change and the file is opened again. Kept in
/// `$XDG_CACHE_HOME/sluice/plugin-index.json` (mode 0600, its folder 0700); an index that
/// cannot be read or written is simply not used — every plugin is then opened, as before.
public final class PluginIndex: @unchecked Sendable {
    // SAFETY (@unchecked Sendable): `records` is behind `lock`.

    /// One file's record: how it looked, and what it provided or why it failed.
    public struct Record: Codable, Sendable, Hashable {
        public var size: Int64
        public var modified: Int64
        public var inode: UInt64
        /// The node type names it registers; empty when it failed.
        public var types: [String]
        /// Why it failed to load, when it did.
        public var error: String?
    }

    private struct Stored: Codable {
        var version: Int
        var plugins: [String: Record]
    }

    static let version = 1
    public let path: String
    private let lock = NSLock()
    private var records: [String: Record]
    private var changed = false

    /// The index at `path` (read now; a missing or unreadable one starts empty).
    public init(path: String) {
        self.path = path
        if let data = FileManager.default.contents(atPath: path),
            let stored = try? JSONDecoder().decode(Stored.self, from: data), stored.version == Self.version
        {
            records = stored.plugins
        } else {
            records = [:]
        }
    }

    /// The user's index: `$XDG_CACHE_HOME/sluice/plugin-index.json`, else `~/.cache/…`; nil
    /// when neither is set or the folder is not the user's own (then nothing is remembered).
    public static func standard() -> PluginIndex? {
        let environment = ProcessInfo.processInfo.environment
        let base = environment["XDG_CACHE_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? environment["HOME"].map { $0 + "/.cache" }
        guard let base else { return nil }
        let folder = base + "/sluice"
        mkdir(base, 0o700)
        mkdir(folder, 0o700)
        var status = stat()
        guard lstat(folder, &status) == 0, status.st_mode & S_IFMT == S_IFDIR, status.st_uid == geteuid(),
            status.st_mode & (S_IWGRP | S_IWOTH) == 0
        else { return nil }
        return PluginIndex(path: folder + "/plugin-index.json")
    }

    /// The record for the file at `path` if it still describes the file as it is now.
    public func freshRecord(for path: String) -> Record? {
        guard let now = Self.fileState(path) else { return nil }
        return lock.withLock {
            guard let record = records[path], record.size == now.size, record.modified == now.modified, record.inode == now.inode else {
                return nil
            }
            return record
        }
    }

    /// Notes what the file at `path` provided (or why it failed), as it is now.
    public func remember(_ path: String, types: [String], error: String?) {
        guard let now = Self.fileState(path) else { return }
        let record = Record(size: now.size, modified: now.modified, inode: now.inode, types: types, error: error)
        lock.withLock {
            if records[path] != record {
                records[path] = record
                changed = true
            }
        }
    }

    /// Writes the index if anything changed: a new file beside it, renamed into place.
    public func save() {
        let data: Data? = lock.withLock {
            guard changed else { return nil }
            changed = false
            return try? JSONEncoder().encode(Stored(version: Self.version, plugins: records))
        }
        guard let data else { return }
        let temporary = path + ".\(getpid()).tmp"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return }
        let written = data.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        close(descriptor)
        if written == data.count { rename(temporary, path) } else { unlink(temporary) }
    }

    private static func fileState(_ path: String) -> (size: Int64, modified: Int64, inode: UInt64)? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        let modified = Int64(status.st_mtim.tv_sec) * 1_000_000_000 + Int64(status.st_mtim.tv_nsec)
        return (Int64(status.st_size), modified, UInt64(status.st_ino))
    }
}
