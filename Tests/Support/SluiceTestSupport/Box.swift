/// Holds a value (including a `~Copyable` one, such as a ring half) so a thread's closure can
/// take it. The test makes sure only one thread touches the value.
public final class ThreadBox<Value: ~Copyable>: @unchecked Sendable {
    // SAFETY (@unchecked Sendable): each box is handed to exactly one thread by the test.
    public var value: Value
    public init(_ value: consuming Value) { self.value = value }
}
