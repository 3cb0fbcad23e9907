import CJack
import Glibc

// The recorder's C callbacks: plain top-level functions, so libjack can call them as C
// function pointers from its own threads. State comes only through the `void *` argument.

/// JACK process callback [audio-thread]: copies each input buffer into its channel's ring.
/// No allocation, no lock, no reference counting: fixed pointers and atomics only.
func recorderProcess(_ frames: jack_nframes_t, _ context: UnsafeMutableRawPointer?) -> Int32 {
    guard let context else { return 0 }
    // SAFETY: `context` is the recorder's RecorderRealtimeState, passed unretained; it outlives
    // the client, and a guaranteed reference avoids retain/release on this thread.
    return Unmanaged<RecorderRealtimeState>.fromOpaque(context)._withUnsafeGuaranteedRef { state in
        let count = Int(frames)
        state.cycles.add(1, ordering: .releasing)
        // All channels or none, so the channels stay aligned when a ring is full.
        for channel in 0..<state.channels where state.producers[channel].availableSlots() < count {
            state.droppedFrames.add(count, ordering: .relaxed)
            return 0
        }
        for channel in 0..<state.channels {
            guard let buffer = jack_port_get_buffer(state.ports[channel], frames) else { continue }
            // SAFETY: JACK's buffer for an audio port holds `frames` floats for this cycle;
            // slot `channel` of `producers` is used only by this thread.
            let samples = UnsafeBufferPointer(start: buffer.assumingMemoryBound(to: Float.self), count: count)
            _ = state.producers[channel].push(contentsOf: samples)
        }
        return 0
    }
}

/// JACK shutdown callback [non-real-time JACK thread]: only sets a flag.
func recorderShutdown(_ context: UnsafeMutableRawPointer?) {
    guard let context else { return }
    // SAFETY: as in `recorderProcess`.
    Unmanaged<RecorderRealtimeState>.fromOpaque(context)._withUnsafeGuaranteedRef { state in
        state.shutDown.store(true, ordering: .releasing)
    }
}

/// JACK xrun callback [non-real-time JACK thread]: counts the xruns the server reports (any
/// client late, which may cost this recorder a cycle).
func recorderXrun(_ context: UnsafeMutableRawPointer?) -> Int32 {
    guard let context else { return 0 }
    // SAFETY: as in `recorderProcess`.
    Unmanaged<RecorderRealtimeState>.fromOpaque(context)._withUnsafeGuaranteedRef { state in
        _ = state.xruns.add(1, ordering: .releasing)
    }
    return 0
}

/// The drain thread: drains the rings every 5 ms until asked to stop, then once more.
func recorderDrainThreadMain(_ context: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
    guard let context else { return nil }
    // SAFETY: `start()` passed a +1 reference, released here when the thread ends.
    let state = Unmanaged<RecorderDrainState>.fromOpaque(context).takeRetainedValue()
    while !state.stopRequested.load(ordering: .acquiring) {
        state.drain()
        usleep(5_000)
    }
    state.drain()
    return nil
}
