import Foundation
import Synchronization

/// What makes `sluice serve` read its graph file again besides `ctl reload`: SIGHUP, as
/// daemons reread their configuration, and with `--watch` a change to the file.
///
/// The file is looked at every `pollInterval` (its inode, size and modification time), not
/// watched with inotify: editors save by writing a new file and renaming it over the old one,
/// which a watch on the old inode misses; a look by path sees both. A change is reloaded once
/// two looks agree, so a file caught half written is not read.
final class ReloadTriggers {
    static let pollInterval = 0.25

    private let signalSource: any DispatchSourceSignal
    private let timer: (any DispatchSourceTimer)?

    /// [control-thread] Calls `reload` (on a queue of its own, one at a time) on each SIGHUP,
    /// and when `watching` names a file, on each settled change to it, until `stop()`.
    init(watching path: String?, reload: @escaping @Sendable (_ why: String) -> Void) {
        let queue = DispatchQueue(label: "sluice.reload")
        signal(SIGHUP, SIG_IGN)
        signalSource = DispatchSource.makeSignalSource(signal: SIGHUP, queue: queue)
        signalSource.setEventHandler { reload("SIGHUP") }
        signalSource.resume()
        guard let path else {
            timer = nil
            return
        }
        let timer = DispatchSource.makeTimerSource(queue: queue)
        let looks = Looks(Self.stamp(of: path))
        timer.schedule(deadline: .now() + Self.pollInterval, repeating: Self.pollInterval)
        timer.setEventHandler {
            if looks.changed(to: Self.stamp(of: path)) { reload("\(path) changed") }
        }
        timer.resume()
        self.timer = timer
    }

    /// [control-thread] No more reloads: SIGHUP is the default again (it ends the process).
    func stop() {
        signalSource.cancel()
        timer?.cancel()
        signal(SIGHUP, SIG_DFL)
    }

    /// What identifies a version of the file; nil while it does not exist (mid-rename).
    struct Stamp: Equatable {
        var inode: UInt
        var size: Int
        var modified: timespec

        static func == (a: Stamp, b: Stamp) -> Bool {
            a.inode == b.inode && a.size == b.size && a.modified.tv_sec == b.modified.tv_sec && a.modified.tv_nsec == b.modified.tv_nsec
        }
    }

    static func stamp(of path: String) -> Stamp? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        return Stamp(inode: UInt(status.st_ino), size: Int(status.st_size), modified: status.st_mtim)
    }

    /// The stamps seen, on the reload queue only.
    private final class Looks: @unchecked Sendable {
        // SAFETY (@unchecked Sendable): touched only by the timer's handler, on one serial queue.
        private var settled: Stamp?
        private var last: Stamp?

        init(_ first: Stamp?) {
            settled = first
            last = first
        }

        /// Whether the file changed from the version last reloaded and has stayed so since
        /// the previous look.
        func changed(to now: Stamp?) -> Bool {
            defer { last = now }
            guard let now, now == last, now != settled else { return false }
            settled = now
            return true
        }
    }
}
