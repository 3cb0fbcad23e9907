import Glibc
import SluiceAudio
import SluiceTestSupport
import Testing
@_spi(TestKit) @testable import SluiceGraph

/// The playhead on its own: the sink edge's writer on one side, `render` on the other, as a
/// device would call it.
@Suite struct PlayheadTests {
    final class Rig {
        let writer: FrameEdgeWriter
        let playhead: Playhead
        let events: DrainEventReader
        var written = 0
        let output = UnsafeMutablePointer<Float>.allocate(capacity: 4096)

        init(capacity: Int = 4800, watermark: Int = 512, workerWake: WakeSignal? = nil) {
            (writer, playhead, events) = makeSinkEdge(
                rate: 48_000, channels: 1, capacityFrames: capacity, fadeFrames: 240,
                watermarkFrames: watermark, eventCapacity: 256, workerWake: workerWake)
        }

        deinit { output.deallocate() }

        /// Writes `count` frames of ones.
        func write(_ count: Int) {
            var left = count
            while left > 0 {
                let region = writer.writableRegion()
                let frames = min(left, region.units)
                region.base!.assumingMemoryBound(to: Float.self).update(repeating: 1, count: frames)
                writer.commit(frames)
                left -= frames
                written += frames
            }
        }

        func end() { writer.push(Marker(position: written, event: .endOfStream)) }

        func render(_ frames: Int) -> [Float] {
            playhead.render(into: output, frames: frames)
            return Array(UnsafeBufferPointer(start: output, count: frames))
        }

        func drainEvents() -> [DrainEvent.Kind] {
            var kinds: [DrainEvent.Kind] = []
            while let event = events.next() { kinds.append(event.kind) }
            return kinds
        }
    }

    @Test func silentUntilTheWatermarkThenPlays() {
        let rig = Rig(watermark: 512)
        rig.write(511)
        #expect(rig.render(256) == Array(repeating: 0, count: 256))
        #expect(rig.playhead.state == .buffering)
        rig.write(1)
        #expect(rig.render(256) == Array(repeating: 1, count: 256))
        #expect(rig.drainEvents() == [.started])
        #expect(rig.playhead.playedFrames == 256)
        #expect(rig.playhead.deviceFrames == 512)
    }

    @Test("the worker is woken once half the edge has played since the last wake, not every period")
    func theWorkerIsWokenOnceHalfTheEdgeIsFree() {
        let wake = WakeSignal()
        let rig = Rig(capacity: 4800, watermark: 512, workerWake: wake)
        rig.write(4800)
        // Posts taken one by one without sleeping: a wait whose deadline has passed.
        func posts() -> Int {
            var count = 0
            while wake.wait(timeout: 0) { count += 1 }
            return count
        }
        // 9 periods are 2 304 frames, under half of 4 800: each wake would be a futex system
        // call on the device thread, so none yet.
        for _ in 0..<9 { _ = rig.render(256) }
        #expect(posts() == 0)
        _ = rig.render(256)  // 2 560 frames: half the edge is free
        #expect(posts() == 1)
        for _ in 0..<8 { _ = rig.render(256) }  // 2 048 more since that wake
        #expect(posts() == 0)
    }

    @Test("a filler that keeps the edge over half full on its own is not woken; once it falls behind, it is")
    func noWakeWhileTheEdgeIsFullEnough() {
        let wake = WakeSignal()
        let rig = Rig(capacity: 4800, watermark: 512, workerWake: wake)
        func posts() -> Int {
            var count = 0
            while wake.wait(timeout: 0) { count += 1 }
            return count
        }
        rig.write(4800)
        // The filler tops the edge up every four periods, as its own looks would: far more
        // than half an edge is taken, but the edge never falls to half.
        for period in 1...40 {
            _ = rig.render(256)
            if period % 4 == 0 { rig.write(1024) }
        }
        #expect(posts() == 0)
        #expect(rig.playhead.playedFrames == 40 * 256)
        // It stops: once half the edge is free the playhead wakes it, once.
        var periods = 0
        while posts() == 0 && periods < 20 {
            _ = rig.render(256)
            periods += 1
        }
        #expect(periods == 10, "4 800 frames held: the 10th period leaves 2 240, under half")
        for _ in 0..<4 { _ = rig.render(256) }
        #expect(posts() == 0)
    }

    @Test func anEndedStreamShorterThanTheWatermarkPlays() {
        let rig = Rig(watermark: 4000)
        rig.write(100)
        rig.end()
        let out = rig.render(256)
        #expect(out[0..<100].allSatisfy { $0 == 1 })
        #expect(out[100...].allSatisfy { $0 == 0 })
        #expect(rig.playhead.isFinished)
        #expect(rig.drainEvents() == [.started, .marker, .finished])  // the marker: end of stream
    }

    @Test func anUnderrunFadesOutWhatIsLeftAndRearms() {
        let rig = Rig(watermark: 256)
        rig.write(256 + 100)
        _ = rig.render(256)
        let out = rig.render(256)
        // The 100 frames left fade from near 1 to near 0; the rest is silence.
        #expect(out[0] > 0.99 && out[99] < 0.01 && out[99] > 0)
        #expect(zip(out[0..<100], out[1..<100]).allSatisfy { $0.1 < $0.0 })
        #expect(out[100...].allSatisfy { $0 == 0 })
        #expect(rig.playhead.underruns == 1)
        #expect(rig.playhead.state == .buffering)
        // Re-armed: audio comes back with a fade-in once the watermark is there again.
        rig.write(255)
        #expect(rig.render(256).allSatisfy { $0 == 0 })
        rig.write(1)
        let back = rig.render(256)
        #expect(back[0] > 0 && back[0] < 0.01 && back[239] > 0.99 && back[240] == 1)
        #expect(rig.drainEvents() == [.started, .underrunStart, .underrunEnd])
    }

    @Test("running dry after an utterance's end, or before its end marker, waits for the next one: no underrun")
    func waitingBetweenUtterancesIsNoUnderrun() {
        let rig = Rig(watermark: 256)
        let first = UtteranceID(1), second = UtteranceID(2)
        rig.writer.push(Marker(position: 0, event: .utteranceStart(first)))
        rig.write(300)
        // The end sits past what has arrived: its last frames are held back upstream.
        rig.writer.push(Marker(position: 400, event: .utteranceEnd(first)))
        _ = rig.render(256)
        _ = rig.render(256)
        #expect(rig.playhead.underruns == 0)
        #expect(rig.playhead.drySpells == 1)
        // The held-back frames arrive (the drain), play out, and the playhead waits again.
        rig.write(100)
        _ = rig.render(256)
        _ = rig.render(256)
        #expect(rig.playhead.underruns == 0)
        #expect(rig.playhead.drySpells == 2)
        // The next utterance runs dry in its middle: that gap is an underrun.
        rig.writer.push(Marker(position: 400, event: .utteranceStart(second)))
        rig.write(300)
        _ = rig.render(256)
        _ = rig.render(256)
        #expect(rig.playhead.underruns == 1)
        #expect(rig.playhead.drySpells == 3)
    }

    @Test("pause fades out the stream's next frames and holds; resume goes on from the next frame, fading in")
    func pauseHoldsAndResumes() {
        let rig = Rig(watermark: 256)
        rig.write(2000)
        _ = rig.render(256)
        rig.playhead.pause()
        let fading = rig.render(256)
        #expect(fading[0] > 0.99 && fading[239] < 0.01 && fading[239] > 0)
        #expect(fading[240...].allSatisfy { $0 == 0 })
        #expect(rig.playhead.isPaused)
        #expect(rig.playhead.playedFrames == 256 + 240)
        #expect(rig.render(256).allSatisfy { $0 == 0 })
        #expect(rig.playhead.playedFrames == 256 + 240, "a pause took frames")
        rig.playhead.resume()
        let back = rig.render(256)
        #expect(back[0] > 0 && back[0] < 0.01 && back[239] > 0.99 && back[240] == 1)
        #expect(!rig.playhead.isPaused)
        #expect(rig.playhead.playedFrames == 256 + 240 + 256)
        #expect(rig.playhead.underruns == 0)
        #expect(rig.drainEvents() == [.started])
    }

    @Test("after resume the playhead is not paused, even while its edge is empty and it holds silence")
    func resumedWithNothingToPlayIsNotPaused() {
        let rig = Rig(watermark: 256)
        rig.write(512)
        _ = rig.render(256)
        rig.playhead.pause()
        _ = rig.render(256)
        #expect(rig.playhead.isPaused)
        rig.playhead.resume()
        #expect(!rig.playhead.isPaused, "status said paused after resume until audio arrived")
        _ = rig.render(256)
        _ = rig.render(256)
        #expect(!rig.playhead.isPaused)
    }

    @Test("discard fades out, drops audio and markers until the awaited utterance starts, then plays it fading in")
    func discardUntilTheNextUtterance() {
        let rig = Rig(watermark: 256)
        rig.writer.push(Marker(position: 0, event: .utteranceStart(UtteranceID(0))))
        rig.write(1000)
        rig.writer.push(Marker(position: 1000, event: .utteranceEnd(UtteranceID(0))))
        rig.writer.push(Marker(position: 1000, event: .utteranceStart(UtteranceID(1))))
        rig.write(1000)
        _ = rig.render(256)
        _ = rig.drainEvents()
        rig.playhead.discard(untilUtterance: UtteranceID(2))
        let fading = rig.render(256)
        #expect(fading[0] > 0.99 && fading[239] < 0.01 && fading[239] > 0)
        #expect(fading[240...].allSatisfy { $0 == 0 })
        #expect(rig.playhead.state == .buffering)
        // All that was queued is gone, its markers unposted: none of it was heard.
        #expect(rig.drainEvents().isEmpty)
        #expect(rig.playhead.discardedFrames == 2000 - 256 - 240)
        #expect(rig.render(256).allSatisfy { $0 == 0 })
        // The awaited utterance arrives: it plays from its first frame, fading in.
        rig.writer.push(Marker(position: 2000, event: .discontinuity, isDiscontinuous: true))
        rig.writer.push(Marker(position: 2000, event: .utteranceStart(UtteranceID(2))))
        rig.write(600)
        _ = rig.render(256)  // the start is found; this period stays silent
        let back = rig.render(256)
        #expect(back[0] > 0 && back[0] < 0.01 && back[239] > 0.99 && back[240] == 1)
        let events = rig.drainEvents()
        #expect(events.contains(.underrunEnd))
        #expect(rig.playhead.underruns == 0)
    }

    @Test func cancelFadesOutWithinOneFadeLength() {
        let rig = Rig(watermark: 256)
        rig.write(2000)
        _ = rig.render(256)
        rig.playhead.cancel()
        let out = rig.render(512)
        #expect(out[0] > 0.99 && out[239] < 0.01)
        #expect(out[240...].allSatisfy { $0 == 0 })
        #expect(rig.playhead.isFinished)
        #expect(rig.drainEvents() == [.started, .cancelled])
        // The raised cosine exactly (its cosine is stepped by a rotation, not called per frame):
        // gain(n) = ½ + ½·cos(π·(n + 1)/241) for a 240-frame fade-out.
        for frame in 0..<240 {
            let expected = Float(0.5 + 0.5 * cos(Double.pi * Double(frame + 1) / 241))
            #expect(abs(out[frame] - expected) <= 1e-6, "frame \(frame): \(out[frame]) instead of \(expected)")
        }
    }

    /// A period the cycle's direct section made, played in place: `count` frames of ones.
    func renderInPlace(_ rig: Rig, _ count: Int) -> [Float] {
        rig.output.update(repeating: 1, count: count)
        rig.playhead.renderInPlace(rig.output, frames: count)
        return Array(UnsafeBufferPointer(start: rig.output, count: count))
    }

    @Test("a period made in place plays at once, untouched and counted, with no watermark")
    func inPlacePeriodsPlayAtOnce() {
        let rig = Rig(watermark: 4096)
        #expect(renderInPlace(rig, 256) == Array(repeating: 1, count: 256))
        #expect(rig.playhead.state == .playing)
        #expect(rig.playhead.playedFrames == 256)
        #expect(rig.playhead.deviceFrames == 256)
        #expect(rig.playhead.firstAudioWallTime != nil)
        rig.playhead.meterPeaks(true)
        rig.output.update(repeating: -0.75, count: 256)
        rig.playhead.renderInPlace(rig.output, frames: 256)
        #expect(rig.playhead.takePeak() == 0.75)
        #expect(rig.playhead.playedFrames == 512)
        #expect(rig.drainEvents() == [.started])
    }

    @Test("in place, a pause fades out and holds in silence, uncounted; resume fades in; cancel fades out and finishes")
    func inPlacePauseResumeAndCancel() {
        let rig = Rig(watermark: 0)
        _ = renderInPlace(rig, 256)
        rig.playhead.pause()
        let fading = renderInPlace(rig, 256)
        #expect(fading[0] > 0.99 && fading[239] < 0.01 && fading[239] > 0)
        #expect(fading[240...].allSatisfy { $0 == 0 })
        #expect(rig.playhead.isPaused)
        #expect(renderInPlace(rig, 256).allSatisfy { $0 == 0 })
        #expect(rig.playhead.playedFrames == 256 + 240, "silence while paused counted as played")
        rig.playhead.resume()
        let back = renderInPlace(rig, 256)
        #expect(back[0] > 0 && back[0] < 0.01 && back[239] > 0.99 && back[240] == 1)
        #expect(!rig.playhead.isPaused)
        rig.playhead.cancel()
        let out = renderInPlace(rig, 512)
        // The same raised cosine as a ring-fed cancel.
        for frame in 0..<240 {
            let expected = Float(0.5 + 0.5 * cos(Double.pi * Double(frame + 1) / 241))
            #expect(abs(out[frame] - expected) <= 1e-6, "frame \(frame): \(out[frame]) instead of \(expected)")
        }
        #expect(out[240...].allSatisfy { $0 == 0 })
        #expect(rig.playhead.isFinished)
        #expect(rig.playhead.playedFrames == 256 + 240 + 256 + 240)
        #expect(rig.drainEvents() == [.started, .cancelled])
        #expect(renderInPlace(rig, 64).allSatisfy { $0 == 0 }, "a finished stream plays silence")
    }

    @Test func markersAreReportedWhenTheirFramePlays() {
        let rig = Rig(watermark: 256)
        rig.writer.push(Marker(position: 300, event: .utteranceStart(UtteranceID(7))))
        rig.write(1000)
        _ = rig.render(256)
        #expect(rig.drainEvents() == [.started])
        _ = rig.render(256)
        let event = rig.events.next()
        #expect(event?.kind == .marker)
        #expect(event?.marker?.event == .utteranceStart(UtteranceID(7)))
        #expect(event?.streamFrame == 300)
    }

    /// A device's life: markers, audio that runs dry now and then, events read, a cancel.
    func exercise(_ rig: Rig, rounds: Int) {
        for round in 0..<rounds {
            rig.writer.push(Marker(position: rig.written, event: .textSpan(TextSpan(utterance: UtteranceID(1), start: 0, end: 1))))
            rig.write(round % 3 == 0 ? 100 : 300)  // runs dry now and then: underruns, re-arming
            rig.playhead.render(into: rig.output, frames: 256)
            while rig.events.next() != nil {}
        }
        rig.playhead.cancel()
        rig.playhead.render(into: rig.output, frames: 256)
    }

    @Test(.enabled(if: AllocationCounter.testsEnabled))
    func renderAllocatesNothing() throws {
        // Code paths allocate on their first use in a process (runtime metadata): a device
        // warms them before its real-time thread starts, as this warm-up rig does.
        exercise(Rig(capacity: 48_000, watermark: 256), rounds: 10)
        let rig = Rig(capacity: 48_000, watermark: 256)
        let count = AllocationCounter.count { exercise(rig, rounds: 2000) }
        #expect(count == 0)
        #expect(rig.playhead.underruns > 0)
        #expect(rig.playhead.isFinished)
    }
}
