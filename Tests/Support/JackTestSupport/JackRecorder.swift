import CJack
import Glibc
import SluiceRT
import Synchronization

/// A JACK client that records what arrives at its input ports.
///
/// It registers `in_1` … `in_N`; its process callback copies each port's buffer into a
/// lock-free ring per channel (no allocation, no lock), and a small background thread drains
/// the rings into Swift arrays every few milliseconds.
///
/// Order of use (JACK's own): `init` (open, callbacks, ports) → `start()` (activate) →
/// `connect(from:)` → `waitForFrames(_:timeout:)` → `samples(channel:)` → `stop()`.
/// Recording starts at activation, so the first samples are usually zeros from before the
/// connection was made.
///
/// ```swift
/// let recorder = try JackRecorder(server: server.name, clientName: "rec", channels: 2)
/// try recorder.start()
/// try recorder.connect(from: ["sluice:out_1", "sluice:out_2"])
/// #expect(recorder.waitForFrames(48_000, timeout: .seconds(5)))
/// let left = recorder.samples(channel: 0)
/// ```
///
/// Threading: [thread-safe] for every member; the process and shutdown callbacks run on
/// JACK's threads and touch only `RecorderRealtimeState`.
public final class JackRecorder: @unchecked Sendable {
    // SAFETY (@unchecked Sendable): `client` is only used under `lifecycle`'s lock (and by
    // libjack's own threads); the other stored properties are immutable or synchronised.

    /// The server's name.
    public let server: String
    /// The name JACK gave the client (it appends `-01` … when the name is taken).
    public let clientName: String
    /// Number of input ports, one per channel.
    public let channels: Int
    /// Frames each channel's ring holds before the process callback starts dropping cycles.
    public let capacityFrames: Int
    /// Full names of the input ports, in channel order ("rec:in_1", …).
    public let portNames: [String]

    private let client: OpaquePointer
    private let realtime: RecorderRealtimeState
    private let drainState: RecorderDrainState
    private let lifecycle = Mutex(Lifecycle())

    private struct Lifecycle {
        var active = false
        var closed = false
        var drainThread: pthread_t?
    }

    /// Opens a client on `server` and registers `channels` input ports.
    public init(
        server: String, clientName: String = "sluice-recorder", channels: Int = 2,
        capacityFrames: Int = 10 * 48_000
    ) throws(JackTestError) {
        precondition(channels >= 1, "a recorder needs at least one channel")
        precondition(capacityFrames >= 1, "a recorder needs room for at least one frame")
        let client = try BoundedClients.open(clientName, server: server)
        self.client = client
        self.server = server
        self.clientName = String(cString: jack_get_client_name(client))
        self.channels = channels
        self.capacityFrames = capacityFrames

        let producers = UnsafeMutablePointer<RingProducer<Float>>.allocate(capacity: channels)
        let consumers = UnsafeMutablePointer<RingConsumer<Float>>.allocate(capacity: channels)
        let ports = UnsafeMutablePointer<OpaquePointer?>.allocate(capacity: channels)
        ports.initialize(repeating: nil, count: channels)
        for channel in 0..<channels {
            let ring = makeRing(of: Float.self, capacity: capacityFrames)
            // SAFETY: slot `channel` of each fresh allocation is initialised exactly once here;
            // the state objects below deinitialise all `channels` slots.
            (producers + channel).initialize(to: ring.producer)
            (consumers + channel).initialize(to: ring.consumer)
        }
        realtime = RecorderRealtimeState(channels: channels, ports: ports, producers: producers)
        drainState = RecorderDrainState(channels: channels, consumers: consumers)

        var names: [String] = []
        for channel in 0..<channels {
            guard
                let port = jack_port_register(
                    client, "in_\(channel + 1)", JACK_DEFAULT_AUDIO_TYPE, UInt(JackPortIsInput.rawValue), 0)
            else {
                BoundedClients.close(client, server: server)
                throw JackTestError("could not register port in_\(channel + 1) on '\(self.clientName)'")
            }
            // SAFETY: `ports` holds `channels` initialised slots; nothing reads them before
            // activation.
            ports[channel] = port
            names.append(String(cString: jack_port_name(port)))
        }
        portNames = names

        // SAFETY: `realtime` lives as long as this recorder, and the client is closed (so no
        // callback can run) before the recorder is gone.
        let context = Unmanaged.passUnretained(realtime).toOpaque()
        guard jack_set_process_callback(client, recorderProcess, context) == 0 else {
            // Fully initialised: deinit closes the client.
            throw JackTestError("could not set the recorder's process callback")
        }
        jack_on_shutdown(client, recorderShutdown, context)
        jack_set_xrun_callback(client, recorderXrun, context)
    }

    deinit {
        stop()
    }

    // MARK: Running

    /// Activates the client (the process callback starts recording) and starts the drain
    /// thread. Does nothing if already started.
    public func start() throws(JackTestError) {
        try lifecycle.withLock { state throws(JackTestError) in
            guard !state.closed else { throw JackTestError("the recorder '\(clientName)' was stopped") }
            guard !state.active else { return }
            guard jack_activate(client) == 0 else {
                throw JackTestError("could not activate recorder '\(clientName)' on '\(server)'")
            }
            state.active = true
            var thread = pthread_t()
            // SAFETY: the thread gets a +1 reference to the drain state and releases it when
            // it ends; `stop()` joins it.
            let context = Unmanaged.passRetained(drainState).toOpaque()
            if pthread_create(&thread, nil, recorderDrainThreadMain, context) == 0 {
                state.drainThread = thread
            } else {
                Unmanaged<RecorderDrainState>.fromOpaque(context).release()
            }
        }
    }

    /// Connects `sourcePorts[i]` to input `i` (activating first if needed). Fewer sources
    /// than channels leaves the rest unconnected.
    public func connect(from sourcePorts: [String]) throws(JackTestError) {
        precondition(sourcePorts.count <= channels, "more sources than the recorder's \(channels) channels")
        try start()
        for (source, destination) in zip(sourcePorts, portNames) {
            let result = jack_connect(client, source, destination)
            guard result == 0 || result == EEXIST else {
                throw JackTestError("could not connect '\(source)' to '\(destination)' (error \(result))")
            }
        }
    }

    /// Connects one source port to every input.
    public func connect(allFrom sourcePort: String) throws(JackTestError) {
        try connect(from: Array(repeating: sourcePort, count: channels))
    }

    /// Deactivates and closes the client, stops the drain thread and drains what is left.
    /// What was recorded stays readable. Safe to call more than once.
    public func stop() {
        let thread: pthread_t? = lifecycle.withLock { state in
            guard !state.closed else { return nil }
            state.closed = true
            // Closing deactivates first. A server that does not answer in time may still call
            // the process callback: its state then lives as long as the process.
            if !BoundedClients.close(client, server: server) { _ = Unmanaged.passRetained(realtime) }
            defer { state.drainThread = nil }
            return state.drainThread
        }
        drainState.stopRequested.store(true, ordering: .releasing)
        if let thread { pthread_join(thread, nil) }
        drain()
    }

    // MARK: Reading

    /// Moves what the rings hold into the recorded arrays. The drain thread calls this every
    /// 5 ms; calling it yourself is harmless.
    public func drain() {
        drainState.drain()
    }

    /// Everything recorded on `channel` (0-based) so far.
    public func samples(channel: Int) -> [Float] {
        precondition(channel >= 0 && channel < channels, "channel \(channel) out of 0..<\(channels)")
        drain()
        return drainState.buffers.withLock { $0.recorded[channel] }
    }

    /// Frames recorded on every channel so far.
    public var framesRecorded: Int {
        drain()
        return drainState.buffers.withLock { $0.recorded.map(\.count).min() ?? 0 }
    }

    /// Forgets what was recorded so far (what is still in flight is kept).
    public func discardRecorded() {
        drain()
        drainState.buffers.withLock { buffers in
            for channel in 0..<channels { buffers.recorded[channel].removeAll(keepingCapacity: true) }
        }
    }

    /// Waits until at least `frames` frames are recorded on every channel; false on timeout.
    public func waitForFrames(_ frames: Int, timeout: Duration) -> Bool {
        Self.wait(until: { framesRecorded >= frames }, timeout: timeout, lookingEvery: 5_000)
    }

    /// Looks at `condition` every `microseconds` until it holds (true) or `timeout` passes.
    private static func wait(until condition: () -> Bool, timeout: Duration, lookingEvery microseconds: UInt32) -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while !condition() {
            if clock.now >= deadline { return false }
            usleep(microseconds)
        }
        return true
    }

    /// Process cycles that ran.
    public var cyclesProcessed: Int { realtime.cycles.load(ordering: .acquiring) }

    /// Waits until `count` more process cycles have run than had when called; false on
    /// timeout. Two are enough to have recorded the cycle under way when called, however
    /// late this client's thread runs it: the server's threads and ours run without
    /// real-time priority in the tests, so a loaded machine can hold a cycle back for tens
    /// of milliseconds.
    public func waitForCycles(_ count: Int, timeout: Duration) -> Bool {
        let target = cyclesProcessed + count
        return Self.wait(until: { cyclesProcessed >= target }, timeout: timeout, lookingEvery: 1_000)
    }

    /// Frames lost because a ring was full (whole cycles are dropped, on every channel).
    public var droppedFrames: Int { realtime.droppedFrames.load(ordering: .acquiring) }

    /// Xruns the server reported since the client opened: some client was late, and this
    /// recording may have lost a cycle.
    public var xruns: Int { realtime.xruns.load(ordering: .acquiring) }

    /// True once the server has shut down or thrown the client out.
    public var serverHasShutDown: Bool { realtime.shutDown.load(ordering: .acquiring) }

    /// Waits until the shutdown callback has run; false on timeout.
    public func waitForShutdown(timeout: Duration) -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while !serverHasShutDown {
            if clock.now >= deadline { return false }
            usleep(5_000)
        }
        return true
    }

    /// JACK's process thread for this client, while active (for allocation watching).
    public var processThread: pthread_t? {
        lifecycle.withLock { state in
            guard state.active, !state.closed else { return nil }
            return jack_client_thread_id(client)
        }
    }
}

// MARK: - State shared with JACK's threads

/// What the process and shutdown callbacks touch: fixed pointers and atomics only.
final class RecorderRealtimeState: @unchecked Sendable {
    // SAFETY (@unchecked Sendable): `ports` and `producers` are written before activation and
    // then used only by JACK's process thread (one producer per ring); the counters are
    // atomics.
    let channels: Int
    let ports: UnsafeMutablePointer<OpaquePointer?>
    let producers: UnsafeMutablePointer<RingProducer<Float>>
    let cycles = Atomic<Int>(0)
    let droppedFrames = Atomic<Int>(0)
    let shutDown = Atomic<Bool>(false)
    let xruns = Atomic<Int>(0)

    init(channels: Int, ports: UnsafeMutablePointer<OpaquePointer?>, producers: UnsafeMutablePointer<RingProducer<Float>>) {
        self.channels = channels
        self.ports = ports
        self.producers = producers
    }

    deinit {
        // SAFETY: all `channels` slots were initialised in JackRecorder.init; the client is
        // closed, so the process thread no longer uses them.
        producers.deinitialize(count: channels)
        producers.deallocate()
        ports.deallocate()
    }
}

/// The consumer side: the rings' consumers and the arrays they drain into, under one lock
/// (so the consumers are used by one thread at a time, as the ring requires).
final class RecorderDrainState: Sendable {
    struct Buffers: ~Copyable, @unchecked Sendable {
        // SAFETY (@unchecked Sendable): `consumers` is owned by this value alone and only
        // touched while the Mutex that holds it is locked.
        let channels: Int
        let consumers: UnsafeMutablePointer<RingConsumer<Float>>
        var recorded: [[Float]]

        deinit {
            // SAFETY: all `channels` slots were initialised in JackRecorder.init.
            consumers.deinitialize(count: channels)
            consumers.deallocate()
        }
    }

    let buffers: Mutex<Buffers>
    let stopRequested = Atomic<Bool>(false)

    init(channels: Int, consumers: UnsafeMutablePointer<RingConsumer<Float>>) {
        buffers = Mutex(Buffers(channels: channels, consumers: consumers, recorded: Array(repeating: [], count: channels)))
    }

    func drain() {
        buffers.withLock { buffers in
            for channel in 0..<buffers.channels {
                // SAFETY: slot `channel` is an initialised consumer, used only under this lock.
                let consumer = buffers.consumers + channel
                let regions = consumer.pointee.readableRegions()
                buffers.recorded[channel].append(contentsOf: regions.first)
                buffers.recorded[channel].append(contentsOf: regions.second)
                consumer.pointee.release(regions.count)
            }
        }
    }
}
