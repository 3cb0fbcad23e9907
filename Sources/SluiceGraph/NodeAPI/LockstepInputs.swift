import SluiceAudio

/// The inputs of a node that reads them all in lockstep (the mixer, plugin processors): which
/// have ended, how many frames every one still streaming has, and when the node's own stream
/// ends — once, with its last input. An input that has ended is read as silence by the node.
///
/// Allocates in `init` (call it from `prepare`); nothing afterwards.
/// Threading: [source-thread] once made.
public final class LockstepInputs {
    public let count: Int
    // SAFETY: `count` flags, allocated in init and freed in deinit only.
    private let ended: UnsafeMutablePointer<Bool>
    private var endedCount = 0

    public init(count: Int) {
        self.count = count
        ended = .allocate(capacity: count)
        ended.initialize(repeating: false, count: count)
    }

    deinit {
        ended.deallocate()
    }

    /// Whether `port`'s stream has ended.
    @inline(__always)
    public func hasEnded(_ port: Int) -> Bool { ended[port] }

    /// The frames every streaming input has waiting, at most `limit`; 0 once all have ended.
    public func availableFrames(_ io: ProcessIO, limit: Int) -> Int {
        var frames = limit
        var streaming = 0
        for port in 0..<count where !ended[port] {
            frames = min(frames, io.available(input: port))
            streaming += 1
        }
        return streaming > 0 ? frames : 0
    }

    /// Consumes `frames` from every input still streaming.
    public func consume(_ frames: Int, _ io: inout ProcessIO) {
        for port in 0..<count where !ended[port] { io.consume(frames, input: port) }
    }

    /// Notes `marker` arriving on `port`. Returns whether the node passes it on: every marker
    /// but an end of stream, and the end of stream of its last input, once.
    public func passes(_ marker: Marker, on port: Int) -> Bool {
        guard port < count else { return false }
        guard case .endOfStream = marker.event else { return true }
        guard !ended[port] else { return false }
        ended[port] = true
        endedCount += 1
        return endedCount == count
    }

    /// Every input streams again.
    public func reset() {
        ended.update(repeating: false, count: count)
        endedCount = 0
    }
}
