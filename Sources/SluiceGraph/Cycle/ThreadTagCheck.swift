import Glibc
import Synchronization

/// Debug-build checks of the thread tags (Node.swift), as swift-nio's
/// `preconditionInEventLoop` checks its: an `[audio-thread]` section (the cycle's `process`,
/// a playhead's `render`) is entered by one thread at a time, and a `[control-thread]`
/// function is never called from inside one. Release builds compile every check away; in
/// debug builds a check is two atomic operations, no allocation, no lock.
public final class ThreadTagCheck: @unchecked Sendable {
    /// The thread inside the section (`pthread_self`), or 0.
    private let occupant = Atomic<UInt>(0)
    private let name: StaticString

    /// - Parameter name: what the section is, for the failure message.
    public init(_ name: StaticString) {
        self.name = name
    }

    /// [audio-thread] Enters the section; traps in debug builds when another thread is in it.
    @inline(__always)
    public func enter() {
        #if DEBUG
        let entered = occupant.compareExchange(expected: 0, desired: UInt(pthread_self()), ordering: .acquiring).exchanged
        precondition(entered, "two threads at once in an [audio-thread] section")
        #endif
    }

    /// [audio-thread] Leaves the section.
    @inline(__always)
    public func exit() {
        #if DEBUG
        occupant.store(0, ordering: .releasing)
        #endif
    }

    /// [control-thread] Traps in debug builds when the calling thread is inside the section:
    /// a control function (allocating, blocking) called from the real-time path.
    @inline(__always)
    public func assertNotInside() {
        #if DEBUG
        precondition(occupant.load(ordering: .acquiring) != UInt(pthread_self()),
                     "a [control-thread] function was called on the audio thread")
        #endif
    }

    /// Whether the calling thread is inside the section (always false in release builds).
    public var isInside: Bool {
        #if DEBUG
        return occupant.load(ordering: .acquiring) == UInt(pthread_self())
        #else
        return false
        #endif
    }
}
