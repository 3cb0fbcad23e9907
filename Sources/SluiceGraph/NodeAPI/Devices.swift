/// A device that clocks a graph's real-time cycle: JACK's process callback, which captures
/// the graph's device sources, runs the nodes placed in the cycle and renders the sinks' audio
/// into its ports, all in one call. A graph has one device per `DeviceEndpoint.deviceKey` (one
/// JACK client per server), shared by every endpoint with that key.
///
/// Lifecycle: made by the compiler for a live graph (`DeviceEndpoint.makeDevice`) → endpoints
/// attached → `wakesControl(with:)` → `start(_:)` once the runtime is prepared → `service()`
/// at the run's looks → `stop()`.
public protocol GraphDevice: AnyObject, Sendable {
    /// [control-thread] Starts calling `cycle` from the device's real-time thread: ports,
    /// callbacks, activation, connections. Returns once the device runs.
    func start(_ cycle: GraphCycle) throws

    /// [control-thread] Stops calling the cycle; returns once it is no longer called.
    func stop()

    /// [control-thread] Why the device stopped (its server went away, its rate changed), or
    /// nil. A live run polls it and ends with the error instead of waiting for a dead device.
    var failure: (any Error)? { get }

    /// [control-thread] Housekeeping the run's control loop calls at each of its looks while
    /// the device runs: connections re-applied to ports that appeared again.
    func service()
    /// [control-thread] Before `start`: `signal` wakes the run's control loop. A device that
    /// posts it (from any thread) whenever `failure` or `service()` has news — its server went
    /// away, a port appeared, a latency changed — returns true, and the loop then looks only
    /// when woken (or `wantsFrequentLooks`); one that returns false is looked at every 50 ms.
    func wakesControl(with signal: WakeSignal) -> Bool
    /// [control-thread] Whether the control loop should look every 50 ms even so: news the
    /// device cannot post, such as a deadline passing.
    var wantsFrequentLooks: Bool { get }

    /// [control-thread] Connects (or, with `connected` false, disconnects) two ports while the
    /// device runs: one of its own (by its short or full name) and any other, in either
    /// order. Returns the pair as (output, input). Throws `DeviceRoutingError` naming the
    /// port that is not there or the pair that cannot be joined.
    func route(_ first: String, _ second: String, connected: Bool) throws -> (from: String, to: String)

    /// [any-thread] Cycles the device missed so far (JACK's xruns); 0 for devices that
    /// cannot miss one.
    var xruns: Int { get }
}

extension GraphDevice {
    public var xruns: Int { 0 }
    public func service() {}
    public func wakesControl(with signal: WakeSignal) -> Bool { false }
    public var wantsFrequentLooks: Bool { false }
    public func route(_ first: String, _ second: String, connected: Bool) throws -> (from: String, to: String) {
        throw DeviceRoutingError("this graph's device has no ports to connect")
    }
}

/// Why a connection by command could not be made or broken, in a sentence.
public struct DeviceRoutingError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// A sink or source whose audio passes through a device shared by every endpoint of the graph
/// with the same `deviceKey`: `jack.sink` and `jack.source` are ports of one JACK client.
public protocol DeviceEndpoint: Node {
    /// [control-thread] Endpoints with equal keys share one device ("jack:<server>").
    var deviceKey: String { get }

    /// [control-thread] Makes the device that `endpoints` (every endpoint of the graph with
    /// this node's key, this node first, in declaration order) share, and attaches them. A
    /// configuration the device cannot honour (two different client names, two ports with
    /// one name) throws, naming the node and parameter.
    static func makeDevice(
        for endpoints: [DeviceEndpointEntry], graphName: String, playback: PlaybackSettings
    ) throws(DeviceConfigurationError) -> any GraphDevice
}

/// One endpoint as the compiler hands it to `DeviceEndpoint.makeDevice`.
public struct DeviceEndpointEntry {
    public let name: String
    public let node: any DeviceEndpoint

    public init(name: String, node: any DeviceEndpoint) {
        self.name = name
        self.node = node
    }
}

/// Why endpoints cannot share their device: the node and parameter to point at, and a fix.
public struct DeviceConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The node whose declaration is at fault.
    public var node: String
    public var parameter: String?
    public var message: String
    public var fix: String?

    public init(node: String, parameter: String?, message: String, fix: String?) {
        self.node = node
        self.parameter = parameter
        self.message = message
        self.fix = fix
    }

    public var description: String { message }
}

/// A source whose audio comes from its device inside the cycle (`jack.source`): it has no
/// thread of its own and never blocks. The device writes each period's input into the node's
/// output edge (`GraphCycle.captureRegions`), and the nodes downstream run in the same cycle.
public protocol DeviceSourceNode: DeviceEndpoint {
    /// [control-thread] Channels the device delivers each period.
    var channelCount: Int { get }
}

/// A sink whose audio goes to its device inside the cycle (`jack.sink`): the device renders the
/// sink's playhead into its ports (`GraphCycle.render`).
public protocol DeviceSinkNode: DeviceEndpoint, SinkNode {}
