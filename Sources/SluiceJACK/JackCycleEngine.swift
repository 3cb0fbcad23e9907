import CJack
import Glibc
import SluiceGraph
import Synchronization

/// What a graph's JACK process callback touches: the graph's cycle, the port pointers, one
/// interleaved scratch buffer, and atomics. Allocated before the client is activated; the
/// callback allocates nothing, locks nothing and does no I/O (the allocation-counting and
/// RealtimeSanitizer tests hold it to that).
final class JackCycleEngine: @unchecked Sendable {
    /// The most frames one callback may ask for; larger periods play silence (and count).
    static let maximumFrames = GraphCycle.maximumFrames

    // SAFETY: the cycle outlives activation (the live run keeps its runtime until after the
    // device stops); the callback reads it without retaining.
    private let cycle: Unmanaged<GraphCycle>
    // SAFETY: a jack_client_t* owned by the device, valid while the engine is installed.
    private let client: OpaquePointer
    /// The cycle's `plan` where this client's ports fit it (one mono port each way), run with
    /// one call a period; else `.general`, the steps. The ports are the plan's: its sink's,
    /// and its source's for a chain.
    private let plan: GraphCycle.Plan
    // SAFETY: set before activation (`setPlaybackPort`, `setCapturePort`), then only read.
    private var planPlaybackPort: OpaquePointer?
    private var planCapturePort: OpaquePointer?

    // What every period reads comes first: the fields above and these lie on the object's
    // first two cache lines, where a callback that finds them cold pays for each line.

    /// Whether the callback renders the graph or plays silence (`RenderState`). Rendering
    /// starts only in a period whose ports are connected, so the first audio is not lost to
    /// ports nobody listens to yet.
    let renderState = Atomic<Int>(RenderState.silent)
    let callbacks = Atomic<Int>(0)
    /// Callback durations in nanoseconds, the latest `durationCapacity`, for percentiles. A
    /// plain array and an atomic count rather than a generic ring: generic code reached for
    /// the first time on the real-time thread looks its metadata up under a lock (found by
    /// RealtimeSanitizer).
    static let durationCapacity = 1 << 16
    private let durations: UnsafeMutablePointer<UInt32>
    private let durationCount = Atomic<Int>(0)
    /// RealtimeSanitizer's enter/exit, in sanitizer runs only.
    private let hooks: JackRealtimeHooks?
    /// The lines a period reads, fetched together at its start (`GraphCycle.periodLines`, and
    /// the engine's own port tables): a cold callback's misses then overlap instead of each
    /// waiting for the pointer read before it (measured: CHANGELOG.md, Earlier
    /// measurements, "jack: Hot code together").
    // SAFETY: filled in `init`, freed in `deinit`; the addresses are only prefetched, which
    // never faults (and the objects behind them outlive the client's activation).
    private let periodLines: UnsafeMutablePointer<UnsafeRawPointer>
    private let periodLineCount: Int

    let sampleRate: Int
    // Endpoints in the cycle's order, each direction with its channel counts, cycle indices
    // and the offset of each endpoint's first port in the flat port array.
    // SAFETY: the port arrays are set before activation and never changed while active.
    private let playback: Side
    private let capture: Side
    private let scratch: UnsafeMutablePointer<Float>

    let xruns = Atomic<Int>(0)
    let serverGone = Atomic<Bool>(false)
    /// The rate the server changed to, or 0.
    let changedRate = Atomic<Int>(0)
    /// Set by the port-registration callback; the device's `service` reconnects.
    let portsChanged = Atomic<Bool>(false)
    /// Registrations of our own ports JACK told us of, which change nothing.
    let ownPortNotices = Atomic<Int>(0)
    let oversizedPeriods = Atomic<Int>(0)
    private let outputLatencyValue = Atomic<Int>(0)

    /// The run's control loop: posted from the notification callbacks whenever `failure` or
    /// the device's `service` has something new, so the loop need not look for it often.
    let news: WakeSignal?

    init(
        cycle: GraphCycle, client: OpaquePointer, sampleRate: Int,
        playbackChannels: [Int], playbackIndices: [Int], captureChannels: [Int], captureIndices: [Int],
        news: WakeSignal?
    ) {
        self.cycle = Unmanaged.passUnretained(cycle)
        switch cycle.plan {
        case .ringSink where playbackChannels == [1] && captureChannels.isEmpty: plan = .ringSink
        case .chain where playbackChannels == [1] && captureChannels == [1]: plan = .chain
        default: plan = .general
        }
        self.news = news
        self.client = client
        self.sampleRate = sampleRate
        hooks = JackRealtimeHooks.installed
        playback = Side(channels: playbackChannels, indices: playbackIndices)
        capture = Side(channels: captureChannels, indices: captureIndices)
        let widest = max(1, playbackChannels.max() ?? 1)
        scratch = .allocate(capacity: Self.maximumFrames * widest)
        scratch.initialize(repeating: 0, count: Self.maximumFrames * widest)
        durations = .allocate(capacity: Self.durationCapacity)
        durations.initialize(repeating: 0, count: Self.durationCapacity)
        // The engine's port tables are read by the steps only, not by a plan's period.
        let lines = cycle.periodLines + (plan == .general ? [playback.block, capture.block].map { UnsafeRawPointer($0) } : [])
        periodLines = .allocate(capacity: max(1, lines.count))
        periodLines.initialize(from: lines, count: lines.count)
        periodLineCount = lines.count
        // The sinks' events are stamped with JACK's frame time, read only when a period
        // posts one: most do not, and the read touches the server's shared memory.
        let clock = DeviceClock(read: sluiceJackFrameTime, context: UnsafeMutableRawPointer(client))
        for index in playbackIndices { cycle.playhead(index).deviceClock = clock }
    }

    deinit {
        playback.deallocate()
        capture.deallocate()
        scratch.deallocate()
        durations.deallocate()
        periodLines.deallocate()
    }

    /// [notification-thread] Whether port `id` is one of this client's: a look-up in the
    /// server's shared port table, no request to the server.
    func isOwnPort(_ id: jack_port_id_t) -> Bool {
        guard let port = jack_port_by_id(client, id) else { return false }
        return jack_port_is_mine(client, port) != 0
    }

    /// [control-thread] Before activation.
    func setPlaybackPort(_ port: OpaquePointer, endpoint: Int, channel: Int) {
        playback.ports[playback.offsets[endpoint] + channel] = port
        if plan != .general { planPlaybackPort = port }
    }

    /// [control-thread] Before activation: `endpoint` plays into ports an earlier endpoint
    /// writes, so it adds to them.
    func setMixing(endpoint: Int) {
        playback.mixes[endpoint] = true
    }

    /// [control-thread] Before activation.
    func setCapturePort(_ port: OpaquePointer, endpoint: Int, channel: Int) {
        capture.ports[capture.offsets[endpoint] + channel] = port
        if plan == .chain { planCapturePort = port }
    }

    // MARK: Audio thread

    /// [audio-thread] One period: capture, the cycle's nodes, playback.
    @inline(__always)
    func process(_ nframes: jack_nframes_t) {
        hooks?.enter()
        defer { hooks?.exit() }
        let started = nanoseconds()
        // SAFETY: `periodLines` holds `periodLineCount` addresses (see the field).
        for index in 0..<periodLineCount { sluice_prefetch(periodLines[index]) }
        let frames = Int(nframes)
        // One writer (this thread): a plain store, not a locked read-modify-write.
        callbacks.store(callbacks.load(ordering: .relaxed) &+ 1, ordering: .relaxed)
        let state = renderState.load(ordering: .acquiring)
        guard _fastPath(frames <= Self.maximumFrames && (state == RenderState.rendering || startsRendering(state))) else {
            if frames > Self.maximumFrames { oversizedPeriods.add(1, ordering: .relaxed) }
            silenceOutputs(nframes)
            return
        }
        // SAFETY: the cycle outlives activation (see `cycle`); the guaranteed reference keeps
        // retain/release off the real-time thread.
        cycle._withUnsafeGuaranteedRef { cycle in
            // The usual shapes in one call each; a port JACK gives no buffer for takes the steps.
            if plan == .ringSink, let port = planPlaybackPort, let output = jack_port_get_buffer(port, nframes) {
                // SAFETY: JACK hands a buffer of `nframes` samples for an audio port, valid
                // for this period.
                cycle.renderRingSink(into: output.assumingMemoryBound(to: Float.self), frames: frames)
            } else if plan == .chain, let inPort = planCapturePort, let outPort = planPlaybackPort,
                let input = jack_port_get_buffer(inPort, nframes), let output = jack_port_get_buffer(outPort, nframes)
            {
                // SAFETY: as above; the nodes only read the capture port's buffer.
                cycle.runChain(
                    from: input.assumingMemoryBound(to: Float.self), into: output.assumingMemoryBound(to: Float.self), frames: frames)
            } else {
                processSteps(cycle, nframes: nframes)
            }
        }
        let elapsed = nanoseconds() &- started
        let count = durationCount.load(ordering: .relaxed)
        durations[count & (Self.durationCapacity - 1)] = UInt32(truncatingIfNeeded: min(elapsed, UInt64(UInt32.max)))
        durationCount.store(count + 1, ordering: .releasing)
    }

    /// [audio-thread] The period step by step, for any cycle: capture, the nodes, playback.
    @inline(never)
    private func processSteps(_ cycle: GraphCycle, nframes: jack_nframes_t) {
        for endpoint in 0..<capture.count { capture(endpoint, cycle: cycle, nframes: nframes) }
        for endpoint in 0..<playback.count { preparePlayback(endpoint, cycle: cycle, nframes: nframes) }
        cycle.process(frames: Int(nframes))
        for endpoint in 0..<playback.count { play(endpoint, cycle: cycle, nframes: nframes) }
    }

    /// [audio-thread] Whether this period is the first to render: the state is armed and the
    /// period began after the connections were made (`RenderState`). Only ever reached
    /// before rendering starts.
    @inline(never)
    private func startsRendering(_ state: Int) -> Bool {
        guard let armed = RenderState.armedFrame(state) else { return false }
        let periodStart = jack_last_frame_time(client)
        guard RenderState.startsRendering(periodStart: periodStart, armedAt: armed.frame) else { return false }
        // A stop in between (state back to silent) wins the exchanges.
        guard armed.skipping == 0 else {
            let next = RenderState.armed(after: periodStart, thenSkipping: armed.skipping - 1)
            _ = renderState.compareExchange(expected: state, desired: next, ordering: .acquiringAndReleasing)
            return false
        }
        return renderState.compareExchange(expected: state, desired: RenderState.rendering, ordering: .acquiringAndReleasing).exchanged
    }

    /// [audio-thread] Hands a device source of one channel feeding the direct section its
    /// port's buffer; any other goes through `captureOther`.
    ///
    /// The period's usual paths are kept apart from the rare ones (here, in `play`, and with
    /// branch hints in the nodes' steps and the playhead): a callback that finds its code
    /// cold pays for every line it runs through, so the lines it runs should be few and
    /// together (CHANGELOG.md, Earlier measurements, "jack: Fewer lines a period").
    @inline(__always)
    private func capture(_ endpoint: Int, cycle: GraphCycle, nframes: jack_nframes_t) {
        let index = capture.indices[endpoint]
        if _fastPath(capture.channels[endpoint] == 1 && cycle.capturesDirectly(index)),
            let port = capture.ports[capture.offsets[endpoint]], let raw = jack_port_get_buffer(port, nframes)
        {
            // SAFETY: JACK hands a buffer of `nframes` samples, valid for this period; the
            // nodes only read it.
            cycle.capture(index, from: raw.assumingMemoryBound(to: Float.self))
            return
        }
        captureOther(endpoint, cycle: cycle, nframes: nframes)
    }

    /// [audio-thread] Interleaves a device source's ports into its edge, all or nothing; or,
    /// feeding the direct section, into the section's buffer (a port JACK gives no buffer for
    /// plays silence there). A direct source of one channel whose port has its buffer never
    /// comes here (`capture`).
    @inline(never)
    private func captureOther(_ endpoint: Int, cycle: GraphCycle, nframes: jack_nframes_t) {
        let frames = Int(nframes)
        let channels = capture.channels[endpoint]
        let index = capture.indices[endpoint]
        if cycle.capturesDirectly(index) {
            let target = cycle.captureBuffer(index)
            for channel in 0..<channels {
                guard let port = capture.ports[capture.offsets[endpoint] + channel], let raw = jack_port_get_buffer(port, nframes) else {
                    for frame in 0..<frames { target[frame * channels + channel] = 0 }
                    continue
                }
                // SAFETY: JACK hands a buffer of `nframes` samples for an audio port; the
                // section's buffer holds `maximumFrames` frames of `channels`.
                let buffer = raw.assumingMemoryBound(to: Float.self)
                for frame in 0..<frames { target[frame * channels + channel] = buffer[frame] }
            }
            return
        }
        guard let regions = cycle.captureRegions(capture.indices[endpoint], frames: frames) else { return }
        let split = regions.first.count
        if channels == 1 {
            // One port: the period is already "interleaved"; copy the two stretches.
            if let port = capture.ports[capture.offsets[endpoint]], let raw = jack_port_get_buffer(port, nframes) {
                // SAFETY: JACK hands a buffer of `nframes` samples; the regions hold `nframes`.
                let buffer = raw.assumingMemoryBound(to: Float.self)
                regions.first.baseAddress?.update(from: buffer, count: split)
                regions.second.baseAddress?.update(from: buffer + split, count: frames - split)
            }
            cycle.commitCapture(capture.indices[endpoint], frames: frames)
            return
        }
        for channel in 0..<channels {
            guard let port = capture.ports[capture.offsets[endpoint] + channel], let raw = jack_port_get_buffer(port, nframes) else { continue }
            // SAFETY: JACK hands a buffer of `nframes` samples for an audio port.
            let buffer = raw.assumingMemoryBound(to: Float.self)
            for frame in 0..<frames {
                let index = frame * channels + channel
                if index < split {
                    regions.first[index] = buffer[frame]
                } else {
                    regions.second[index - split] = buffer[frame]
                }
            }
        }
        cycle.commitCapture(capture.indices[endpoint], frames: frames)
    }

    /// [audio-thread] Before the nodes run: a sink with one port of its own finds the port's
    /// buffer, and a direct section's nodes write into it straight.
    @inline(__always)
    private func preparePlayback(_ endpoint: Int, cycle: GraphCycle, nframes: jack_nframes_t) {
        playback.buffers[endpoint] = nil
        guard playback.channels[endpoint] == 1, !playback.mixes[endpoint],
              let port = playback.ports[playback.offsets[endpoint]], let raw = jack_port_get_buffer(port, nframes) else { return }
        // SAFETY: JACK hands a buffer of `nframes` samples for an audio port, valid for this
        // period.
        let buffer = raw.assumingMemoryBound(to: Float.self)
        playback.buffers[endpoint] = buffer
        _ = cycle.playInPlace(playback.indices[endpoint], into: buffer)
    }

    /// [audio-thread] Renders a device sink's playhead and spreads it over its ports; a sink
    /// whose ports an earlier sink wrote this period (sinks sharing ports) adds to them.
    @inline(__always)
    private func play(_ endpoint: Int, cycle: GraphCycle, nframes: jack_nframes_t) {
        if let buffer = playback.buffers[endpoint] {
            // One port: the playhead renders straight into JACK's buffer (where a direct
            // section's nodes may have written the period already).
            cycle.render(playback.indices[endpoint], into: buffer, frames: Int(nframes))
            return
        }
        playThroughScratch(endpoint, cycle: cycle, nframes: nframes)
    }

    /// [audio-thread] `play` for a sink of several ports, or sharing its ports: rendered into
    /// the scratch buffer, then spread over (or added into) the ports.
    @inline(never)
    private func playThroughScratch(_ endpoint: Int, cycle: GraphCycle, nframes: jack_nframes_t) {
        let frames = Int(nframes)
        let channels = playback.channels[endpoint]
        let adding = playback.mixes[endpoint]
        cycle.render(playback.indices[endpoint], into: scratch, frames: frames)
        for channel in 0..<channels {
            guard let port = playback.ports[playback.offsets[endpoint] + channel], let raw = jack_port_get_buffer(port, nframes) else { continue }
            // SAFETY: JACK hands a buffer of `nframes` samples for an audio port (for a sink
            // sharing its ports, the one an earlier sink filled this period).
            let buffer = raw.assumingMemoryBound(to: Float.self)
            var source = scratch + channel
            if adding {
                for frame in 0..<frames {
                    buffer[frame] += source.pointee
                    source += channels
                }
            } else {
                for frame in 0..<frames {
                    buffer[frame] = source.pointee
                    source += channels
                }
            }
        }
    }

    @inline(never)
    private func silenceOutputs(_ nframes: jack_nframes_t) {
        let total = playback.count == 0 ? 0 : playback.offsets[playback.count - 1] + playback.channels[playback.count - 1]
        for index in 0..<total {
            guard let port = playback.ports[index], let buffer = jack_port_get_buffer(port, nframes) else { continue }
            buffer.assumingMemoryBound(to: Float.self).update(repeating: 0, count: Int(nframes))
        }
    }

    @inline(__always)
    private func nanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
    }

    // MARK: Latency (JACK's notification thread, or the control thread)

    /// Set by the playback-latency callback: the sinks' output latency is to be read again,
    /// on the control thread (`JackDevice.service`).
    let outputLatencyStale = Atomic<Bool>(false)

    /// [any-thread] Sets our ports' latency ranges for `mode`: a playback port's capture
    /// latency is the largest capture latency of the device sources feeding it plus the
    /// nodes' latency between them; a capture port's playback latency is the largest
    /// playback latency of the sinks it feeds plus the nodes' latency.
    ///
    /// A range is only given to JACK when it differs from the one last given (ports start at
    /// 0–0): libjack's latency getters and setters sleep 1.1 periods whenever a graph change
    /// is pending (`WaitGraphChange`), which it is while a connection is being made — and
    /// `jack_connect` waits for this callback. Setting an unchanged range there cost each
    /// start a period before its first audio.
    func setLatencies(_ mode: jack_latency_callback_mode_t) {
        let captureMode = mode == JackCaptureLatency
        // Capture mode: our outputs (playback endpoints) take their inputs' latency; playback
        // mode: our inputs (capture endpoints) take their outputs'.
        let targets = captureMode ? playback : capture
        let others = captureMode ? capture : playback
        let graph = cycle.takeUnretainedValue()
        for target in 0..<targets.count {
            var range = jack_latency_range_t(min: 0, max: 0)
            var found = false
            for other in 0..<others.count {
                let (source, sink) = captureMode ? (other, target) : (target, other)
                guard let nodes = graph.latency(fromCapture: capture.indices[source], toPlayback: playback.indices[sink]) else { continue }
                let through = portsRange(others.ports + others.offsets[other], count: others.channels[other], mode: mode)
                let low = through.min + UInt32(nodes), high = through.max + UInt32(nodes)
                range = found ? jack_latency_range_t(min: min(range.min, low), max: max(range.max, high)) : jack_latency_range_t(min: low, max: high)
                found = true
            }
            for channel in 0..<targets.channels[target] {
                let slot = targets.offsets[target] + channel
                guard let port = targets.ports[slot] else { continue }
                if targets.latencies[slot].min == range.min && targets.latencies[slot].max == range.max { continue }
                jack_port_set_latency_range(port, mode, &range)
                targets.latencies[slot] = range
            }
        }
        // Reading the sinks' playback latency here could sleep the same way: the control
        // thread reads it instead, woken to.
        if !captureMode {
            outputLatencyStale.store(true, ordering: .releasing)
            news?.post()
        }
    }

    /// The widest range over `count` ports.
    private func portsRange(_ ports: UnsafeMutablePointer<OpaquePointer?>, count: Int, mode: jack_latency_callback_mode_t) -> jack_latency_range_t {
        var widest = jack_latency_range_t(min: UInt32.max, max: 0)
        for channel in 0..<count {
            guard let port = ports[channel] else { continue }
            var range = jack_latency_range_t()
            jack_port_get_latency_range(port, mode, &range)
            widest.min = min(widest.min, range.min)
            widest.max = max(widest.max, range.max)
        }
        if widest.min == UInt32.max { widest.min = 0 }
        return widest
    }

    /// [any-thread] Reads the sinks' playback latency (the largest over each sink's ports,
    /// plus the period rendered ahead) into their playheads.
    func updateOutputLatency() {
        let graph = cycle.takeUnretainedValue()
        let period = Int(jack_get_buffer_size(client))
        var largest = 0
        for sink in 0..<playback.count {
            let range = portsRange(playback.ports + playback.offsets[sink], count: playback.channels[sink], mode: JackPlaybackLatency)
            let frames = Int(range.max) + period
            graph.playhead(playback.indices[sink]).outputLatencyFrames = frames
            largest = max(largest, frames)
        }
        outputLatencyValue.store(largest, ordering: .relaxed)
    }

    /// Capture periods the cycle dropped.
    var overrunsOfCycle: Int { cycle.takeUnretainedValue().overruns }

    /// The largest sink output latency, in frames.
    var outputLatencyFrames: Int { outputLatencyValue.load(ordering: .relaxed) }

    /// [control-thread] The latest callback durations, in nanoseconds.
    /// The durations recorded after the first `seen` (as many as are still kept); returns
    /// how many have been recorded in all, the `seen` of the next call.
    func durations(after seen: Int, into values: inout [UInt32]) -> Int {
        let count = durationCount.load(ordering: .acquiring)
        for index in max(seen, count - Self.durationCapacity)..<max(seen, count) {
            values.append(durations[index & (Self.durationCapacity - 1)])
        }
        return count
    }

    func takeDurations(into values: inout [UInt32]) {
        let count = durationCount.load(ordering: .acquiring)
        for index in max(0, count - Self.durationCapacity)..<count {
            values.append(durations[index & (Self.durationCapacity - 1)])
        }
    }
}

/// One direction's endpoints (a JACK client's playback or capture side): for each endpoint its
/// channel count, its index in the cycle and the offset of its first port in `ports`, one
/// flat array of every port. Plain memory, allocated on the control thread before
/// activation, so the process callback reads it without retaining or allocating; and one
/// block of it, since the callback finds its memory cold and pays for every cache line it
/// touches (a side of one mono endpoint is one line).
private struct Side {
    let count: Int
    // SAFETY: all of these point into `block`, carved in `init`, freed in `deallocate`.
    let channels: UnsafeMutablePointer<Int>
    let indices: UnsafeMutablePointer<Int>
    let offsets: UnsafeMutablePointer<Int>
    /// Per endpoint, the audio thread's: this period's buffer of a playback endpoint with one
    /// port of its own, or nil.
    let buffers: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>
    let ports: UnsafeMutablePointer<OpaquePointer?>
    /// Per endpoint: it adds into ports an earlier endpoint writes (sinks sharing ports).
    let mixes: UnsafeMutablePointer<Bool>
    let block: UnsafeMutableRawPointer
    /// Per port: the latency range last given to JACK for the mode it is set in (capture
    /// latency on playback ports, playback latency on capture ports). Only the latency
    /// callback's thread touches it (the control thread before activation), so apart.
    let latencies: UnsafeMutablePointer<jack_latency_range_t>

    init(channels: [Int], indices: [Int]) {
        var running = 0
        let offsets = channels.map { count in defer { running += count }; return running }
        count = channels.count
        let endpoints = max(1, channels.count), portCount = max(1, running)
        let word = MemoryLayout<Int>.stride
        // Three Ints and a buffer pointer per endpoint, a pointer per port, a Bool per endpoint.
        block = .allocate(byteCount: word * (4 * endpoints + portCount) + endpoints, alignment: 64)
        // SAFETY: the regions below do not overlap and lie within `block`; each is bound to
        // its one type before use.
        self.channels = block.bindMemory(to: Int.self, capacity: endpoints)
        self.indices = (block + word * endpoints).bindMemory(to: Int.self, capacity: endpoints)
        self.offsets = (block + 2 * word * endpoints).bindMemory(to: Int.self, capacity: endpoints)
        buffers = (block + 3 * word * endpoints).bindMemory(to: UnsafeMutablePointer<Float>?.self, capacity: endpoints)
        ports = (block + 4 * word * endpoints).bindMemory(to: OpaquePointer?.self, capacity: portCount)
        mixes = (block + word * (4 * endpoints + portCount)).bindMemory(to: Bool.self, capacity: endpoints)
        self.channels.initialize(repeating: 0, count: endpoints)
        self.indices.initialize(repeating: 0, count: endpoints)
        self.offsets.initialize(repeating: 0, count: endpoints)
        for endpoint in 0..<channels.count {
            self.channels[endpoint] = channels[endpoint]
            self.indices[endpoint] = indices[endpoint]
            self.offsets[endpoint] = offsets[endpoint]
        }
        buffers.initialize(repeating: nil, count: endpoints)
        ports.initialize(repeating: nil, count: portCount)
        mixes.initialize(repeating: false, count: endpoints)
        latencies = .allocate(capacity: portCount)
        latencies.initialize(repeating: jack_latency_range_t(min: 0, max: 0), count: portCount)
    }

    /// [control-thread] After the client is closed.
    func deallocate() {
        block.deallocate()
        latencies.deallocate()
    }
}

/// The engine's `renderState`: silent, rendering, or armed to render from the first period
/// that begins after a given frame time.
///
/// Why armed: `jack_connect` returns once the server has recorded the connection, but the
/// server switches its graph only at the start of a cycle (jack2's `JackEngine::Process`,
/// after it has advanced the frame time). A period already under way still runs the old
/// graph, where our ports are not connected yet: audio rendered there is lost, and a sound's
/// first period goes missing (a click where it now starts). So the device, having connected,
/// arms the state with the frame time of the latest cycle begun (`jack_last_frame_time`),
/// and the callback starts rendering in the first period that begins later — one the new
/// graph runs. Not `jack_frame_time`: it interpolates from the predicted wake-up, and a cycle
/// that woke early would read as not begun yet (seen under load: a period lost in 1 of 250
/// starts).
enum RenderState {
    static let silent = 0
    static let rendering = 1

    /// The state that starts rendering once a period begins after `frame`, and `periods`
    /// more have passed (`skippedUnderPipeWire`). Bits: 0–1 the tag (2), 2–7 the periods,
    /// 8–39 the frame.
    static func armed(after frame: UInt32, thenSkipping periods: Int = 0) -> Int {
        2 | min(max(periods, 0), 63) << 2 | Int(frame) << 8
    }

    /// The frame an armed state waits for and the periods it skips after it; nil when the
    /// state is not armed.
    static func armedFrame(_ state: Int) -> (frame: UInt32, skipping: Int)? {
        state & 3 == 2 ? (UInt32(truncatingIfNeeded: state >> 8), (state >> 2) & 63) : nil
    }

    /// Periods the callback plays silence after the first under PipeWire's JACK layer: its
    /// `jack_connect` returns before the link carries audio, and in a test that started a
    /// graph 40 times, 15 lost their first period (exactly one) without this.
    static let skippedUnderPipeWire = 1

    /// Whether the period starting at `periodStart` renders, the state armed at `frame`: any
    /// period but the one armed in. After arming, the callback's periods begin at the armed
    /// frame or later (only a callback late past its cycle, in an xrun, sees an earlier one),
    /// so "not the armed one" is "a later one" — without comparing frame times that wrap at
    /// 2³², and without waiting forever when the frame read was not a cycle's: PipeWire's
    /// JACK layer answers 0 until the client has run a cycle, and its positions are not small.
    static func startsRendering(periodStart: UInt32, armedAt frame: UInt32) -> Bool {
        periodStart != frame
    }
}
