import Glibc

/// Where a control socket may be made, and what may be removed there: the checks that keep
/// another local user from taking a socket, or using `sluice serve` to delete a file.
///
/// - The folder holding the socket must be a directory owned by this user (or root) that no
///   one else may write to, or a sticky root-owned one such as /tmp, where no one else may
///   remove or rename this user's files. A folder another user owns, or may write to, is
///   refused with the fix, never fallen back from.
/// - What is at the socket's path is removed only when it is a socket this user owns that
///   nothing answers on (a stale one); anything else is refused.
/// - Names that become paths (a graph's `name:`) are letters, digits, '.', '-' and '_', not
///   starting with '.'.
enum SocketPlace {
    /// Throws unless `folder` may hold this user's control socket.
    static func checkFolder(_ folder: String) throws(ControlError) {
        let user = geteuid()
        var link = stat()
        guard lstat(folder, &link) == 0 else {
            throw ControlError(code: "socket-path", message: "cannot use the folder '\(folder)' for the control socket: \(String(cString: strerror(errno)))")
        }
        if (link.st_mode & S_IFMT) == S_IFLNK, link.st_uid != user, link.st_uid != 0 {
            throw ControlError(
                code: "socket-folder", message: "the control socket's folder '\(folder)' is a link owned by uid \(link.st_uid), "
                    + "not by you; remove it, or give --control a path in a folder of your own")
        }
        var info = stat()
        guard stat(folder, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else {
            throw ControlError(code: "socket-folder", message: "the control socket's folder '\(folder)' is not a folder")
        }
        let othersWrite = info.st_mode & (S_IWGRP | S_IWOTH) != 0
        let sticky = info.st_mode & S_ISVTX != 0
        let trustedOwner = info.st_uid == user || info.st_uid == 0
        guard trustedOwner, !othersWrite || (sticky && info.st_uid == 0) else {
            let mode = String(info.st_mode & 0o7777, radix: 8)
            throw ControlError(
                code: "socket-folder",
                message: "the control socket's folder '\(folder)' belongs to uid \(info.st_uid) with mode \(mode): another user could "
                    + "replace the socket and read what is sent to it. Remove the folder (it is made again, 0700, yours), set "
                    + "XDG_RUNTIME_DIR to a folder only you can write, or give --control a path in one")
        }
    }

    /// Removes what is at `path` if it is a stale socket of this user's; throws if something
    /// else is there. Nothing at all is fine.
    static func removeStaleSocket(_ path: String) throws(ControlError) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        guard (info.st_mode & S_IFMT) == S_IFSOCK else {
            throw ControlError(
                code: "socket-path", message: "'\(path)' exists and is not a socket; refusing to replace it (give --control another path)")
        }
        guard info.st_uid == geteuid() else {
            throw ControlError(
                code: "socket-path", message: "the socket '\(path)' belongs to uid \(info.st_uid), not to you; refusing to replace it")
        }
        unlink(path)
    }

    /// The device and inode at `path` (not following a link), to remove at the end exactly
    /// the socket that was made.
    static func identity(of path: String) -> (device: UInt, inode: UInt)? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return (UInt(info.st_dev), UInt(info.st_ino))
    }

    /// Throws unless `name` may become a file name: 1 to 100 letters, digits, '.', '-' and
    /// '_', not starting with '.'.
    static func checkName(_ name: String) throws(ControlError) {
        let allowed = name.utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5a).contains(byte) || (0x61...0x7a).contains(byte)
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
        }
        guard allowed, (1...100).contains(name.utf8.count), !name.hasPrefix(".") else {
            throw ControlError(
                code: "socket-name",
                message: "the graph's name '\(name)' cannot name its control socket: use letters, digits, '.', '-' and '_' "
                    + "(not starting with '.'), or give --control a path")
        }
    }

    /// The uid of the process at the other end of a connected Unix socket.
    static func peerUID(_ descriptor: Int32) -> uid_t? {
        // `struct ucred { pid_t pid; uid_t uid; gid_t gid; }`, which Glibc's module map leaves
        // out (it needs _GNU_SOURCE): the same three 32-bit fields.
        var credentials: (pid: pid_t, uid: uid_t, gid: gid_t) = (0, 0, 0)
        var length = socklen_t(MemoryLayout.size(ofValue: credentials))
        guard getsockopt(descriptor, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0,
            length == socklen_t(MemoryLayout.size(ofValue: credentials))
        else { return nil }
        return credentials.uid
    }
}
