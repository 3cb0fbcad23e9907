import CJack
import Glibc
import SluiceGraph
import SluiceRT
import Synchronization

/// `jack.source`: brings JACK input ports into a graph (live routing: JACK in → nodes → JACK
/// out). The process callback copies the ports, interleaved, into a ring and never blocks: a
/// full ring drops the period and counts an overrun. The source's thread moves the ring into
/// the graph. It never ends by itself; the run ends when it is interrupted.
public final class JackSource: SourceNode, @unchecked Sendable {
    public static func type(defaultServer: String? = nil) -> NodeType {
        NodeType(
            NodeDescriptor(
                typeName: "jack.source", kind: .source,
                summary: "Records JACK input ports into the graph, on the server's rate; runs until interrupted.",
                outputs: [PortDescriptor("out", .frames, summary: "Float32 frames at the server's rate")],
                parameters: [
                    JackPorts.clientParameter(default: "sluice-in"),
                    JackPorts.serverParameter,
                    ParameterDescriptor(
                        "channels", .integer(1...64), default: .integer(2),
                        summary: "Input ports, and the channels of the stream."),
                    JackPorts.portsParameter(prefix: "in"),
                    JackPorts.connectParameter(physical: "capture", others: "output port"),
                    ParameterDescriptor(
                        "buffer", .number(0.05...60), default: .number(1), unit: "s",
                        summary: "Audio the callback may get ahead of the graph before it drops periods (overruns)."),
                ])
        ) { parameters in
            JackSource(
                clientName: parameters.string("client") ?? "sluice-in",
                server: parameters.string("server") ?? defaultServer,
                channels: parameters.integer("channels"),
                portNames: parameters["ports"] == nil ? nil : parameters.list("ports"),
                connect: parameters.list("connect"), bufferSeconds: parameters.double("buffer"))
        }
    }

    public let clientName: String
    public let server: String?
    public let channels: Int
    public let portNames: [String]?
    public let connect: [String]
    public let bufferSeconds: Double

    private var client: JackClient?
    private var engine: JackSourceEngine?
    private var activated = false
    private let cancelled = Atomic<Bool>(false)
    public private(set) var connections: [(from: String, to: String)] = []

    public init(clientName: String, server: String?, channels: Int, portNames: [String]?, connect: [String], bufferSeconds: Double) {
        self.clientName = clientName
        self.server = server
        self.channels = channels
        self.portNames = portNames
        self.connect = connect.isEmpty ? ["auto"] : connect
        self.bufferSeconds = bufferSeconds
    }

    /// The name JACK gave the client, once it is open.
    public var actualClientName: String? { client?.name }

    /// Periods dropped because the graph fell behind by more than `buffer`.
    public var overruns: Int { engine?.overruns.load(ordering: .relaxed) ?? 0 }

    public func outputFormats(for inputs: [StreamFormat], context: FormatContext) throws(FormatMismatch) -> [StreamFormat] {
        if let portNames, portNames.count != channels {
            throw FormatMismatch(input: 0, required: .parameter(
                name: "ports", problem: "`ports` names \(portNames.count) ports for \(channels) channels",
                fix: "give one port name per channel"))
        }
        do {
            let client = try openClient()
            return [.frames(rate: client.sampleRate, channels: channels)]
        } catch {
            throw FormatMismatch(input: 0, required: .parameter(
                name: "server", problem: error.message, fix: "start a JACK server before running a graph with jack.source"))
        }
    }

    @discardableResult
    func openClient() throws(JackError) -> JackClient {
        if let client { return client }
        let opened = try JackClient(name: clientName, server: server)
        client = opened
        return opened
    }

    public func prepare(_ context: PrepareContext) throws {
        let client = try openClient()
        engine = JackSourceEngine(channels: channels, capacityFrames: max(1024, Int(bufferSeconds * Double(client.sampleRate))))
    }

    /// [source] Activates the client on the first call, then moves what the callback
    /// recorded into the graph, sleeping on the callback's signal when there is none.
    public func produce(_ io: inout ProcessIO, at time: Double) -> SourceStatus {
        if cancelled.load(ordering: .acquiring) { return .finished }
        guard let engine, let client else { return .failed(SourceFailure(code: "jack-not-prepared", message: "jack.source was not prepared")) }
        if !activated {
            do {
                try activate(client, engine)
            } catch {
                return .failed(SourceFailure(code: "jack-activate", message: error.description))
            }
        }
        if engine.serverGone.load(ordering: .acquiring) {
            return .failed(SourceFailure(code: "jack-server-gone", message: "the JACK server went away while recording"))
        }
        let moved = engine.take(into: io.frames(output: 0))
        if moved > 0 {
            io.produce(moved, output: 0)
            return .more
        }
        engine.arrived.wait(timeout: 0.05)
        return .more
    }

    private func activate(_ client: JackClient, _ engine: JackSourceEngine) throws(JackError) {
        for channel in 0..<channels {
            let name = portNames?[channel] ?? "in_\(channel + 1)"
            guard let port = jack_port_register(client.handle, name, JACK_DEFAULT_AUDIO_TYPE, UInt(JackPortIsInput.rawValue), 0) else {
                throw JackError("JACK refused an input port named '\(name)' for client '\(client.name)'")
            }
            engine.ports[channel] = port
        }
        let context = Unmanaged.passUnretained(engine).toOpaque()
        jack_set_process_callback(client.handle, sluiceJackSourceProcess, context)
        jack_on_shutdown(client.handle, sluiceJackSourceShutdown, context)
        guard jack_activate(client.handle) == 0 else { throw JackError("JACK did not activate client '\(client.name)'") }
        activated = true
        let ours = (0..<channels).map { "\(client.name):\(portNames?[$0] ?? "in_\($0 + 1)")" }
        connections = try JackPorts.connect(ours, as: .capture, following: connect, client: client)
    }

    public func cancel() {
        cancelled.store(true, ordering: .releasing)
        engine?.arrived.post()
    }

    public func deactivate() {
        if activated, let client { jack_deactivate(client.handle) }
        activated = false
        client?.close()
        client = nil
    }

    public func report(into report: inout NodeReport) {
        report.counters["overruns"] = overruns
    }
}

/// What `jack.source`'s process callback touches.
final class JackSourceEngine: @unchecked Sendable {
    let channels: Int
    // SAFETY: `channels` jack_port_t*, set before activation.
    let ports: UnsafeMutablePointer<OpaquePointer?>
    private var producer: RingProducer<Float>
    private var consumer: RingConsumer<Float>
    let arrived = WakeSignal()
    let overruns = Atomic<Int>(0)
    let serverGone = Atomic<Bool>(false)

    init(channels: Int, capacityFrames: Int) {
        self.channels = channels
        ports = .allocate(capacity: channels)
        ports.initialize(repeating: nil, count: channels)
        let ring = makeRing(of: Float.self, capacity: capacityFrames * channels)
        producer = ring.producer
        consumer = ring.consumer
    }

    deinit { ports.deallocate() }

    /// [audio-thread] Interleaves the ports into the ring, all or nothing.
    func process(_ nframes: jack_nframes_t) {
        let frames = Int(nframes)
        let regions = producer.writableRegions(maximum: frames * channels)
        guard regions.count == frames * channels else {
            overruns.add(1, ordering: .relaxed)
            return
        }
        for channel in 0..<channels {
            guard let port = ports[channel], let raw = jack_port_get_buffer(port, nframes) else { continue }
            // SAFETY: JACK hands a buffer of `nframes` samples for an audio port.
            let buffer = raw.assumingMemoryBound(to: Float.self)
            for frame in 0..<frames {
                let index = frame * channels + channel
                if index < regions.first.count {
                    regions.first[index] = buffer[frame]
                } else {
                    regions.second[index - regions.first.count] = buffer[frame]
                }
            }
        }
        producer.commit(frames * channels)
        arrived.post()
    }

    /// [source] Moves whole frames from the ring into `output`. Returns frames moved.
    func take(into output: UnsafeMutableBufferPointer<Float>) -> Int {
        let frames = min(consumer.availableElements() / channels, output.count / channels)
        guard frames > 0 else { return 0 }
        return consumer.pop(into: UnsafeMutableBufferPointer(rebasing: output[0..<(frames * channels)])) / channels
    }
}

/// [audio-thread] `jack.source`'s process callback.
func sluiceJackSourceProcess(_ nframes: jack_nframes_t, _ argument: UnsafeMutableRawPointer?) -> Int32 {
    // SAFETY: `argument` is the engine, kept alive by its source until after deactivation.
    Unmanaged<JackSourceEngine>.fromOpaque(argument!)._withUnsafeGuaranteedRef { $0.process(nframes) }
    return 0
}

/// `jack.source`'s shutdown callback: only sets a flag (and wakes the source thread).
func sluiceJackSourceShutdown(_ argument: UnsafeMutableRawPointer?) {
    // SAFETY: as for the process callback.
    Unmanaged<JackSourceEngine>.fromOpaque(argument!)._withUnsafeGuaranteedRef {
        $0.serverGone.store(true, ordering: .releasing)
        $0.arrived.post()
    }
}
