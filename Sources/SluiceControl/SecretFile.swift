import Glibc

/// A shared secret read from a file of the user's own that no one else can read (as ssh
/// treats a private key): the OSC secret (`--osc-secret-file`).
public enum SecretFile {
    /// The file's first line, without its newline.
    ///
    /// - Throws: `ControlError` (`osc-secret`) when the file is missing, not a regular file,
    ///   owned by another user, readable or writable by group or others, or its first line is
    ///   empty; the message names the fix.
    public static func read(_ path: String) throws(ControlError) -> String {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else {
            throw ControlError(code: "osc-secret", message: "cannot read the secret file '\(path)': \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            throw ControlError(code: "osc-secret", message: "the secret file '\(path)' is not a regular file")
        }
        guard info.st_uid == geteuid(), info.st_mode & 0o077 == 0 else {
            throw ControlError(
                code: "osc-secret",
                message: "the secret file '\(path)' belongs to uid \(info.st_uid) with mode \(String(info.st_mode & 0o777, radix: 8)); "
                    + "it must be yours and private: chmod 600 '\(path)'")
        }
        var bytes = [UInt8](repeating: 0, count: 4_096)
        let count = bytes.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
        let line = bytes.prefix(max(0, count)).prefix { $0 != UInt8(ascii: "\n") && $0 != UInt8(ascii: "\r") }
        guard !line.isEmpty, !line.contains(0) else {
            throw ControlError(code: "osc-secret", message: "the secret file '\(path)' has no secret on its first line")
        }
        return String(decoding: line, as: UTF8.self)
    }
}
