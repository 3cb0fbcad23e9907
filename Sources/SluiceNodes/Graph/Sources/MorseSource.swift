import Glibc
import SluiceAudio
import SluiceGraph
import Synchronization

/// The `morse` node: a text-driven source that keys text as Morse code, so `--text` and the
/// marker machinery (utterances, text spans) can be used and tested without a speech plugin.
///
/// Timing, in frames, with the dit `D = max(1, round(1.2 / wpm × rate))` (PARIS timing):
/// - a dit is keyed for `D`, a dah for `3D`;
/// - `D` of silence between the elements of a letter, `3D` between letters, `7D` between
///   words;
/// - each utterance ends with `7D` of silence, inside the utterance, so utterances follow one
///   another as words do.
///
/// Text: each `receive(text:)` is one utterance, with ids 0, 1, 2… in order. Words are the
/// runs of non-whitespace characters; letters A–Z (any case), digits and the punctuation
/// `.,?'!/()&:;=+-_"$@` are keyed, anything else is skipped, and a word with nothing to key
/// is skipped whole (no gap, no span). An utterance with nothing to key has no frames: its
/// start and end markers share a position.
///
/// Markers, at positions in the output: `utteranceStart(id)` at the utterance's first frame;
/// `textSpan` for each keyed word (UTF-8 byte offsets of the whole word within that
/// utterance's text, plus the offset `receive(text:at:)` gave) at the word's first keyed frame; `utteranceEnd(id)` after its last frame
/// (after the trailing silence).
///
/// Samples: keyed frame `i` of an element `L` frames long (counting from the element's first
/// frame) is `A · g · sin(2π · frac(f·i/rate))`, where the raised-cosine gain
/// `g = ramp(min(i, L − 1 − i))`, `ramp(j) = j < R ? (1 − cos(π·(j+1)/(R+1))) / 2 : 1`, with
/// the ramp `R = min(round(0.005 × rate), ⌊D / 2⌋)`: 5 ms, inside the element so timing stays
/// exact, and never a step at a keying edge. Silence is 0. Every channel is the same.
///
/// Threading: `receive(text:)`, `finishText()` and `cancel()` may come from any thread; the
/// queue is behind a `Mutex` and a semaphore wakes a `produce` that is waiting for text (it
/// sleeps on it, in 100 ms slices, and never spins).
public final class MorseSource: TextDrivenSource, @unchecked Sendable {
    // SAFETY (@unchecked Sendable): what several threads touch is in `shared` (a Mutex), in
    // atomics, or the semaphore; the rendering state below is touched only by `produce`, on
    // the one source thread, and by `prepare`/`reset` on the control thread while no run is
    // going.

    public static let type = NodeType(
        NodeDescriptor(
            typeName: "morse", kind: .source,
            summary: "Keys the text it is given as Morse code: a text-driven source needing no plugin.",
            outputs: [PortDescriptor("out", .frames, summary: "Float32 frames at `rate`, `channels` channels")],
            parameters: [
                ParameterDescriptor(
                    "frequency", .number(20...20_000), default: .number(600), unit: "Hz",
                    summary: "Pitch of the keyed tone."),
                ParameterDescriptor(
                    "wpm", .number(5...60), default: .number(20), unit: "words/min",
                    summary: "Speed; a dit lasts 1.2 / wpm seconds."),
                ParameterDescriptor(
                    "amplitude", .number(0...1), default: .number(0.5),
                    summary: "Peak value of the tone (full scale is 1)."),
                SourceParameters.rate,
                SourceParameters.channels,
            ])
    ) { parameters in
        MorseSource(
            frequency: parameters.double("frequency"), wpm: parameters.double("wpm"),
            amplitude: parameters.double("amplitude"), rate: parameters.rate("rate"),
            channels: parameters.integer("channels"))
    }

    /// A stretch of an utterance, in dits: keyed (an element) or silent (a gap).
    struct Segment: Hashable, Sendable {
        var dits: Int
        var keyed: Bool
        /// The word this element starts, announced at its first frame.
        var span: TextSpan?
    }

    struct Utterance: Sendable {
        var id: UtteranceID
        var segments: [Segment]
        var dits: Int { segments.reduce(0) { $0 + $1.dits } }
    }

    private struct Shared: ~Copyable {
        var queue: [Utterance] = []
        var head = 0
        var textFinished = false
        var nextID: UInt32 = 0
        /// Dits of everything received, for `expectedDuration`.
        var totalDits = 0
    }

    public let frequency: Double
    public let wpm: Double
    public let amplitude: Double
    /// The rate asked for, or nil for `auto`.
    public let requestedRate: Int?
    public let channels: Int

    private let shared = Mutex(Shared())
    private let textArrived = WakeSignal()
    private let cancelled = Atomic<Bool>(false)

    // Rendering state: the source thread's.
    private var rate = 0
    private var ditFrames = 0
    private var rampFrames = 0
    private var current: Utterance?
    private var segmentIndex = 0
    private var segmentOffset = 0
    private var startEmitted = false
    private var segmentOpened = false
    /// Frames produced since the stream began: marker positions count from there.
    private var streamPosition = 0

    public init(frequency: Double = 600, wpm: Double = 20, amplitude: Double = 0.5, rate: Int? = 48_000, channels: Int = 1) {
        precondition(wpm > 0, "a speed needs words per minute")
        precondition(channels > 0, "a source needs at least one channel")
        self.frequency = frequency
        self.wpm = wpm
        self.amplitude = amplitude
        requestedRate = rate
        self.channels = channels
    }

    /// Frames in a dit, once prepared.
    public var ditLength: Int { ditFrames }
    /// Frames each keying edge ramps over, once prepared.
    public var rampLength: Int { rampFrames }

    /// Known once `finishText()` was called: the length of everything received.
    public var expectedDuration: Double? {
        let (finished, dits) = shared.withLock { ($0.textFinished, $0.totalDits) }
        guard finished else { return nil }
        return rate > 0 ? Double(dits * ditFrames) / Double(rate) : Double(dits) * 1.2 / wpm
    }

    public func outputFormats(for inputs: [StreamFormat], context: FormatContext) throws(FormatMismatch) -> [StreamFormat] {
        [.frames(rate: requestedRate ?? context.downstreamRate ?? 48_000, channels: channels)]
    }

    public func prepare(_ context: PrepareContext) throws {
        guard let output = context.outputFormats.first else {
            throw NodeCreationError("'morse' was prepared without an output format")
        }
        rate = output.sampleRate
        ditFrames = max(1, Int((1.2 / wpm * Double(rate)).rounded()))
        rampFrames = min(Int((0.005 * Double(rate)).rounded()), ditFrames / 2)
        current = nil
        streamPosition = 0
    }

    // MARK: Text

    public func receive(text: String) {
        receive(text: text, at: 0)
    }

    /// Spans are then offsets into the whole text: `offset` plus the word's offset in `text`.
    public func receive(text: String, at offset: Int) {
        shared.withLock { state in
            let id = UtteranceID(state.nextID)
            state.nextID &+= 1
            let utterance = Utterance(id: id, segments: Self.segments(for: text, utterance: id, offset: offset))
            state.totalDits += utterance.dits
            state.queue.append(utterance)
        }
        textArrived.post()
    }

    public func finishText() {
        shared.withLock { $0.textFinished = true }
        textArrived.post()
    }

    /// The segments keying `text`, as documented on the type.
    static func segments(for text: String, utterance id: UtteranceID, offset base: Int = 0) -> [Segment] {
        var segments: [Segment] = []
        var offset = base
        var wordStart = 0
        var codes: [String] = []

        func endWord(at end: Int) {
            defer { codes.removeAll() }
            guard !codes.isEmpty else { return }
            if !segments.isEmpty { segments.append(Segment(dits: 7, keyed: false)) }
            var span: TextSpan? = TextSpan(utterance: id, start: Int32(wordStart), end: Int32(end))
            for (letter, code) in codes.enumerated() {
                if letter > 0 { segments.append(Segment(dits: 3, keyed: false)) }
                for (element, symbol) in code.enumerated() {
                    if element > 0 { segments.append(Segment(dits: 1, keyed: false)) }
                    segments.append(Segment(dits: symbol == "-" ? 3 : 1, keyed: true, span: span))
                    span = nil
                }
            }
        }

        var inWord = false
        for character in text {
            let length = String(character).utf8.count
            if character.isWhitespace {
                if inWord { endWord(at: offset) }
                inWord = false
            } else {
                if !inWord { wordStart = offset }
                inWord = true
                if let code = code(for: character) { codes.append(code) }
            }
            offset += length
        }
        if inWord { endWord(at: offset) }
        if !segments.isEmpty { segments.append(Segment(dits: 7, keyed: false)) }
        return segments
    }

    /// The International Morse code of a character (`.` dit, `-` dah), or nil.
    static func code(for character: Character) -> String? {
        table[character.uppercased()]
    }

    static let table: [String: String] = [
        "A": ".-", "B": "-...", "C": "-.-.", "D": "-..", "E": ".", "F": "..-.", "G": "--.",
        "H": "....", "I": "..", "J": ".---", "K": "-.-", "L": ".-..", "M": "--", "N": "-.",
        "O": "---", "P": ".--.", "Q": "--.-", "R": ".-.", "S": "...", "T": "-", "U": "..-",
        "V": "...-", "W": ".--", "X": "-..-", "Y": "-.--", "Z": "--..",
        "0": "-----", "1": ".----", "2": "..---", "3": "...--", "4": "....-", "5": ".....",
        "6": "-....", "7": "--...", "8": "---..", "9": "----.",
        ".": ".-.-.-", ",": "--..--", "?": "..--..", "'": ".----.", "!": "-.-.--", "/": "-..-.",
        "(": "-.--.", ")": "-.--.-", "&": ".-...", ":": "---...", ";": "-.-.-.", "=": "-...-",
        "+": ".-.-.", "-": "-....-", "_": "..--.-", "\"": ".-..-.", "$": "...-..-", "@": ".--.-.",
    ]

    // MARK: Producing

    private enum Next {
        case utterance(Utterance)
        case finished
        case none
    }

    private func takeNext() -> Next {
        shared.withLock { state in
            if state.head < state.queue.count {
                let next = state.queue[state.head]
                state.head += 1
                if state.head == state.queue.count {
                    state.queue.removeAll(keepingCapacity: true)
                    state.head = 0
                }
                return .utterance(next)
            }
            return state.textFinished ? .finished : .none
        }
    }

    public func produce(_ io: inout ProcessIO, at time: Double) -> SourceStatus {
        let room = io.room(output: 0)
        let out = io.frames(output: 0)
        var written = 0
        var markers = 0
        let markerCapacity = NodePorts.markerCapacity

        while true {
            if cancelled.load(ordering: .acquiring) { return .finished }
            guard let utterance = current else {
                switch takeNext() {
                case .utterance(let next):
                    current = next
                    segmentIndex = 0
                    segmentOffset = 0
                    startEmitted = false
                    segmentOpened = false
                    continue
                case .finished:
                    commit(written, &io)
                    return .finished
                case .none:
                    // Deliver what this call made before waiting for more text.
                    if written > 0 || markers > 0 {
                        commit(written, &io)
                        return .more
                    }
                    textArrived.wait(timeout: 0.1)
                    continue
                }
            }
            let position = streamPosition + written
            if !startEmitted {
                guard markers < markerCapacity else { break }
                io.emit(Marker(position: position, event: .utteranceStart(utterance.id)), on: 0)
                markers += 1
                startEmitted = true
            }
            guard segmentIndex < utterance.segments.count else {
                guard markers < markerCapacity else { break }
                io.emit(Marker(position: position, event: .utteranceEnd(utterance.id)), on: 0)
                markers += 1
                current = nil
                continue
            }
            let segment = utterance.segments[segmentIndex]
            if !segmentOpened {
                if let span = segment.span {
                    guard markers < markerCapacity else { break }
                    io.emit(Marker(position: position, event: .textSpan(span)), on: 0)
                    markers += 1
                }
                segmentOpened = true
            }
            guard written < room else { break }
            let length = segment.dits * ditFrames
            let count = min(room - written, length - segmentOffset)
            // SAFETY: `written + count` ≤ `room`, so the frames written stay inside `out`.
            let target = out.baseAddress! + written * channels
            if segment.keyed {
                renderKeyed(into: target, from: segmentOffset, count: count, length: length)
            } else {
                target.update(repeating: 0, count: count * channels)
            }
            written += count
            segmentOffset += count
            if segmentOffset == length {
                segmentIndex += 1
                segmentOffset = 0
                segmentOpened = false
            }
        }
        commit(written, &io)
        return .more
    }

    private func commit(_ frames: Int, _ io: inout ProcessIO) {
        io.produce(frames, output: 0)
        streamPosition += frames
    }

    /// Frames `first ..< first + count` of a keyed element `length` frames long.
    private func renderKeyed(into target: UnsafeMutablePointer<Float>, from first: Int, count: Int, length: Int) {
        for frame in 0..<count {
            let i = first + frame
            let value = Float(amplitude * Self.gain(min(i, length - 1 - i), ramp: rampFrames) * oscillator(i))
            for channel in 0..<channels { target[frame * channels + channel] = value }
        }
    }

    /// `sin(2π · frac(f·i/rate))`.
    private func oscillator(_ i: Int) -> Double {
        let cycles = frequency * Double(i) / Double(rate)
        return sin(2 * Double.pi * (cycles - cycles.rounded(.down)))
    }

    /// The keying ramp `j` frames from the nearer edge of an element.
    static func gain(_ j: Int, ramp: Int) -> Double {
        j < ramp ? (1 - cos(Double.pi * Double(j + 1) / Double(ramp + 1))) / 2 : 1
    }

    public func cancel() {
        cancelled.store(true, ordering: .releasing)
        textArrived.post()
    }

    /// Forgets the text received and the stream made from it; ids start again from 0.
    public func reset() {
        shared.withLock { $0 = Shared() }
        textArrived.drain()
        cancelled.store(false, ordering: .releasing)
        current = nil
        streamPosition = 0
    }
}
