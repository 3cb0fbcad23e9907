import SluiceAudio

/// The buffers one node sees in one call: for each input, the audio waiting (up to the next
/// marker); for each output, the room free. A node reads and writes them, then says how much
/// it used with `consume` and `produce`. Units are frames on frame ports and bytes on byte
/// ports.
///
/// `ProcessIO` never allocates: the views live in the node's `NodePorts`, allocated once
/// when the graph is prepared.
public struct ProcessIO {
    // SAFETY: the runtime (or a test) keeps `ports` alive for the whole call; unowned(unsafe)
    // keeps retain/release traffic off the worker's hot path.
    @usableFromInline unowned(unsafe) let ports: NodePorts

    public init(_ ports: NodePorts) {
        self.ports = ports
    }

    @inlinable @inline(__always)
    public var inputCount: Int { ports.inputCount }
    @inlinable @inline(__always)
    public var outputCount: Int { ports.outputCount }

    /// Units waiting on input `port`.
    @inlinable @inline(__always)
    public func available(input port: Int) -> Int {
        let view = ports.inputs[port]
        return view.units - view.used
    }

    /// Whether the end of the stream has been received on input `port`.
    @inlinable @inline(__always)
    public func isEnded(input port: Int) -> Bool { ports.inputs[port].ended }

    /// The waiting input as bytes.
    @inlinable @inline(__always)
    public func bytes(input port: Int) -> UnsafeRawBufferPointer {
        let view = ports.inputs[port]
        guard let base = view.base else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(
            start: base + view.used * view.bytesPerUnit, count: (view.units - view.used) * view.bytesPerUnit)
    }

    /// The waiting input as interleaved samples (frame ports only).
    @inlinable @inline(__always)
    public func frames(input port: Int) -> UnsafeBufferPointer<Float> {
        let view = ports.inputs[port]
        guard let base = view.base else { return UnsafeBufferPointer(start: nil, count: 0) }
        // SAFETY: frame edges are rings of Float, so the memory is bound to Float.
        let samples = base.assumingMemoryBound(to: Float.self)
        return UnsafeBufferPointer(
            start: samples + view.used * view.channels, count: (view.units - view.used) * view.channels)
    }

    /// Units of room on output `port`.
    @inlinable @inline(__always)
    public func room(output port: Int) -> Int {
        let view = ports.outputs[port]
        return view.units - view.used
    }

    /// The free output room as bytes.
    @inlinable @inline(__always)
    public func bytes(output port: Int) -> UnsafeMutableRawBufferPointer {
        let view = ports.outputs[port]
        guard let base = view.base else { return UnsafeMutableRawBufferPointer(start: nil, count: 0) }
        return UnsafeMutableRawBufferPointer(
            start: base + view.used * view.bytesPerUnit, count: (view.units - view.used) * view.bytesPerUnit)
    }

    /// The free output room as interleaved samples (frame ports only).
    @inlinable @inline(__always)
    public func frames(output port: Int) -> UnsafeMutableBufferPointer<Float> {
        let view = ports.outputs[port]
        guard let base = view.base else { return UnsafeMutableBufferPointer(start: nil, count: 0) }
        // SAFETY: frame edges are rings of Float, so the memory is bound to Float.
        let samples = base.assumingMemoryBound(to: Float.self)
        return UnsafeMutableBufferPointer(
            start: samples + view.used * view.channels, count: (view.units - view.used) * view.channels)
    }

    /// Marks `units` of input `port` as used; later views start after them.
    @inlinable @inline(__always)
    public mutating func consume(_ units: Int, input port: Int) {
        precondition(units >= 0 && units <= available(input: port), "consumed more than was offered")
        ports.inputs[port].used += units
    }

    /// Marks `units` of output `port` as written; later views start after them.
    @inlinable @inline(__always)
    public mutating func produce(_ units: Int, output port: Int) {
        precondition(units >= 0 && units <= room(output: port), "produced more than the room offered")
        ports.outputs[port].used += units
    }

    /// Emits a marker on output `port`, stamped with a position in that output.
    public mutating func emit(_ marker: Marker, on port: Int) {
        ports.appendMarker(marker, output: port)
    }

    /// Emits every marker of a batch on output `port`.
    public mutating func emit(_ batch: MarkerBatch, on port: Int) {
        for index in 0..<batch.count { ports.appendMarker(batch[index], output: port) }
    }
}

/// One port's view, as the runtime sets it before a call. Usable from inlinable code, so a
/// node's calls into `ProcessIO` compile to loads, not calls across modules.
@usableFromInline
struct PortView {
    @usableFromInline var base: UnsafeMutableRawPointer?
    @usableFromInline var units = 0
    @usableFromInline var used = 0
    @usableFromInline var ended = false
    @usableFromInline let bytesPerUnit: Int
    @usableFromInline let channels: Int
}

/// The port views and pending markers of one node, allocated once. The runtime fills the
/// views before each call; a test harness can do the same with `setInput`/`setOutput`.
public final class NodePorts {
    /// Markers one call may emit per output before the runtime moves them to the edge.
    public static let markerCapacity = 16

    public let inputFormats: [StreamFormat]
    public let outputFormats: [StreamFormat]
    @usableFromInline let inputCount: Int
    @usableFromInline let outputCount: Int
    @usableFromInline let inputs: UnsafeMutablePointer<PortView>
    @usableFromInline let outputs: UnsafeMutablePointer<PortView>
    let pending: UnsafeMutablePointer<Marker>
    let pendingCounts: UnsafeMutablePointer<Int>

    public init(inputs inputFormats: [StreamFormat], outputs outputFormats: [StreamFormat]) {
        self.inputFormats = inputFormats
        self.outputFormats = outputFormats
        inputCount = inputFormats.count
        outputCount = outputFormats.count
        inputs = .allocate(capacity: max(1, inputCount))
        outputs = .allocate(capacity: max(1, outputCount))
        for (index, format) in inputFormats.enumerated() {
            (inputs + index).initialize(to: PortView(bytesPerUnit: format.bytesPerUnit, channels: format.channels))
        }
        for (index, format) in outputFormats.enumerated() {
            (outputs + index).initialize(to: PortView(bytesPerUnit: format.bytesPerUnit, channels: format.channels))
        }
        pending = .allocate(capacity: max(1, outputCount) * Self.markerCapacity)
        pendingCounts = .allocate(capacity: max(1, outputCount))
        pendingCounts.initialize(repeating: 0, count: max(1, outputCount))
    }

    /// [control-thread] The views' and the pending-marker counts' memory.
    var viewLines: [UnsafeRawPointer] {
        [UnsafeRawPointer(inputs), UnsafeRawPointer(outputs), UnsafeRawPointer(pendingCounts)]
    }

    deinit {
        inputs.deinitialize(count: inputCount)
        outputs.deinitialize(count: outputCount)
        inputs.deallocate()
        outputs.deallocate()
        pending.deallocate()
        pendingCounts.deallocate()
    }

    /// Offers `units` units at `base` on input `port`, none used yet.
    public func setInput(_ port: Int, base: UnsafeRawPointer?, units: Int) {
        inputs[port].base = UnsafeMutableRawPointer(mutating: base)
        inputs[port].units = units
        inputs[port].used = 0
    }

    /// Offers `units` units of room at `base` on output `port`, none used yet.
    public func setOutput(_ port: Int, base: UnsafeMutableRawPointer?, units: Int) {
        outputs[port].base = base
        outputs[port].units = units
        outputs[port].used = 0
    }

    /// Records that the end of the stream arrived on input `port`.
    public func setEnded(_ port: Int, _ ended: Bool = true) { inputs[port].ended = ended }

    /// Units the last call consumed from input `port`.
    public func consumed(input port: Int) -> Int { inputs[port].used }

    /// Units the last call produced on output `port`.
    public func produced(output port: Int) -> Int { outputs[port].used }

    /// Markers emitted on output `port` since the last `removeMarkers`.
    public func markerCount(output port: Int) -> Int { pendingCounts[port] }

    public func marker(_ index: Int, output port: Int) -> Marker {
        pending[port * Self.markerCapacity + index]
    }

    public func removeMarkers(output port: Int) { pendingCounts[port] = 0 }

    func appendMarker(_ marker: Marker, output port: Int) {
        let count = pendingCounts[port]
        precondition(count < Self.markerCapacity, "a node emitted more than \(Self.markerCapacity) markers in one call")
        pending[port * Self.markerCapacity + count] = marker
        pendingCounts[port] = count + 1
    }
}
