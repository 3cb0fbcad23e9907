import CAllocationCounter

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

    /// Runs `body` and returns how many allocations it made on this thread.
    public static func count(_ body: () throws -> Void) rethrows -> UInt64 {
        sluice_allocation_counter_begin()
        defer { _ = sluice_allocation_counter_end() }
        try body()
        return sluice_allocation_counter_end()
    }
}
