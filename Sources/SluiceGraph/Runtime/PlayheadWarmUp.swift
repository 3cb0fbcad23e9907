import SluiceAudio

extension Playhead {
    /// [control-thread] Runs every path of `render` once — playing, markers, an underrun, re-arming,
    /// the end of a stream and a cancel — on a throwaway playhead, so that the allocations
    /// some paths make on their first use in a process (Swift runtime metadata) happen here
    /// and not on a device's real-time thread. Call it before a device starts calling
    /// `render`. The first pass applies output gains too (`PlayheadGains`): a change at once,
    /// one timed within a period.
    public static func warmUp(channels: Int) {
        for cancelling in [false, true] {
            let (writer, playhead, events) = makeSinkEdge(
                rate: 48_000, channels: channels, capacityFrames: 1024, fadeFrames: 16,
                watermarkFrames: 32, eventCapacity: 64, workerWake: WakeSignal())
            let gainChanges = ParameterQueue(wake: nil)
            if !cancelling {
                playhead.outputGains = PlayheadGains(channels: channels, nodes: [("warm-up", gainChanges, WarmUpGains())])
                _ = gainChanges.send(parameter: 0, value: 0.5)
                _ = gainChanges.send(parameter: 0, value: 1, atFrame: 100)
            }
            let output = UnsafeMutablePointer<Float>.allocate(capacity: 64 * channels)
            defer { output.deallocate() }
            var written = 0
            func write(_ frames: Int) {
                let region = writer.writableRegion()
                let count = min(frames, region.units)
                region.base?.assumingMemoryBound(to: Float.self).update(repeating: 0.25, count: count * channels)
                writer.commit(count)
                written += count
            }
            writer.push(Marker(position: 0, event: .utteranceStart(UtteranceID(0))))
            write(100)
            playhead.render(into: output, frames: 64)  // starts, plays
            playhead.render(into: output, frames: 64)  // runs dry: underrun
            write(100)
            playhead.render(into: output, frames: 64)  // re-armed, fades in
            if cancelling {
                playhead.cancel()
            } else {
                writer.push(Marker(position: written, event: .endOfStream))
            }
            playhead.render(into: output, frames: 64)
            playhead.render(into: output, frames: 64)
            _ = playhead.isReady(toRender: 64)
            while events.next() != nil {}
        }
    }
}

/// A gain for `Playhead.warmUp` to apply.
private final class WarmUpGains: OutputGains {
    private var value: Float = 1
    var rampFrames: Int { 8 }
    func gain(channel: Int) -> Float { value }
    func apply(_ change: ParameterChange) { value = Float(change.value) }
}
