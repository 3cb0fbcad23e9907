import CAllocationCounter
import Glibc

/// Counts heap allocations a closure makes on the calling thread.
public enum AllocationCounter {
    /// False under sanitizers, whose runtime supplies malloc.
    public static var isActive: Bool { sluice_allocation_counter_is_active() }

    /// Whether allocation tests run: always, unless a sanitizer runtime has taken malloc over.
    /// Without a sanitizer a broken counter still runs the tests, and they fail.
    public static var testsEnabled: Bool { isActive || !sluice_sanitizer_runtime_present() }

    /// Starts counting this thread's allocations, for spans that a closure cannot wrap.
    public static func begin() { sluice_allocation_counter_begin() }

    /// Stops counting and returns how many allocations this thread made since `begin()`.
    public static func end() -> UInt64 { sluice_allocation_counter_end() }

    /// Starts counting the allocations another thread makes (JACK's process thread).
    public static func watch(_ thread: pthread_t) { sluice_allocation_counter_watch(thread) }

    /// Allocations the watched thread has made since `watch`.
    public static var watchedCount: UInt64 { sluice_allocation_counter_watched() }

    /// Stops watching; returns the watched thread's count.
    @discardableResult
    public static func unwatch() -> UInt64 { sluice_allocation_counter_unwatch() }

    /// Runs `body` and returns how many allocations it made on this thread.
    public static func count(_ body: () throws -> Void) rethrows -> UInt64 {
        sluice_allocation_counter_begin()
        defer { _ = sluice_allocation_counter_end() }
        try body()
        return sluice_allocation_counter_end()
    }
}
