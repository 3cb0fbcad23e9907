import Glibc
import SluiceAudio
import SluiceRT
import Synchronization

/// The sink end of a graph: takes audio from the sink's edge one device period at a time and
/// decides, sample-accurately, what the device plays — silence until the watermark is
/// reached, the audio, a fade-out into silence when the edge runs dry, a fade-in when it
/// comes back, a fade-out on cancel.
///
/// `render` is the real-time path: it allocates nothing, takes no lock, does no I/O. It tells
/// the rest of the graph what happened through a `DrainEvent` ring and atomics, and wakes the
/// worker with a `WakeSignal` so freed room is refilled at once.
///
/// Threading: `render` from one thread at a time (the device's); the rest from any thread.
public final class Playhead: @unchecked Sendable {
    // What every period reads or writes comes first, on the object's first two cache lines
    // (in declaration order): the JACK callback finds them cold and pays for each line.
    // Written by the device thread, read anywhere.
    private let stateValue = Atomic<Int>(State.buffering.rawValue)
    private let deviceFramesValue = Atomic<Int>(0)
    private let streamFramesValue = Atomic<Int>(0)
    // Written by the control side, read by the device thread.
    private let cancelRequested = Atomic<Bool>(false)
    private let pauseRequested = Atomic<Bool>(false)
    /// Whether `take` measures the peak: only while a level meter reads it.
    private let metering = Atomic<Bool>(false)
    // SAFETY: `outputGains`, unretained, for `render`; set with it, which keeps it alive.
    private var outputGainsRef: Unmanaged<PlayheadGains>?
    /// With output gains, `render` measures the peak after applying them, not `countPlayed`.
    private var peakAfterGains = false
    // Device-thread state.
    /// A pause has begun (faded out) and playback holds.
    private var holding = false
    private var periodDeviceTimeKnown = true
    private var fadeInRemaining = 0
    private var periodDeviceStart = 0
    /// The device's clock, which events are stamped with (`DrainEvent.deviceTime`); nil
    /// counts device frames. Set [control-thread] before the device starts.
    public var deviceClock: DeviceClock?
    /// The device clock at the first frame of the period being rendered; read from
    /// `deviceClock` only when the period posts an event (`periodDeviceTimeKnown`).
    private var periodDeviceTime: UInt64 = 0

    public let sampleRate: Int
    public let channels: Int
    /// Frames over which underruns and cancels fade.
    public let fadeFrames: Int
    /// Frames the sink's edge holds at most (`max-buffered`).
    public let capacityFrames: Int

    public enum State: Int, Sendable {
        /// Waiting for the watermark (or the end of the stream).
        case buffering
        case playing
        /// Played to the end, or cancelled.
        case finished
    }

    // Written by the device thread, read anywhere.
    private let underrunsValue = Atomic<Int>(0)
    private let drySpellsValue = Atomic<Int>(0)
    private let droppedEventsValue = Atomic<Int>(0)
    // Written by the control side, read by the device thread.
    private let watermarkValue: Atomic<Int>
    /// Barge-in: the first utterance id to play again after a `discard`; -1 when none.
    private let discardUntilValue = Atomic<Int>(-1)
    private let discardedFramesValue = Atomic<Int>(0)
    /// The largest |sample| played since `takePeak` last read it, as Float bits.
    private let peakBits = Atomic<UInt32>(0)
    /// Set by the device thread once a pause has faded out, cleared on resume.
    private let pausedValue = Atomic<Bool>(false)
    /// Monotonic wall seconds, as bits, when the first audio was rendered; 0 before.
    private let firstAudioWallBits = Atomic<UInt64>(0)

    /// Frames from the device's ports to the listener (the server's playback latency plus
    /// the period rendered ahead), set by the device; 0 for devices that report none.
    private let outputLatencyValue = Atomic<Int>(0)

    // Device-thread state.
    private var audio: RingConsumer<Float>
    /// Silence still to play before the first audio: the latency of the nodes between a
    /// device input and this sink, in the cycle, so the output is the input delayed by
    /// exactly what the nodes declare (`Node.latencyFrames`).
    private var prerollRemaining: Int
    private var markers: RingConsumer<Marker>
    private var events: RingProducer<DrainEvent>
    private let heldMarkers: UnsafeMutablePointer<Marker>
    private var heldMarkerCount = 0
    private var endPosition = Int.max
    private var hasStarted = false
    /// [any-thread] Set while the source that feeds this sink has spoken all the text it was
    /// given and waits for more, in a graph that serves reply after reply (`sluice serve`):
    /// nothing more is coming to fill the buffer, so an utterance whose audio has all arrived
    /// plays at once, the first reply's too, instead of waiting for a watermark a short reply
    /// never reaches.
    public let textAwaited = Atomic<Bool>(false)
    /// Device-thread: the last marker played was an utterance's end, and no start followed.
    private var betweenUtterances = false
    /// Device-thread: a discard has faded out what played and is dropping audio.
    private var discarding = false
    private let wake: WakeSignal?
    /// Woken when an event is posted, so whoever follows the events (a live run's control
    /// thread) can sleep between them instead of polling. Events are rare: starts, underruns,
    /// markers, the end.
    private let eventWake: WakeSignal?
    /// Frames taken since the filler was last woken, and how many make a wake worth it.
    private var framesSinceWake = 0
    private let wakeQuantum: Int

    /// Debug builds: `render` runs on one thread at a time.
    private let renderCheck = ThreadTagCheck("Playhead.render")

    /// The output gains of the nodes before this sink's buffer, applied to what it plays
    /// (`PlayheadGains`); nil when none are handed over. Set before the graph runs.
    var outputGains: PlayheadGains? {
        didSet {
            outputGainsRef = outputGains.map { .passUnretained($0) }
            peakAfterGains = outputGains != nil
        }
    }
    /// Markers the playhead holds while it waits to reach their positions.
    static let heldMarkerCapacity = 256

    /// [audio-thread] Whether the held list is full and more markers wait in the edge's ring:
    /// the filler is blocked on markers, so waiting for more audio would wait forever.
    public var markersFull: Bool {
        heldMarkerCount == Self.heldMarkerCapacity && markers.availableElements() > 0
    }

    init(
        sampleRate: Int, channels: Int, fadeFrames: Int, capacityFrames: Int,
        watermarkFrames: Int, audio: consuming RingConsumer<Float>,
        markers: consuming RingConsumer<Marker>, events: consuming RingProducer<DrainEvent>,
        wake: WakeSignal?, eventWake: WakeSignal? = nil, prerollFrames: Int = 0
    ) {
        self.eventWake = eventWake
        prerollRemaining = max(0, prerollFrames)
        self.sampleRate = sampleRate
        self.channels = channels
        self.fadeFrames = max(1, fadeFrames)
        self.capacityFrames = capacityFrames
        self.audio = audio
        self.markers = markers
        self.events = events
        self.wake = wake
        // The filler is woken once half the edge is free, not every period: each wake of a
        // sleeping thread is a futex system call on the device thread, and the filler moves
        // audio in larger pieces for it; the edge still holds the other half. At a quarter,
        // a 3 s edge's wakes were 0.7 % of the periods, enough to set the callback's p99 —
        // half as many took it down by about an eighth (CHANGELOG.md, Earlier measurements, "jack: Half the edge").
        // And only when half of it is free: not every half edge taken, when the filler's own
        // looks (once a second, `LiveRun.idleLook`) keep a larger edge fuller than that.
        wakeQuantum = max(1, capacityFrames / 2)
        watermarkValue = Atomic(watermarkFrames)
        heldMarkers = .allocate(capacity: Self.heldMarkerCapacity)
    }

    deinit {
        heldMarkers.deallocate()
    }

    // MARK: Control side

    public var state: State { State(rawValue: stateValue.load(ordering: .acquiring))! }
    public var isFinished: Bool { state == .finished }
    /// Frames the device has rendered, silence included: the graph's clock.
    public var deviceFrames: Int { deviceFramesValue.load(ordering: .relaxed) }
    /// Frames of audio played from the stream (rendered into the device).
    public var playedFrames: Int { streamFramesValue.load(ordering: .relaxed) }
    /// Frames between rendering and hearing (the device's output latency); the device sets it.
    public var outputLatencyFrames: Int {
        get { outputLatencyValue.load(ordering: .relaxed) }
        set { outputLatencyValue.store(max(0, newValue), ordering: .relaxed) }
    }
    /// Frames of audio the listener has heard: `playedFrames` less the output latency.
    public var heardFrames: Int { max(0, playedFrames - outputLatencyFrames) }
    /// Times the audio ran out inside an utterance (or a stream without utterances): what a
    /// listener hears as a gap. Waiting between utterances for the next one is not counted.
    public var underruns: Int { underrunsValue.load(ordering: .relaxed) }
    /// Times the edge ran dry, between utterances included: each asks the processors to
    /// drain what they hold back (a fader's look-ahead, a crossfader's tail).
    public var drySpells: Int { drySpellsValue.load(ordering: .relaxed) }
    /// Monotonic wall seconds (`monotonicSeconds()`) when the device rendered the first audio
    /// of the stream; nil before.
    public var firstAudioWallTime: Double? {
        let bits = firstAudioWallBits.load(ordering: .relaxed)
        return bits == 0 ? nil : Double(bitPattern: bits)
    }
    /// Events dropped because the event ring was full (the reader fell far behind).
    public var droppedEvents: Int { droppedEventsValue.load(ordering: .relaxed) }

    /// Frames to buffer before playing; `Int.max` waits for the end of the stream.
    public var watermarkFrames: Int {
        get { watermarkValue.load(ordering: .relaxed) }
        set { watermarkValue.store(newValue, ordering: .relaxed) }
    }

    /// Asks the playhead to fade out within `fadeFrames` and finish.
    public func cancel() {
        cancelRequested.store(true, ordering: .releasing)
    }

    /// Asks the playhead to fade out within `fadeFrames` and hold: it plays silence and takes
    /// nothing more from its edge (so backpressure holds everything upstream) until `resume`.
    /// Nothing is torn down and nothing is dropped: the frames of the fade are the stream's
    /// next frames, and playback resumes at the frame after them.
    public func pause() {
        pauseRequested.store(true, ordering: .releasing)
    }

    /// Ends a pause: playback goes on from where it stopped, fading in over `fadeFrames`.
    public func resume() {
        pauseRequested.store(false, ordering: .releasing)
    }

    /// Barge-in: fades out what plays within `fadeFrames` and drops everything after it — audio
    /// and markers — until the marker that starts utterance `utterance` (or a later one)
    /// reaches the edge; from there playback goes on as after an underrun, fading in. The
    /// dropped frames count in `discardedFrames`, not as heard; their markers are not posted.
    public func discard(untilUtterance utterance: UtteranceID) {
        discardUntilValue.store(Int(utterance.rawValue), ordering: .releasing)
    }

    /// [any-thread] Turns peak measuring on or off; off (the default) the device thread does
    /// no work for it.
    public func meterPeaks(_ on: Bool) {
        metering.store(on, ordering: .relaxed)
    }

    /// [any-thread] The largest absolute sample played since the last call (a level meter's
    /// reading, while `meterPeaks(true)`), and starts over.
    public func takePeak() -> Float {
        Float(bitPattern: peakBits.exchange(0, ordering: .relaxed))
    }

    /// Frames dropped by `discard` (they advanced the stream position unheard).
    public var discardedFrames: Int { discardedFramesValue.load(ordering: .relaxed) }

    /// True while a pause holds (after its fade-out, until `resume`): false from the moment
    /// `resume` is asked, though the device thread lets go of the hold only at its next period
    /// with audio to play.
    public var isPaused: Bool { pausedValue.load(ordering: .acquiring) && pauseRequested.load(ordering: .acquiring) }

    // MARK: Device side

    /// Posted by the graph whenever audio or markers reach the sink's edge; a device that
    /// is not clocked (a file) sleeps on it.
    public let dataArrived = WakeSignal()

    /// [audio-thread] Whether `render(frames:)` would play audio without waiting for the
    /// watermark or running dry: for unclocked sinks (files), which never want silence.
    public func isReady(toRender frames: Int) -> Bool {
        if cancelRequested.load(ordering: .acquiring) { return true }
        let current = State(rawValue: stateValue.load(ordering: .relaxed))!
        if current == .finished { return true }
        collectMarkers()
        let available = audio.availableElements() / channels
        let position = streamFramesValue.load(ordering: .relaxed)
        if position + available >= endPosition { return true }
        if current == .buffering && markersFull && available >= frames { return true }
        let needed = current == .playing ? frames : max(frames, min(watermarkValue.load(ordering: .relaxed), capacityFrames))
        return available >= needed
    }

    /// [audio-thread] Notes where the period starts, for the events it posts; returns its
    /// first device frame. The device's clock is read only if an event is posted: most
    /// periods post none, and reading JACK's clock touches the server's shared memory.
    @inline(__always)
    private func beginPeriod() -> Int {
        let deviceStart = deviceFramesValue.load(ordering: .relaxed)
        periodDeviceStart = deviceStart
        if deviceClock == nil {
            periodDeviceTime = UInt64(deviceStart)
        } else {
            periodDeviceTimeKnown = false
        }
        return deviceStart
    }

    /// [audio-thread] Renders `frames` interleaved frames into `output`.
    ///
    /// - Returns: whether the stream has finished (played out or cancelled).
    @discardableResult
    public func render(into output: UnsafeMutablePointer<Float>, frames: Int) -> Bool {
        renderCheck.enter()
        defer { renderCheck.exit() }
        guard let gainsRef = outputGainsRef else { return renderStream(into: output, frames: frames) }
        let streamFrame = streamFramesValue.load(ordering: .relaxed)
        let finished = renderStream(into: output, frames: frames)
        gainsRef._withUnsafeGuaranteedRef { $0.apply(to: output, frames: frames, streamFrame: streamFrame) }
        // The peak of what is heard: after the gains.
        if _slowPath(metering.load(ordering: .relaxed)) { notePeak(of: output, count: frames * channels) }
        return finished
    }

    /// `render` before the output gains of the nodes before the buffer.
    private func renderStream(into output: UnsafeMutablePointer<Float>, frames: Int) -> Bool {
        let deviceStart = beginPeriod()
        defer { deviceFramesValue.store(deviceStart + frames, ordering: .releasing) }
        var current = State(rawValue: stateValue.load(ordering: .relaxed))!
        guard current != .finished else {
            output.update(repeating: 0, count: frames * channels)
            return true
        }
        collectMarkers()
        let available = audio.availableElements() / channels
        let position = streamFramesValue.load(ordering: .relaxed)
        let ended = position + available >= endPosition

        if cancelRequested.load(ordering: .acquiring) {
            let faded = current == .playing ? min(available, fadeFrames) : 0
            let written = take(faded, into: output)
            applyFade(output, frames: written, fadingIn: false, offset: 0, length: written)
            silence(output + written * channels, frames: frames - written)
            finish(.cancelled, deviceFrame: deviceStart + written)
            return true
        }

        if discardUntilValue.load(ordering: .acquiring) >= 0 {
            return renderDiscard(into: output, frames: frames, deviceStart: deviceStart, playing: current == .playing, available: available)
        }
        if pauseRequested.load(ordering: .acquiring) {
            return renderPause(into: output, frames: frames, deviceStart: deviceStart, playing: current == .playing, available: available)
        }
        if holding {
            holding = false
            pausedValue.store(false, ordering: .releasing)
            if current == .playing { fadeInRemaining = fadeFrames }
        }

        if current == .buffering {
            let watermark = max(watermarkValue.load(ordering: .relaxed), 1)
            // Full of markers counts as full of audio: the source cannot send more until
            // some play (a generate-first stream of hundreds of short utterances).
            // Once playing has begun, an utterance whose audio has all arrived plays out
            // without waiting for the watermark again: nothing more is coming for it (its
            // tail, released by the drain a dry spell asks for, would otherwise wait for the
            // next reply). The first start keeps the strategy's watermark.
            if available >= min(watermark, capacityFrames) || (ended && (available > 0 || position >= endPosition))
                || (markersFull && available > 0)
                || ((hasStarted || textAwaited.load(ordering: .relaxed)) && available > 0
                    && utteranceCompletes(within: position + available)) {
                current = .playing
                stateValue.store(current.rawValue, ordering: .releasing)
                post(hasStarted ? .underrunEnd : .started, deviceFrame: deviceStart + min(prerollRemaining, frames), streamFrame: position)
                if hasStarted {
                    fadeInRemaining = fadeFrames
                } else {
                    // clock_gettime(CLOCK_MONOTONIC) is a vDSO read: no system call, no lock.
                    firstAudioWallBits.store(monotonicSeconds().bitPattern, ordering: .relaxed)
                }
                hasStarted = true
            } else {
                silence(output, frames: frames)
                return false
            }
        }

        // Playing. A sink fed in the cycle first plays its nodes' latency as silence.
        if prerollRemaining > 0 {
            let silent = min(prerollRemaining, frames)
            silence(output, frames: silent)
            prerollRemaining -= silent
            guard silent < frames else { return false }
            return renderPlaying(into: output + silent * channels, frames: frames - silent, deviceStart: deviceStart + silent, available: available)
        }
        return renderPlaying(into: output, frames: frames, deviceStart: deviceStart, available: available)
    }

    /// [audio-thread] Plays a period the cycle's nodes already wrote into `output` (`frames`
    /// interleaved frames): a sink fed frame for frame in the cycle, whose edge is the
    /// period's own buffer rather than a ring. Such a stream never runs dry and has no
    /// markers, so what is left of `render` is the start, the counts, a pause and its resume
    /// (faded, the input passing unheard meanwhile), and a cancel's fade. A discard waits for
    /// an utterance that live input never brings, so it is ignored.
    ///
    /// - Returns: whether the stream has finished (cancelled).
    @discardableResult
    public func renderInPlace(_ output: UnsafeMutablePointer<Float>, frames: Int) -> Bool {
        renderCheck.enter()
        defer { renderCheck.exit() }
        let deviceStart = beginPeriod()
        defer { deviceFramesValue.store(deviceStart + frames, ordering: .releasing) }
        var current = State(rawValue: stateValue.load(ordering: .relaxed))!
        // The steady state (playing, nothing asked) falls straight through to the count: the
        // hints keep the rare branches out of its way, in a few cache lines (CHANGELOG.md,
        // Earlier measurements, "jack: Fewer lines a period").
        guard _fastPath(current != .finished) else {
            silence(output, frames: frames)
            return true
        }
        if _slowPath(cancelRequested.load(ordering: .acquiring)) {
            let faded = current == .playing && !holding ? fadeOutInPlace(output, frames: frames) : 0
            silence(output + faded * channels, frames: frames - faded)
            finish(.cancelled, deviceFrame: deviceStart + faded)
            return true
        }
        if _slowPath(pauseRequested.load(ordering: .acquiring)) {
            var faded = 0
            if !holding {
                holding = true
                if current == .playing { faded = fadeOutInPlace(output, frames: frames) }
                pausedValue.store(true, ordering: .releasing)
            }
            silence(output + faded * channels, frames: frames - faded)
            return false
        }
        if _slowPath(holding) {
            holding = false
            pausedValue.store(false, ordering: .releasing)
            if current == .playing { fadeInRemaining = fadeFrames }
        }
        if _slowPath(current == .buffering) {
            current = .playing
            stateValue.store(current.rawValue, ordering: .releasing)
            post(.started, deviceFrame: deviceStart, streamFrame: streamFramesValue.load(ordering: .relaxed))
            // clock_gettime(CLOCK_MONOTONIC) is a vDSO read: no system call, no lock.
            firstAudioWallBits.store(monotonicSeconds().bitPattern, ordering: .relaxed)
            hasStarted = true
        }
        if _slowPath(fadeInRemaining > 0) {
            let length = min(fadeInRemaining, frames)
            applyFade(output, frames: length, fadingIn: true, offset: fadeFrames - fadeInRemaining, length: fadeFrames)
            fadeInRemaining -= length
        }
        countPlayed(output, frames: frames)
        return false
    }

    /// [audio-thread] Fades out the first frames of `output` in place (within `fadeFrames`; a
    /// fade-in under way goes on under it, as in `fadeOutNext`) and counts them as played.
    private func fadeOutInPlace(_ output: UnsafeMutablePointer<Float>, frames: Int) -> Int {
        let faded = min(frames, fadeFrames)
        if fadeInRemaining > 0 {
            let length = min(fadeInRemaining, faded)
            applyFade(output, frames: length, fadingIn: true, offset: fadeFrames - fadeInRemaining, length: fadeFrames)
            fadeInRemaining = 0
        }
        applyFade(output, frames: faded, fadingIn: false, offset: 0, length: faded)
        countPlayed(output, frames: faded)
        return faded
    }

    /// [audio-thread] Counts `frames` frames of `output` as played, measuring their peak while
    /// a meter reads it.
    private func countPlayed(_ output: UnsafeMutablePointer<Float>, frames: Int) {
        if _slowPath(metering.load(ordering: .relaxed)) && !peakAfterGains { notePeak(of: output, count: frames * channels) }
        streamFramesValue.store(streamFramesValue.load(ordering: .relaxed) + frames, ordering: .releasing)
    }

    /// The largest magnitude, compared as bits: a non-negative float's bit pattern orders as
    /// its value does, and an integer maximum is vectorised, where a float one (NaN rules) is
    /// a dependent chain the length of the period; it was what metering cost the callback.
    private func notePeak(of samples: UnsafeMutablePointer<Float>, count: Int) {
        let before = peakBits.load(ordering: .relaxed)
        // SAFETY: Float and UInt32 have the same size and alignment; the samples are only read.
        let peak = samples.withMemoryRebound(to: UInt32.self, capacity: count) { words in
            var peak = before
            for index in 0..<count { peak = max(peak, words[index] & 0x7FFF_FFFF) }
            return peak
        }
        if peak > before { peakBits.store(peak, ordering: .relaxed) }
    }

    /// [audio-thread] A discard (barge-in): the first period fades out what plays, then audio
    /// and markers are dropped until the awaited utterance's start reaches the edge; the
    /// period after that renders as usual, from `buffering`. Returns whether the stream
    /// finished.
    private func renderDiscard(
        into output: UnsafeMutablePointer<Float>, frames: Int, deviceStart: Int, playing: Bool, available: Int
    ) -> Bool {
        var written = 0
        if !discarding {
            discarding = true
            if playing && prerollRemaining == 0 && !holding {
                written = fadeOutNext(min(available, fadeFrames, frames), into: output)
            }
            // Nothing plays until the next reply: waiting for it, as between utterances.
            stateValue.store(State.buffering.rawValue, ordering: .releasing)
            betweenUtterances = true
        }
        silence(output + written * channels, frames: frames - written)
        let awaited = discardUntilValue.load(ordering: .acquiring)
        while true {
            collectMarkers()
            let position = streamFramesValue.load(ordering: .relaxed)
            // The awaited start, if it has reached the edge; else everything there is goes.
            var found = heldMarkerCount
            var index = 0
            while index < heldMarkerCount {
                if case .utteranceStart(let id) = heldMarkers[index].event, Int(id.rawValue) >= awaited {
                    found = index
                    break
                }
                index += 1
            }
            let target = found < heldMarkerCount ? heldMarkers[found].position : Int.max
            let dropped = min(audio.availableElements() / channels, max(0, target - position))
            if dropped > 0 {
                _ = audio.skip(dropped * channels)
                streamFramesValue.store(position + dropped, ordering: .releasing)
                discardedFramesValue.add(dropped, ordering: .relaxed)
            }
            let now = position + dropped
            // Markers before the awaited start go unposted: their audio was not heard.
            var passed = 0
            while passed < found && heldMarkers[passed].position <= now {
                if case .endOfStream = heldMarkers[passed].event { break }
                passed += 1
            }
            if passed > 0 {
                heldMarkers.update(from: heldMarkers + passed, count: heldMarkerCount - passed)
                heldMarkerCount -= passed
            }
            if now >= endPosition {
                postHeldMarkers(upTo: now)
                finish(.finished, deviceFrame: deviceStart + written)
                return true
            }
            if target != Int.max && now >= target {
                // The next reply begins: it plays as after an underrun (watermark, fade-in).
                discarding = false
                discardUntilValue.store(-1, ordering: .releasing)
                stateValue.store(State.buffering.rawValue, ordering: .releasing)
                betweenUtterances = true
                wake?.post()
                return false
            }
            if dropped == 0 && passed == 0 {
                // Room was made: whoever fills the edge goes on (and may bring the start).
                wake?.post()
                return false
            }
        }
    }

    /// [audio-thread] Plays the stream's next `frames` frames fading out (a pause's or a
    /// discard's first period); how many there were. A fade-in under way goes on too, as the
    /// fade-out's starting gain would otherwise jump: both apply, so the gain only ever falls.
    private func fadeOutNext(_ frames: Int, into output: UnsafeMutablePointer<Float>) -> Int {
        let written = take(frames, into: output)
        if fadeInRemaining > 0 {
            let length = min(fadeInRemaining, written)
            applyFade(output, frames: length, fadingIn: true, offset: fadeFrames - fadeInRemaining, length: fadeFrames)
            fadeInRemaining = 0
        }
        applyFade(output, frames: written, fadingIn: false, offset: 0, length: written)
        return written
    }

    /// [audio-thread] A pause: the first period fades out what plays (the stream's next
    /// frames, within `fadeFrames`), then silence, taking nothing, until resumed.
    private func renderPause(
        into output: UnsafeMutablePointer<Float>, frames: Int, deviceStart: Int, playing: Bool, available: Int
    ) -> Bool {
        var written = 0
        if !holding {
            holding = true
            if playing && prerollRemaining == 0 {
                written = fadeOutNext(min(available, fadeFrames, frames), into: output)
            }
            pausedValue.store(true, ordering: .releasing)
        }
        silence(output + written * channels, frames: frames - written)
        if streamFramesValue.load(ordering: .relaxed) >= endPosition {
            finish(.finished, deviceFrame: deviceStart + written)
            return true
        }
        return false
    }

    /// [audio-thread] The playing state's part of `render`.
    private func renderPlaying(into output: UnsafeMutablePointer<Float>, frames: Int, deviceStart: Int, available: Int) -> Bool {
        let wanted = min(frames, available)
        let written = take(wanted, into: output)
        if fadeInRemaining > 0 {
            let length = min(fadeInRemaining, written)
            applyFade(output, frames: length, fadingIn: true, offset: fadeFrames - fadeInRemaining, length: fadeFrames)
            fadeInRemaining -= length
        }
        let after = streamFramesValue.load(ordering: .relaxed)
        if after >= endPosition {
            silence(output + written * channels, frames: frames - written)
            finish(.finished, deviceFrame: deviceStart + written)
            return true
        }
        if written < frames {
            // The edge ran dry: fade out what was taken, silence the rest, re-arm.
            let faded = min(written, fadeFrames)
            applyFade(output + (written - faded) * channels, frames: faded, fadingIn: false, offset: 0, length: faded)
            silence(output + written * channels, frames: frames - written)
            fadeInRemaining = 0
            drySpellsValue.add(1, ordering: .relaxed)
            if !atUtteranceBoundary { underrunsValue.add(1, ordering: .relaxed) }
            stateValue.store(State.buffering.rawValue, ordering: .releasing)
            post(.underrunStart, deviceFrame: deviceStart + written, streamFrame: after)
            // The filler releases what its nodes hold back (a fader's look-ahead, a
            // crossfader's tail) once it sees the dry spell: now, not at its next look.
            wake?.post()
        }
        return false
    }

    /// [audio-thread] Whether running dry now is waiting for the next utterance rather than a
    /// gap in one: the last utterance ended, or its end is the next marker (its last frames
    /// are held back upstream, by a fader's look-ahead or a crossfader's tail, until the
    /// drain this dry spell asks for).
    private var atUtteranceBoundary: Bool {
        if betweenUtterances { return true }
        guard heldMarkerCount > 0 else { return false }
        if case .utteranceEnd = heldMarkers[0].event { return true }
        return false
    }

    /// [audio-thread] Whether a held utterance-end marker lies at or before `position`.
    private func utteranceCompletes(within position: Int) -> Bool {
        var index = 0
        while index < heldMarkerCount && heldMarkers[index].position <= position {
            if case .utteranceEnd = heldMarkers[index].event { return true }
            index += 1
        }
        return false
    }

    /// Copies `frames` frames from the edge, posting the markers they pass.
    private func take(_ frames: Int, into output: UnsafeMutablePointer<Float>) -> Int {
        guard frames > 0 else { return 0 }
        let copied = audio.pop(into: UnsafeMutableBufferPointer(start: output, count: frames * channels)) / channels
        if _slowPath(metering.load(ordering: .relaxed)) && !peakAfterGains { notePeak(of: output, count: copied * channels) }
        let start = streamFramesValue.load(ordering: .relaxed)
        let end = start + copied
        streamFramesValue.store(end, ordering: .releasing)
        postReachedMarkers(upTo: end)
        framesSinceWake += copied
        // Only while the edge is at most half full: a filler that keeps it fuller on its own
        // looks (the worker's, a source's) needs no wake, and the device thread then makes no
        // system call at all.
        if _slowPath(framesSinceWake >= wakeQuantum) && audio.availableElements() / channels <= capacityFrames - wakeQuantum {
            framesSinceWake = 0
            wake?.post()
        }
        return copied
    }

    /// Moves markers from the edge's marker ring into the held list, noting the end.
    ///
    /// A flood of markers with no audio between them and what has played (a text source's
    /// lines that made no sound) would fill the held list and then the edge's marker ring
    /// while the playhead waits for audio that can only come after them: the source stalls
    /// and the run hangs. Such markers are already reached, so when the held list is full
    /// they are posted at once, as if played, and the filler is woken to send more.
    private func collectMarkers() {
        while true {
            while heldMarkerCount < Self.heldMarkerCapacity, let marker = markers.pop() {
                if case .endOfStream = marker.event { endPosition = min(endPosition, marker.position) }
                heldMarkers[heldMarkerCount] = marker
                heldMarkerCount += 1
            }
            let position = streamFramesValue.load(ordering: .relaxed)
            guard heldMarkerCount == Self.heldMarkerCapacity, heldMarkers[0].position <= position else { return }
            postHeldMarkers(upTo: position)
            wake?.post()
        }
    }

    private func postReachedMarkers(upTo position: Int) {
        if postHeldMarkers(upTo: position) > 0 { collectMarkers() }
    }

    /// Posts the held markers at or before `position`; how many.
    @discardableResult
    private func postHeldMarkers(upTo position: Int) -> Int {
        var reached = 0
        while reached < heldMarkerCount && heldMarkers[reached].position <= position {
            let marker = heldMarkers[reached]
            switch marker.event {
            case .utteranceEnd: betweenUtterances = true
            case .utteranceStart: betweenUtterances = false
            default: break
            }
            post(.marker, deviceFrame: deviceFramesValue.load(ordering: .relaxed), streamFrame: marker.position, marker: marker)
            reached += 1
        }
        guard reached > 0 else { return 0 }
        (heldMarkers).update(from: heldMarkers + reached, count: heldMarkerCount - reached)
        heldMarkerCount -= reached
        return reached
    }

    private func finish(_ kind: DrainEvent.Kind, deviceFrame: Int) {
        stateValue.store(State.finished.rawValue, ordering: .releasing)
        post(kind, deviceFrame: deviceFrame, streamFrame: streamFramesValue.load(ordering: .relaxed))
        wake?.post()
    }

    private func post(_ kind: DrainEvent.Kind, deviceFrame: Int, streamFrame: Int, marker: Marker? = nil) {
        if !periodDeviceTimeKnown, let deviceClock {
            periodDeviceTime = deviceClock.read(deviceClock.context)
            periodDeviceTimeKnown = true
        }
        let deviceTime = periodDeviceTime &+ UInt64(max(0, deviceFrame - periodDeviceStart))
        if !events.push(DrainEvent(kind: kind, deviceFrame: deviceFrame, streamFrame: streamFrame, deviceTime: deviceTime, marker: marker)) {
            droppedEventsValue.add(1, ordering: .relaxed)
        }
        eventWake?.post()
    }

    private func silence(_ output: UnsafeMutablePointer<Float>, frames: Int) {
        guard frames > 0 else { return }
        output.update(repeating: 0, count: frames * channels)
    }

    /// Raised-cosine gain over `length` frames; `offset` is where in the fade `output` starts.
    private func applyFade(_ output: UnsafeMutablePointer<Float>, frames: Int, fadingIn: Bool, offset: Int, length: Int) {
        guard frames > 0, length > 0 else { return }
        // Fade-outs end at zero on the frame after the last one; fade-ins start from zero on
        // the frame before the first one, so neither edge is a step. The gain is
        // ½ − ½·cos(π·(offset + frame + 1)/(length + 1)): its cosine is stepped by a rotation,
        // four trigonometric calls a fade rather than one a frame on the device thread.
        let step = Double.pi / Double(length + 1)
        let start = step * Double(offset + 1)
        var cosine = cos(start), sine = sin(start)
        let stepCosine = cos(step), stepSine = sin(step)
        for frame in 0..<frames {
            let rising = Float(0.5 - 0.5 * cosine)
            let gain = fadingIn ? rising : 1 - rising
            for channel in 0..<channels { output[frame * channels + channel] *= gain }
            (cosine, sine) = (cosine * stepCosine - sine * stepSine, sine * stepCosine + cosine * stepSine)
        }
    }
}

/// A device's clock as a playhead reads it when it stamps an event: a C function of one
/// context pointer, so reading it on the device thread retains nothing (JACK's device passes
/// `jack_last_frame_time` of its client: the frame time at the period's start).
public struct DeviceClock: @unchecked Sendable {
    public let read: @convention(c) (UnsafeMutableRawPointer?) -> UInt64
    public let context: UnsafeMutableRawPointer?

    public init(read: @convention(c) (UnsafeMutableRawPointer?) -> UInt64, context: UnsafeMutableRawPointer?) {
        self.read = read
        self.context = context
    }
}
