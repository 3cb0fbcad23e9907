import Glibc

/// A counting semaphore a thread sleeps on until another posts it. `post` is a single futex
/// wake at most and takes no lock, so the real-time thread may call it (the JACK client
/// examples wake their disk thread the same way).
public final class WakeSignal: @unchecked Sendable {
    // SAFETY: allocated once and never moved; sem_* functions are thread-safe.
    private let semaphore: UnsafeMutablePointer<sem_t>

    public init() {
        semaphore = .allocate(capacity: 1)
        sem_init(semaphore, 0, 0)
    }

    deinit {
        sem_destroy(semaphore)
        semaphore.deallocate()
    }

    /// [any-thread] Wakes one sleeper (or the next one to sleep).
    @inline(__always)
    public func post() {
        sem_post(semaphore)
    }

    /// Sleeps until posted or until `seconds` pass. Returns true when posted.
    @discardableResult
    public func wait(timeout seconds: Double) -> Bool {
        var deadline = timespec()
        clock_gettime(CLOCK_REALTIME, &deadline)
        let nanoseconds = Int(deadline.tv_nsec) + Int(seconds * 1e9)
        deadline.tv_sec += nanoseconds / 1_000_000_000
        deadline.tv_nsec = nanoseconds % 1_000_000_000
        while sem_timedwait(semaphore, &deadline) != 0 {
            if errno == ETIMEDOUT { return false }
        }
        return true
    }

    /// Takes every pending post without sleeping.
    public func drain() {
        while sem_trywait(semaphore) == 0 {}
    }
}

/// Seconds on a monotonic clock, for timings.
public func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) * 1e-9
}
