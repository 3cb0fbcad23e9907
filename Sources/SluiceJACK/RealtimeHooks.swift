/// Functions a JACK process callback calls when it starts and before it returns: how a
/// RealtimeSanitizer run marks the callback as real-time (`__rtsan_realtime_enter` and
/// `__rtsan_realtime_exit`), so any allocation, lock or blocking call inside it is reported.
/// Production runs install none.
public struct JackRealtimeHooks: Sendable {
    public var enter: @convention(c) () -> Void
    public var exit: @convention(c) () -> Void

    public init(enter: @escaping @convention(c) () -> Void, exit: @escaping @convention(c) () -> Void) {
        self.enter = enter
        self.exit = exit
    }

    /// [control-thread] The hooks sinks made from now on install. Set before a graph is prepared;
    /// each engine copies them when it is made, so the callback never reads this global.
    nonisolated(unsafe) public static var installed: JackRealtimeHooks?
}
