import Foundation
import Glibc

/// What each plugin file on the search path provides, remembered between runs so a command
/// opens only the plugins its graph needs (opening a library runs its code and costs start-up
/// time). A record is trusted only while its file is unchanged: same size, status-change time
/// (ctime) and inode; any change and the file is opened again. ctime, not the modification
/// time: a file rewritten in place with its size kept and its mtime set back (`touch -d`)
/// still shows a new ctime, which no user can set. Kept in
/// `$XDG_CACHE_HOME/sluice/plugin-index` (mode 0600, its folder 0700); an index that cannot
/// be read or written is simply not used — every plugin is then opened, as before.
///
/// The file is a few lines of text (`PluginIndex.Format`), not JSON: every graph command
/// reads it before it can open a JACK client, and JSONDecoder's first use (generic metadata
/// and protocol conformances looked up across every loaded library) cost 2–7 ms of
/// `sluice launch`'s start, against a tenth of a millisecond for the split below.
public final class PluginIndex: @unchecked Sendable {
    // SAFETY (@unchecked Sendable): `records` is behind `lock`.

    /// One file's record: how it looked, and what it provided or why it failed.
    public struct Record: Sendable, Hashable {
        public var size: Int64
        /// The status-change time (ctime), in nanoseconds.
        public var changed: Int64
        public var inode: UInt64
        /// The node type names it registers; empty when it failed.
        public var types: [String]
        /// Why it failed to load, when it did.
        public var error: String?
    }

    public let path: String
    private let lock = NSLock()
    private var records: [String: Record]
    private var changed = false

    /// The index at `path` (read now; a missing or unreadable one starts empty).
    public init(path: String) {
        self.path = path
        records = FileManager.default.contents(atPath: path).flatMap { Format.decode(Array($0)) } ?? [:]
    }

    /// The user's index: `$XDG_CACHE_HOME/sluice/plugin-index`, else `~/.cache/…`; nil
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
        return PluginIndex(path: folder + "/plugin-index")
    }

    /// The record for the file at `path` if it still describes the file as it is now.
    public func freshRecord(for path: String) -> Record? {
        guard let now = Self.fileState(path) else { return nil }
        return lock.withLock {
            guard let record = records[path], record.size == now.size, record.changed == now.changed, record.inode == now.inode else {
                return nil
            }
            return record
        }
    }

    /// Notes what the file at `path` provided (or why it failed), as it is now.
    public func remember(_ path: String, types: [String], error: String?) {
        guard let now = Self.fileState(path) else { return }
        let record = Record(size: now.size, changed: now.changed, inode: now.inode, types: types, error: error)
        lock.withLock {
            if records[path] != record {
                records[path] = record
                changed = true
            }
        }
    }

    /// Writes the index if anything changed: a new file beside it, renamed into place. Records
    /// of files that no longer exist are left out: every graph command reads the whole index
    /// before it opens a JACK client, and plugins built in folders since deleted (a build tree,
    /// a clone in /tmp) would otherwise make it longer, and each start slower, for good.
    public func save() {
        let data: Data? = lock.withLock {
            guard changed else { return nil }
            changed = false
            records = records.filter { Self.fileState($0.key) != nil }
            return Data(Format.encode(records))
        }
        guard let data else { return }
        let temporary = path + ".\(getpid()).tmp"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return }
        let written = data.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        close(descriptor)
        if written == data.count { rename(temporary, path) } else { unlink(temporary) }
    }

    private static func fileState(_ path: String) -> (size: Int64, changed: Int64, inode: UInt64)? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        let changed = Int64(status.st_ctim.tv_sec) * 1_000_000_000 + Int64(status.st_ctim.tv_nsec)
        return (Int64(status.st_size), changed, UInt64(status.st_ino))
    }
}

extension PluginIndex {
    /// The index file: a first line naming the format and its version, then one line per
    /// plugin file — its path, size, status-change time (ns), inode, the type names it
    /// registers (comma-separated) and why it failed (empty when it did not), separated by
    /// tabs. `%`, tab, newline, carriage return and comma inside a field are written `%25`,
    /// `%09`, `%0A`, `%0D`, `%2C`, so any path reads back. A file that does not start with the
    /// expected first line, or has a malformed line, reads as no index at all.
    enum Format {
        static let header = "sluice-plugin-index 3"

        static func encode(_ records: [String: Record]) -> [UInt8] {
            var text = header + "\n"
            for (path, record) in records.sorted(by: { $0.key < $1.key }) {
                let fields = [
                    escaped(path), String(record.size), String(record.changed), String(record.inode),
                    record.types.map(escaped).joined(separator: ","), record.error.map(escaped) ?? "",
                ]
                text += fields.joined(separator: "\t") + "\n"
            }
            return Array(text.utf8)
        }

        static func decode(_ bytes: [UInt8]) -> [String: Record]? {
            let lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true)
            guard let first = lines.first, String(decoding: first, as: UTF8.self) == header else { return nil }
            var records: [String: Record] = [:]
            for line in lines.dropFirst() {
                let fields = line.split(separator: UInt8(ascii: "\t"), omittingEmptySubsequences: false)
                guard fields.count == 6, let path = unescaped(fields[0]),
                    let size = Int64(String(decoding: fields[1], as: UTF8.self)),
                    let changed = Int64(String(decoding: fields[2], as: UTF8.self)),
                    let inode = UInt64(String(decoding: fields[3], as: UTF8.self))
                else { return nil }
                var types: [String] = []
                for name in fields[4].split(separator: UInt8(ascii: ","), omittingEmptySubsequences: true) {
                    guard let type = unescaped(name) else { return nil }
                    types.append(type)
                }
                var error: String?
                if !fields[5].isEmpty {
                    guard let message = unescaped(fields[5]) else { return nil }
                    error = message
                }
                records[path] = Record(size: size, changed: changed, inode: inode, types: types, error: error)
            }
            return records
        }

        private static let escapes: [UInt8: String] = [
            UInt8(ascii: "%"): "%25", UInt8(ascii: "\t"): "%09", UInt8(ascii: "\n"): "%0A",
            UInt8(ascii: "\r"): "%0D", UInt8(ascii: ","): "%2C",
        ]

        static func escaped(_ text: String) -> String {
            guard text.utf8.contains(where: { escapes[$0] != nil }) else { return text }
            var bytes: [UInt8] = []
            for byte in text.utf8 {
                if let escape = escapes[byte] { bytes += escape.utf8 } else { bytes.append(byte) }
            }
            return String(decoding: bytes, as: UTF8.self)
        }

        /// Nil for a `%` not followed by two hex digits, or bytes that are not UTF-8.
        static func unescaped(_ field: ArraySlice<UInt8>) -> String? {
            var bytes: [UInt8] = []
            bytes.reserveCapacity(field.count)
            var index = field.startIndex
            while index < field.endIndex {
                let byte = field[index]
                if byte == UInt8(ascii: "%") {
                    guard field.endIndex - index >= 3, let high = hexValue(field[index + 1]), let low = hexValue(field[index + 2]) else { return nil }
                    bytes.append(high << 4 | low)
                    index += 3
                } else {
                    bytes.append(byte)
                    index += 1
                }
            }
            return String(validating: bytes, as: UTF8.self)
        }

        private static func hexValue(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
            case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
            case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
            default: nil
            }
        }
    }
}
