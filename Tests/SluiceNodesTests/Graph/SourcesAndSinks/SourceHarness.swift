import Foundation
import SluiceAudio
import SluiceGraph
import SluiceNodes
import SluiceTestSupport
import Testing

/// Creates a node of `type` as the graph compiler would: the descriptor's defaults, then
/// `values`.
func makeIONode(
    _ type: NodeType, _ values: [String: ParameterValue] = [:], baseDirectory: String? = nil
) throws -> any Node {
    var parameters = NodeParameters(baseDirectory: baseDirectory)
    for parameter in type.descriptor.parameters {
        if let value = parameter.defaultValue { parameters[parameter.name] = value }
    }
    for (name, value) in values {
        precondition(type.descriptor.parameter(named: name) != nil, "\(type.descriptor.typeName) has no parameter '\(name)'")
        parameters[name] = value
    }
    return try type.make(parameters)
}

/// Plays the runtime's part for one source: decides its format, prepares it, and calls
/// `produce` with as much room as a test asks for, collecting what it writes and emits.
final class SourceHarness {
    let node: any SourceNode
    let format: StreamFormat
    let ports: NodePorts
    /// Everything produced so far, as raw bytes (Float32 frames on frame ports).
    private(set) var bytes: [UInt8] = []
    private(set) var markers: [Marker] = []
    /// The units each call produced, in order.
    private(set) var calls: [Int] = []
    private var buffer: UnsafeMutableRawPointer
    private var capacityUnits: Int

    init(_ node: any Node, downstreamRate: Int? = nil) throws {
        self.node = try #require(node as? any SourceNode, "not a source")
        let formats = try self.node.outputFormats(
            for: [], context: FormatContext(downstreamRate: downstreamRate, blockFrames: 256, isLive: false))
        try #require(formats.count == 1)
        format = formats[0]
        try self.node.prepare(PrepareContext(inputFormats: [], outputFormats: formats, maximumUnits: 4096, blockFrames: 256))
        ports = NodePorts(inputs: [], outputs: formats)
        capacityUnits = 4096
        buffer = .allocate(byteCount: capacityUnits * format.bytesPerUnit, alignment: 16)
    }

    convenience init(_ type: NodeType, _ values: [String: ParameterValue] = [:], downstreamRate: Int? = nil) throws {
        try self.init(makeIONode(type, values), downstreamRate: downstreamRate)
    }

    deinit {
        buffer.deallocate()
    }

    /// The produced frames as interleaved samples (frame ports).
    var samples: [Float] {
        // SAFETY: frame ports carry Float32; the bytes were copied from such a buffer.
        bytes.withUnsafeBytes { raw in
            (0..<(raw.count / 4)).map { raw.loadUnaligned(fromByteOffset: $0 * 4, as: Float.self) }
        }
    }

    var frames: Int { bytes.count / format.bytesPerUnit }

    /// One `produce` call with `room` units of room at graph time `time`.
    @discardableResult
    func step(room: Int, at time: Double = 0) -> SourceStatus {
        precondition(room > 0, "the runtime never offers zero room")
        if room > capacityUnits {
            buffer.deallocate()
            capacityUnits = room
            buffer = .allocate(byteCount: capacityUnits * format.bytesPerUnit, alignment: 16)
        }
        // SAFETY: `buffer` holds `capacityUnits` ≥ `room` units and outlives the call.
        ports.setOutput(0, base: buffer, units: room)
        var io = ProcessIO(ports)
        let status = node.produce(&io, at: time)
        let produced = ports.produced(output: 0)
        // SAFETY: the node wrote `produced` ≤ `room` units at the start of `buffer`.
        bytes += UnsafeRawBufferPointer(start: buffer, count: produced * format.bytesPerUnit)
        calls.append(produced)
        let count = ports.markerCount(output: 0)
        #expect(count <= NodePorts.markerCapacity)
        for index in 0..<count { markers.append(ports.marker(index, output: 0)) }
        ports.removeMarkers(output: 0)
        return status
    }

    /// Calls `produce` with room of random sizes in `rooms` until it finishes or fails; a
    /// `.waiting` status moves `time` on to the time asked for.
    @discardableResult
    func runToEnd(rooms: ClosedRange<Int> = 1...1_000, seed: UInt64 = 1, from start: Double = 0, maximumCalls: Int = 1_000_000) -> SourceStatus {
        var generator = SeededGenerator(seed: seed)
        var time = start
        for _ in 0..<maximumCalls {
            let status = step(room: Int.random(in: rooms, using: &generator), at: time)
            switch status {
            case .more: continue
            case .waiting(let until): time = max(time, until)
            case .finished, .failed: return status
            }
        }
        Issue.record("the source did not finish within \(maximumCalls) calls")
        return .more
    }
}

extension SourceStatus {
    var isFinished: Bool {
        if case .finished = self { return true }
        return false
    }

    var isMore: Bool {
        if case .more = self { return true }
        return false
    }

    /// The time a `.waiting` status names, or nil.
    var waitingUntil: Double? {
        if case .waiting(let until) = self { return until }
        return nil
    }

    var failure: SourceFailure? {
        if case .failed(let failure) = self { return failure }
        return nil
    }
}

/// A fresh folder under the system's temporary folder, removed by `remove()`.
struct TemporaryFolder {
    let path: String

    init() throws {
        var template = Array((NSTemporaryDirectory() + "sluice-io-XXXXXX").utf8CString)
        // SAFETY: `template` is a NUL-terminated C string mkdtemp rewrites in place.
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        path = String(cString: try #require(made))
    }

    func file(_ name: String) -> String { path + "/" + name }

    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// Runs `body` on its own thread and waits at most `timeout` seconds for it. Returns its
/// result, or nil when it did not return in time (the thread is then left to finish).
func onThread<T: Sendable>(timeout: Double, _ body: @escaping @Sendable () -> T) -> T? {
    let done = WakeSignal()
    let box = ResultBox<T>()
    let thread = GraphThread(name: "test") {
        box.set(body())
        done.post()
    }
    guard done.wait(timeout: timeout) else { return nil }
    thread.join()
    return box.get()
}

/// A value one thread sets and another reads after a signal.
final class ResultBox<T: Sendable>: @unchecked Sendable {
    // SAFETY (@unchecked Sendable): every access holds `lock`.
    private let lock = NSLock()
    private var value: T?

    func set(_ value: T) {
        lock.lock()
        self.value = value
        lock.unlock()
    }

    func get() -> T? {
        lock.lock()
        defer { lock.unlock() }
        return value
    }
}
