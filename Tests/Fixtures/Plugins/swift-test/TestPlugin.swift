// Test-only plugin written in Swift with SluicePluginKit: a gain processor and a provider
// that serves known PCM in chunks. Tests/SluicePluginsTests loads it by path and runs both
// in graphs.
import SluicePluginABI
import SluicePluginKit
import Synchronization

@c(sluice_plugin_entry)
public func sluicePluginEntry() -> UnsafePointer<sluice_plugin_entry_t>? {
    SluicePlugin.entry {
        [
            .processor(TestGain.description, make: { parameters throws(PluginError) in try TestGain(parameters) }),
            .provider(TestPCM.description, make: { parameters throws(PluginError) in TestPCM(parameters) }),
        ]
    }
}

/// `test-gain`: out = in × gain, on every channel. `gain` is live and steps to a new value at
/// its event's offset (no ramp: a test sees the exact frame). With `gate`, the output is
/// silent from an utterance-end marker to the next utterance start (markers as events).
final class TestGain: Processor {
    static let description = NodeDescription(
        typeName: "test-gain", kind: .processor, summary: "Multiplies every sample by `gain` (a Swift-kit test processor).",
        inputs: [Port("in", .frames, summary: "Float32 frames")],
        outputs: [Port("out", .frames, summary: "The same frames times `gain`")],
        parameters: [
            Parameter("gain", .number(0...4), default: .number(1), live: true, summary: "Linear gain; live, stepping at its frame."),
            Parameter("channels", .integer(0...8), default: .integer(0), summary: "Channels it accepts; 0 any."),
            Parameter("gate", .boolean, default: .boolean(false), summary: "Silence between an utterance's end and the next start."),
        ])

    var gain: Float
    let acceptedChannels: Int
    let gates: Bool
    /// Between an utterance end and the next start, when `gates`.
    var closed = false

    init(_ parameters: Parameters) throws(PluginError) {
        gain = Float(parameters.double("gain") ?? 1)
        acceptedChannels = parameters.integer("channels") ?? 0
        gates = parameters.boolean("gate") ?? false
    }

    func activate(sampleRate: Int, maximumFrames: Int, channels: Int) throws(PluginError) {
        if acceptedChannels != 0 && channels != acceptedChannels {
            throw PluginError(code: "channels", message: "test-gain was set to \(acceptedChannels) channels, got \(channels)")
        }
    }

    func reset() {
        closed = false
    }

    func process(_ block: ProcessBlock) -> Bool {
        let input = block.input(0)
        let output = block.output(0)
        let events = block.events
        let channels = block.channels
        var next = 0
        var frame = 0
        // Indexed, not iterated: reading an event allocates nothing.
        while frame < block.frames {
            var end = block.frames
            while next < events.count && events[next].offset <= frame {
                apply(events[next])
                next += 1
            }
            if next < events.count { end = min(end, events[next].offset) }
            let level = closed ? 0 : gain
            for index in (frame * channels)..<(end * channels) { output[index] = input[index] * level }
            frame = end
        }
        while next < events.count {
            apply(events[next])
            next += 1
        }
        return true
    }

    private func apply(_ event: ProcessEvent) {
        switch event {
        case .parameter(let index, let value, _) where index == 0:
            gain = Float(value)
        case .marker(let marker, _) where gates:
            switch marker.event {
            case .utteranceEnd: closed = true
            case .utteranceStart: closed = false
            default: break
            }
        default:
            break
        }
    }
}

/// `test-pcm`: each utterance plays `100 × (its text's UTF-8 bytes)` frames of S16LE 16 kHz
/// mono, frame n of an utterance being `(n × 37) mod 2000 − 1000`; `read` hands out at most
/// `chunk` bytes, returns "would block" every other call when `stutter` is set, and fails
/// with code `test-failure` once `fail-after` bytes were read (0: never). With `incremental`
/// it declares SLUICE_PROVIDER_INCREMENTAL_TEXT and an utterance's frames are readable as its
/// text is pushed, before `endUtterance`; counter `pushes` counts `push(text:)` calls.
final class TestPCM: Provider {
    static let description = NodeDescription(
        typeName: "test-pcm", kind: .provider, summary: "Serves known PCM per utterance, in chunks (a Swift-kit test provider).",
        outputs: [Port("out", .bytes, summary: "S16LE 16000 Hz mono")],
        parameters: [
            Parameter("chunk", .integer(1...65_536), default: .integer(100), unit: "bytes", summary: "Most bytes one read returns."),
            Parameter("stutter", .boolean, default: .boolean(false), summary: "Return 'would block' every other read."),
            Parameter("fail-after", .integer(0...1_000_000), default: .integer(0), unit: "bytes", summary: "Fail once this many bytes were read; 0 never."),
            Parameter("incremental", .boolean, default: .boolean(false), summary: "Speak pushed text before the utterance ends."),
        ])

    static func sample(_ frame: Int) -> Int16 { Int16((frame * 37) % 2000 - 1000) }

    struct State {
        var pending = ""
        var open = false
        /// Frames of each utterance not yet fully read (the last one still growing while
        /// `open`, in incremental mode).
        var ready: [Int] = []
        var pushes = 0
        var textEnded = false
        /// Bytes of the current utterance already read.
        var byte = 0
        var stutter = false
        var total = 0
    }

    let chunk: Int
    let stutters: Bool
    let failAfter: Int
    let acceptsIncrementalText: Bool
    private let state = Mutex(State())
    private let cancelled = Atomic<Bool>(false)

    init(_ parameters: Parameters) {
        chunk = parameters.integer("chunk") ?? 100
        stutters = parameters.boolean("stutter") ?? false
        failAfter = parameters.integer("fail-after") ?? 0
        acceptsIncrementalText = parameters.boolean("incremental") ?? false
    }

    var format: PCMFormat { PCMFormat(.s16le, sampleRate: 16_000, channels: 1) }

    func beginUtterance() throws(PluginError) {
        try state.withLock { (state) throws(PluginError) in
            if state.open { throw PluginError(code: "utterance-open", message: "an utterance is already open") }
            state.open = true
            state.pending = ""
            if acceptsIncrementalText { state.ready.append(0) }
        }
    }

    func push(text: String) throws(PluginError) {
        try state.withLock { (state) throws(PluginError) in
            guard state.open else { throw PluginError(code: "no-utterance", message: "text pushed outside an utterance") }
            state.pending += text
            state.pushes += 1
            if acceptsIncrementalText { state.ready[state.ready.count - 1] += 100 * text.utf8.count }
        }
    }

    func endUtterance() throws(PluginError) {
        state.withLock { state in
            if !acceptsIncrementalText { state.ready.append(100 * state.pending.utf8.count) }
            state.open = false
        }
    }

    func endText() {
        state.withLock { $0.textEnded = true }
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> ReadResult {
        if cancelled.load(ordering: .acquiring) { return .end }
        return state.withLock { state in
            if stutters {
                state.stutter.toggle()
                if state.stutter { return .wouldBlock }
            }
            if failAfter > 0 && state.total >= failAfter {
                return .failed(PluginError(code: "test-failure", message: "failed after \(state.total) bytes, as asked"))
            }
            guard let frames = state.ready.first else { return state.textEnded ? .end : .wouldBlock }
            let byteOffset = state.byte
            if byteOffset == frames * 2 {
                // The utterance still taking text has nothing more yet.
                if acceptsIncrementalText && state.open && state.ready.count == 1 { return .wouldBlock }
                state.ready.removeFirst()
                state.byte = 0
                return .utteranceEnd
            }
            // A chunk may end inside a frame; the next read goes on from that byte.
            let count = min(buffer.count, chunk, frames * 2 - byteOffset)
            for index in 0..<count {
                let byte = byteOffset + index
                let value = UInt16(bitPattern: Self.sample(byte / 2))
                buffer[index] = byte % 2 == 0 ? UInt8(value & 0xFF) : UInt8(value >> 8)
            }
            state.total += count
            state.byte = byteOffset + count
            return .data(count)
        }
    }

    func cancel() {
        cancelled.store(true, ordering: .releasing)
    }

    var counters: [Counter] {
        state.withLock { state in
            [Counter("bytes-read", Int64(state.total)), Counter("pushes", Int64(state.pushes))]
        }
    }
}
