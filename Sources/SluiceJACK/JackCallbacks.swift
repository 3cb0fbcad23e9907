import CJack
import SluiceGraph

// The C callbacks of a graph's JACK client: plain functions, state through the `void *`
// argument (a closure written elsewhere could inherit an actor's isolation and trap on JACK's
// thread). Each argument is the device's engine, kept alive until after deactivation.

/// [audio-thread] The process callback: the graph's whole cycle.
func sluiceJackProcess(_ nframes: jack_nframes_t, _ argument: UnsafeMutableRawPointer?) -> Int32 {
    // SAFETY: `argument` is the engine, alive while the client is active.
    Unmanaged<JackCycleEngine>.fromOpaque(argument!)._withUnsafeGuaranteedRef { $0.process(nframes) }
    return 0
}

/// [audio-thread] The frame time at the current period's start, for a playhead stamping an
/// event (`DeviceClock`); the argument is the client.
func sluiceJackFrameTime(_ argument: UnsafeMutableRawPointer?) -> UInt64 {
    // SAFETY: `argument` is the jack_client_t*, open while the engine is installed.
    UInt64(jack_last_frame_time(OpaquePointer(argument)))
}

/// [notification-thread] An xrun: only counts.
func sluiceJackXrun(_ argument: UnsafeMutableRawPointer?) -> Int32 {
    // SAFETY: as for the process callback.
    _ = Unmanaged<JackCycleEngine>.fromOpaque(argument!)._withUnsafeGuaranteedRef { $0.xruns.add(1, ordering: .relaxed) }
    return 0
}

/// [notification-thread] The server is gone: sets a flag and wakes the control loop.
func sluiceJackShutdown(_ argument: UnsafeMutableRawPointer?) {
    // SAFETY: as for the process callback.
    Unmanaged<JackCycleEngine>.fromOpaque(argument!)._withUnsafeGuaranteedRef { engine in
        engine.serverGone.store(true, ordering: .releasing)
        engine.news?.post()
    }
}

/// [notification-thread] The server's rate: a change from the graph's ends the run (the
/// device's `failure`).
func sluiceJackSampleRate(_ rate: jack_nframes_t, _ argument: UnsafeMutableRawPointer?) -> Int32 {
    // SAFETY: as for the process callback.
    Unmanaged<JackCycleEngine>.fromOpaque(argument!)._withUnsafeGuaranteedRef { engine in
        if Int(rate) != engine.sampleRate {
            engine.changedRate.store(Int(rate), ordering: .releasing)
            engine.news?.post()
        }
    }
    return 0
}

/// [notification-thread] Another client's port appeared: the control thread re-applies
/// `connect` rules (JACK forbids server requests from this thread). Our own ports' appearing
/// changes nothing the rules have not already done.
func sluiceJackPortRegistration(_ port: jack_port_id_t, _ registered: Int32, _ argument: UnsafeMutableRawPointer?) {
    guard registered != 0 else { return }
    // SAFETY: as for the process callback.
    Unmanaged<JackCycleEngine>.fromOpaque(argument!)._withUnsafeGuaranteedRef { engine in
        guard !engine.isOwnPort(port) else {
            engine.ownPortNotices.add(1, ordering: .relaxed)
            return
        }
        engine.portsChanged.store(true, ordering: .releasing)
        engine.news?.post()
    }
}

/// [notification-thread] JACK asks for our ports' latency ranges.
func sluiceJackLatency(_ mode: jack_latency_callback_mode_t, _ argument: UnsafeMutableRawPointer?) {
    // SAFETY: as for the process callback.
    Unmanaged<JackCycleEngine>.fromOpaque(argument!)._withUnsafeGuaranteedRef { $0.setLatencies(mode) }
}
