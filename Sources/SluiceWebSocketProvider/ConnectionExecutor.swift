import NIOCore
import NIOPosix

/// Where every WebSocket provider's async work runs: one event loop thread of its own, which
/// also carries the sockets' I/O, set as the tasks' executor preference (their child tasks
/// and WSCore's session actor run there too).
///
/// Not the global concurrent pool: its threads are as many as the cores, and a host may
/// block them (a test waiting in a loop, a synchronous API called from async code), which
/// would leave the handshake, the audio and the timers unserved behind it.
final class ConnectionExecutor: TaskExecutor, @unchecked Sendable {
    // SAFETY (@unchecked Sendable): `loop` is an event loop, which is thread-safe; nothing
    // else is stored.
    static let shared = ConnectionExecutor()

    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let loop: any EventLoop

    private init() {
        loop = group.next()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
