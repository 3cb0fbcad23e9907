import CJack
import Glibc
import SluiceGraph
import SluiceRT
import Synchronization

/// What the JACK process callback of a `jack.sink` touches: the playhead, the output ports,
/// one interleaved scratch buffer, and atomics. Allocated before the client is activated;
/// the callback allocates nothing, locks nothing and does no I/O.
final class JackSinkEngine: @unchecked Sendable {
    /// The most frames one callback may ask for; larger periods play silence (and count).
    static let maximumFrames = 8192

    let channels: Int
    // SAFETY: `ports` holds `channels` jack_port_t* set before activation and never changed
    // while the client is active; `scratch` holds maximumFrames × channels samples.
    let ports: UnsafeMutablePointer<OpaquePointer?>
    let scratch: UnsafeMutablePointer<Float>
    // SAFETY: set before activation, cleared after deactivation; the callback reads it
    // without retaining (see `process`).
    var playhead: Unmanaged<Playhead>?

    /// Set once the ports are connected: until then the callback plays silence, so the
    /// first audio is not lost to ports nobody listens to yet.
    let rendering = Atomic<Bool>(false)
    let xruns = Atomic<Int>(0)
    let serverGone = Atomic<Bool>(false)
    let callbacks = Atomic<Int>(0)
    let oversizedPeriods = Atomic<Int>(0)
    /// Callback durations in nanoseconds, the latest `durationCapacity`, for percentiles. A
    /// plain array and an atomic count rather than a generic ring: generic code reached for
    /// the first time on the real-time thread looks its metadata up under a lock (found by
    /// RealtimeSanitizer).
    static let durationCapacity = 1 << 16
    private let durations: UnsafeMutablePointer<UInt32>
    private let durationCount = Atomic<Int>(0)

    /// RealtimeSanitizer's enter/exit, in sanitizer runs only.
    private let hooks: JackRealtimeHooks?

    init(channels: Int) {
        self.channels = channels
        hooks = JackRealtimeHooks.installed
        ports = .allocate(capacity: channels)
        ports.initialize(repeating: nil, count: channels)
        scratch = .allocate(capacity: Self.maximumFrames * channels)
        scratch.initialize(repeating: 0, count: Self.maximumFrames * channels)
        durations = .allocate(capacity: Self.durationCapacity)
        durations.initialize(repeating: 0, count: Self.durationCapacity)
    }

    deinit {
        ports.deallocate()
        scratch.deallocate()
        durations.deallocate()
    }

    /// [audio-thread] One period: the playhead renders interleaved into the scratch buffer,
    /// which is spread over the port buffers.
    @inline(__always)
    func process(_ nframes: jack_nframes_t) {
        hooks?.enter()
        defer { hooks?.exit() }
        let started = nanoseconds()
        let frames = Int(nframes)
        callbacks.add(1, ordering: .relaxed)
        if frames > Self.maximumFrames || !rendering.load(ordering: .acquiring) || playhead == nil {
            if frames > Self.maximumFrames { oversizedPeriods.add(1, ordering: .relaxed) }
            for channel in 0..<channels {
                guard let port = ports[channel], let buffer = jack_port_get_buffer(port, nframes) else { continue }
                buffer.assumingMemoryBound(to: Float.self).update(repeating: 0, count: frames)
            }
            return
        }
        // SAFETY: the playhead outlives activation (see `playhead`); the guaranteed reference
        // keeps retain/release off the real-time thread.
        playhead!._withUnsafeGuaranteedRef { $0.render(into: scratch, frames: frames) }
        for channel in 0..<channels {
            guard let port = ports[channel], let raw = jack_port_get_buffer(port, nframes) else { continue }
            // SAFETY: JACK hands a buffer of `nframes` samples for an audio port.
            let buffer = raw.assumingMemoryBound(to: Float.self)
            var source = scratch + channel
            for frame in 0..<frames {
                buffer[frame] = source.pointee
                source += channels
            }
        }
        let elapsed = nanoseconds() &- started
        let count = durationCount.load(ordering: .relaxed)
        durations[count & (Self.durationCapacity - 1)] = UInt32(truncatingIfNeeded: min(elapsed, UInt64(UInt32.max)))
        durationCount.store(count + 1, ordering: .releasing)
    }

    /// [control] The latest callback durations, in nanoseconds. Call once the client is
    /// deactivated (or accept a value being overwritten while read).
    func takeDurations(into values: inout [UInt32]) {
        let count = durationCount.load(ordering: .acquiring)
        for index in max(0, count - Self.durationCapacity)..<count {
            values.append(durations[index & (Self.durationCapacity - 1)])
        }
    }

    @inline(__always)
    private func nanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
    }
}

// The C callbacks: plain functions, state through the `void *` argument (a closure written
// elsewhere could inherit an actor's isolation and trap on JACK's thread).

/// [audio-thread] JACK's process callback.
func sluiceJackSinkProcess(_ nframes: jack_nframes_t, _ argument: UnsafeMutableRawPointer?) -> Int32 {
    // SAFETY: `argument` is the engine, kept alive by its sink until after deactivation.
    Unmanaged<JackSinkEngine>.fromOpaque(argument!)._withUnsafeGuaranteedRef { $0.process(nframes) }
    return 0
}

/// JACK's xrun callback: only counts.
func sluiceJackSinkXrun(_ argument: UnsafeMutableRawPointer?) -> Int32 {
    // SAFETY: as for the process callback.
    _ = Unmanaged<JackSinkEngine>.fromOpaque(argument!)._withUnsafeGuaranteedRef { $0.xruns.add(1, ordering: .relaxed) }
    return 0
}

/// JACK's shutdown callback: the server is gone; only sets a flag.
func sluiceJackSinkShutdown(_ argument: UnsafeMutableRawPointer?) {
    // SAFETY: as for the process callback.
    Unmanaged<JackSinkEngine>.fromOpaque(argument!)._withUnsafeGuaranteedRef { $0.serverGone.store(true, ordering: .releasing) }
}
