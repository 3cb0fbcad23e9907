/// Holds a value (including a `~Copyable` one, such as a ring half) so a thread's closure can
/// take it. The test makes sure only one thread touches the value.
public final class ThreadBox<Value: ~Copyable>: @unchecked Sendable {
    // SAFETY (@unchecked Sendable): each box is handed to exactly one thread by the test.
    public var value: Value
    public init(_ value: consuming Value) { self.value = value }
}

import Synchronization

/// A flag one thread raises and another reads: tests use it to show that a blocking call
/// returned only after the thing that releases it happened, without timing anything.
public final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    public init() {}
    public func raise() { value.store(true, ordering: .releasing) }
    public var isRaised: Bool { value.load(ordering: .acquiring) }
}
