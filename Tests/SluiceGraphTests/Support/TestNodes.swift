import Foundation
import SluiceAudio
import SluiceGraph
import Synchronization

/// A source of known samples: frame n of channel c is `sample(n, c)`. Paced like a provider
/// when `pace` > 0: by graph time t it has produced at most floor(pace × rate × t) frames.
final class RampSource: SourceNode, @unchecked Sendable {
    let rate: Int
    let channels: Int
    let totalFrames: Int
    let pace: Double
    let stall: ClosedRange<Double>?
    private(set) var produced = 0
    let cancelled = Atomic<Bool>(false)

    /// Each sample its frame's number from 1 (exact below 2^24), instead of `sample`: what a
    /// reader heard says which frames it got, in which order.
    let counting: Bool

    init(rate: Int = 48000, channels: Int = 1, frames: Int, pace: Double = 0, stall: ClosedRange<Double>? = nil, counting: Bool = false) {
        self.counting = counting
        self.rate = rate
        self.channels = channels
        totalFrames = frames
        self.pace = pace
        self.stall = stall
    }

    static func sample(_ frame: Int, _ channel: Int) -> Float {
        Float((frame * 7 + channel * 3) % 2000) / 2000 - 0.5
    }

    var expectedDuration: Double? { Double(totalFrames) / Double(rate) }

    func outputFormats(for inputs: [StreamFormat], context: FormatContext) throws(FormatMismatch) -> [StreamFormat] {
        [.frames(rate: rate, channels: channels)]
    }

    func produce(_ io: inout ProcessIO, at time: Double) -> SourceStatus {
        if cancelled.load(ordering: .acquiring) || produced == totalFrames { return .finished }
        if let stall, stall.lowerBound <= time && time < stall.upperBound { return .waiting(until: stall.upperBound) }
        var allowed = totalFrames - produced
        if pace > 0 {
            let due = Int((pace * Double(rate) * time).rounded(.down))
            allowed = min(allowed, due - produced)
            if allowed <= 0 { return .waiting(until: Double(produced + 1) / (pace * Double(rate))) }
        }
        let room = min(io.room(output: 0), allowed)
        let out = io.frames(output: 0)
        for frame in 0..<room {
            for channel in 0..<channels {
                out[frame * channels + channel] = counting ? Float(produced + frame + 1) : Self.sample(produced + frame, channel)
            }
        }
        io.produce(room, output: 0)
        produced += room
        return produced == totalFrames ? .finished : .more
    }

    func cancel() { cancelled.store(true, ordering: .releasing) }

    static let type = NodeType(NodeDescriptor(
        typeName: "ramp", kind: .source, summary: "Known samples for tests.",
        outputs: [PortDescriptor("out", .frames)],
        parameters: [
            ParameterDescriptor("frames", .integer(0...100_000_000), default: .integer(4800), summary: "Frames in all."),
            ParameterDescriptor("rate", .rate(8000...192_000), default: .integer(48000), unit: "Hz", summary: "Rate."),
            ParameterDescriptor("channels", .integer(1...8), default: .integer(1), summary: "Channels."),
            ParameterDescriptor("pace", .number(0...10_000), default: .number(0), summary: "× real time; 0 unpaced."),
        ])) { parameters in
        RampSource(
            rate: parameters.rate("rate") ?? 48000, channels: parameters.integer("channels"),
            frames: parameters.integer("frames"), pace: parameters.double("pace"))
    }
}

/// A text-driven source for tests: each piece of text owes 100 frames of the ramp
/// (`RampSource.sample`) per UTF-8 byte, produced as room allows. It counts the calls of its
/// `produce`, so a test sees how often a run looks at it.
final class TextRampSource: TextDrivenSource, @unchecked Sendable {
    let rate = 48000
    static let framesPerByte = 100
    // Locked with NSLock (a pthread mutex), not Synchronization's Mutex: the test thread and
    // the source thread contend for it, and a contended Mutex on Linux is taken and given back
    // by the kernel (priority-inheritance futexes, in the uninstrumented standard library),
    // where ThreadSanitizer cannot see it and reports the state it guards as a race.
    private let owed = TSanVisibleLock<(frames: Int, finished: Bool)>((0, false))
    private let arrival = TSanVisibleLock<(@Sendable () -> Void)?>(nil)
    /// The source thread's alone.
    private var produced = 0
    let producedFrames = Atomic<Int>(0)
    let produceCalls = Atomic<Int>(0)

    func outputFormats(for inputs: [StreamFormat], context: FormatContext) throws(FormatMismatch) -> [StreamFormat] {
        [.frames(rate: rate, channels: 1)]
    }

    func produce(_ io: inout ProcessIO, at time: Double) -> SourceStatus {
        produceCalls.add(1, ordering: .relaxed)
        let (frames, finished) = owed.withLock { ($0.frames, $0.finished) }
        guard frames > 0 else { return finished ? .finished : .more }
        let room = min(io.room(output: 0), frames)
        let out = io.frames(output: 0)
        for frame in 0..<room { out[frame] = RampSource.sample(produced + frame, 0) }
        io.produce(room, output: 0)
        produced += room
        owed.withLock { $0.frames -= room }
        producedFrames.store(produced, ordering: .releasing)
        return .more
    }

    func receive(text: String) {
        owed.withLock { $0.frames += Self.framesPerByte * text.utf8.count }
        arrival.withLock { $0 }?()
    }

    func finishText() {
        owed.withLock { $0.finished = true }
        arrival.withLock { $0 }?()
    }

    var hasSpokenAllText: Bool { owed.withLock { $0.frames == 0 } }

    func onTextArrival(_ wake: @escaping @Sendable () -> Void) { arrival.withLock { $0 = wake } }

    func cancel() { finishText() }
}

/// A sink that keeps what it is given.
final class CollectingSink: SinkNode, @unchecked Sendable {
    let rate: Int?
    private(set) var samples: [Float] = []
    private(set) var finished = false
    private(set) var clock: ClockThread?
    let pace: ClockThread.Pace

    init(rate: Int? = nil, pace: ClockThread.Pace = .free) {
        self.rate = rate
        self.pace = pace
    }

    var decidedRate: Int? { rate }

    func outputFormats(for inputs: [StreamFormat], context: FormatContext) throws(FormatMismatch) -> [StreamFormat] {
        guard case .frames(let inputRate, _) = inputs[0] else { throw FormatMismatch(input: 0, required: .medium(.frames)) }
        if let rate, rate != inputRate { throw FormatMismatch(input: 0, required: .sampleRate(rate)) }
        return []
    }

    func prepare(_ context: PrepareContext) throws {
        samples.reserveCapacity(1 << 20)
    }

    func start(_ playhead: Playhead) throws {
        clock = ClockThread(playhead: playhead, periodFrames: 256, pace: pace) { [self] in try write($0) }
        clock?.start()
    }

    func stop() { try? clock?.stop() }

    func write(_ samples: UnsafeBufferPointer<Float>) throws { self.samples += samples }

    func finish() throws { finished = true }

    static let type = NodeType(NodeDescriptor(
        typeName: "collect", kind: .sink, summary: "Keeps what it is given, for tests.",
        inputs: [PortDescriptor("in", .frames)],
        parameters: [ParameterDescriptor("rate", .rate(8000...192_000), default: .auto, unit: "Hz", summary: "Rate.")])) { parameters in
        CollectingSink(rate: parameters.rate("rate"))
    }
}

/// Passes frames through unchanged, one block at a time.
final class PassThrough: ProcessorNode {
    func outputFormats(for inputs: [StreamFormat], context: FormatContext) throws(FormatMismatch) -> [StreamFormat] {
        guard case .frames = inputs[0] else { throw FormatMismatch(input: 0, required: .medium(.frames)) }
        return [inputs[0]]
    }

    func process(_ io: inout ProcessIO) {
        let input = io.frames(input: 0)
        let output = io.frames(output: 0)
        let count = min(input.count, output.count)
        guard count > 0 else { return }
        output.baseAddress!.update(from: input.baseAddress!, count: count)
        let channels = io.available(input: 0) == 0 ? 1 : input.count / io.available(input: 0)
        io.consume(count / channels, input: 0)
        io.produce(count / channels, output: 0)
    }

    static let type = NodeType(NodeDescriptor(
        typeName: "pass", kind: .processor, summary: "Copies frames.",
        inputs: [PortDescriptor("in", .frames)], outputs: [PortDescriptor("out", .frames)])) { _ in PassThrough() }
}

func testRegistry() -> NodeRegistry {
    var registry = NodeRegistry()
    try! registry.register(RampSource.type)
    try! registry.register(CollectingSink.type)
    try! registry.register(PassThrough.type)
    return registry
}

/// A description of a chain of nodes, declared in code.
func chain(_ nodes: [(String, String, [String: String])], playback: PlaybackSettings = PlaybackSettings()) -> GraphDescription {
    var description = GraphDescription(name: "test", playback: playback)
    for (name, type, parameters) in nodes {
        description.nodes.append(NodeDeclaration(
            name: name, type: type,
            parameters: parameters.sorted { $0.key < $1.key }.map { ParameterDeclaration(name: $0.key, value: .scalar($0.value, quoted: false)) }))
    }
    for (from, to) in zip(nodes, nodes.dropFirst()) {
        description.links.append(LinkDeclaration(from: PortReference(node: from.0), to: PortReference(node: to.0)))
    }
    return description
}

/// State behind a pthread mutex (NSLock), whose every lock and unlock ThreadSanitizer sees.
final class TSanVisibleLock<State>: @unchecked Sendable {
    // SAFETY (@unchecked Sendable): `state` is read and written only while `lock` is held.
    private let lock = NSLock()
    private var state: State

    init(_ state: State) { self.state = state }

    func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }
}
