import SluicePluginKit
import Synchronization

/// A node speaking with a Piper voice: each utterance is one request to the voice's engine
/// (`PiperEngine`), whose audio and word starts are held here until the host reads them.
///
/// Memory is bounded by `buffer`: the next utterance is asked for only while less than that
/// is unread, and one utterance is in flight at a time, so at most `buffer` plus one
/// utterance's audio is held. A failure of the engine ends the stream after the audio already
/// received; `cancel` drops what is held and asks the engine to stop.
final class PiperProvider: Provider, @unchecked Sendable {
    // SAFETY (@unchecked Sendable): everything shared is in `state` (a Mutex); `engine`,
    // `settings` and `limit` are set in `init` and read-only afterwards.

    struct Settings {
        /// Multiplies the voice's speed (Piper's length scale is the voice's divided by it).
        var rate: Double
        var noise: Double?
        var noiseWidth: Double?
        var sentenceSilence: Double
        var volume: Double
        var speaker: Int
    }

    private enum Item {
        case audio([UInt8])
        case utteranceEnd
    }

    private struct State {
        var open = false
        var current = ""
        /// Utterances whose text is complete and not yet asked for, with their numbers.
        var waiting: [(number: Int, text: String)] = []
        var begun = 0
        /// The request in flight: its engine id and utterance number.
        var inFlight: (id: Int, number: Int)?
        var items: [Item] = []
        var itemOffset = 0
        var firstItem = 0
        var buffered = 0
        var peakBuffered = 0
        /// The utterance `read` is in, and each utterance's marks not yet taken.
        var reading = 0
        var marks: [Int: [WordMark]] = [:]
        var textEnded = false
        var cancelled = false
        var failure: PluginError?
        var requests = 0

        /// Moves past the first item, and drops the items read once they are many.
        mutating func advance() {
            firstItem += 1
            itemOffset = 0
            if firstItem >= 64 || firstItem == items.count {
                items.removeFirst(firstItem)
                firstItem = 0
            }
        }
    }

    let format: PCMFormat
    private let engine: PiperEngine
    private let settings: Settings
    private let limit: Int
    private let state = Mutex(State())

    init(engine: PiperEngine, settings: Settings, bufferSeconds: Double) {
        self.engine = engine
        self.settings = settings
        format = PCMFormat(.s16le, sampleRate: engine.sampleRate, channels: 1)
        limit = max(2, Int(bufferSeconds * Double(engine.sampleRate)) * 2)
    }

    deinit {
        if let id = state.withLock({ $0.inFlight?.id }) { engine.abort(id) }
    }

    var reportsWordTiming: Bool { true }

    var counters: [Counter] {
        state.withLock { state in
            [
                Counter("peak-buffered-bytes", Int64(state.peakBuffered)),
                Counter("buffer-bytes", Int64(limit)),
                Counter("requests", Int64(state.requests)),
            ]
        }
    }

    // MARK: Text

    func beginUtterance() throws(PluginError) {
        try state.withLock { (state) throws(PluginError) in
            guard !state.open else { throw PluginError(code: "utterance-open", message: "an utterance is already open") }
            state.open = true
            state.current = ""
        }
    }

    func push(text piece: String) throws(PluginError) {
        try state.withLock { (state) throws(PluginError) in
            guard state.open else { throw PluginError(code: "no-utterance", message: "text pushed outside an utterance") }
            state.current += piece
        }
    }

    func endUtterance() throws(PluginError) {
        try state.withLock { (state) throws(PluginError) in
            guard state.open else { throw PluginError(code: "no-utterance", message: "no utterance is open") }
            state.open = false
            state.waiting.append((state.begun, state.current))
            state.begun += 1
            state.current = ""
        }
        requestNext()
    }

    func endText() {
        state.withLock { $0.textEnded = true }
    }

    // MARK: Audio

    func read(into buffer: UnsafeMutableRawBufferPointer) -> ReadResult {
        let result: ReadResult = state.withLock { state in
            if state.cancelled { return .end }
            if state.firstItem < state.items.count {
                switch state.items[state.firstItem] {
                case .utteranceEnd:
                    state.advance()
                    state.marks[state.reading] = nil
                    state.reading += 1
                    return .utteranceEnd
                case .audio(let bytes):
                    let count = min(buffer.count, bytes.count - state.itemOffset)
                    bytes.withUnsafeBytes { source in
                        // SAFETY: `count` bytes lie in `bytes` from `itemOffset` and fit in `buffer`.
                        buffer.baseAddress!.copyMemory(from: source.baseAddress! + state.itemOffset, byteCount: count)
                    }
                    state.itemOffset += count
                    state.buffered -= count
                    if state.itemOffset == bytes.count { state.advance() }
                    return .data(count)
                }
            }
            if let failure = state.failure { return .failed(failure) }
            if state.textEnded && !state.open && state.waiting.isEmpty && state.inFlight == nil { return .end }
            return .wouldBlock
        }
        if case .data = result { requestNext() }
        return result
    }

    func takeWordMarks(limit: Int) -> [WordMark] {
        state.withLock { state in
            guard var marks = state.marks[state.reading], !marks.isEmpty else { return [] }
            let taken = Array(marks.prefix(limit))
            marks.removeFirst(taken.count)
            state.marks[state.reading] = marks
            return taken
        }
    }

    func cancel() {
        let id: Int? = state.withLock { state in
            state.cancelled = true
            state.items.removeAll()
            state.waiting.removeAll()
            state.buffered = 0
            return state.inFlight?.id
        }
        if let id { engine.abort(id) }
    }

    // MARK: Requests

    /// Asks the engine for the next waiting utterance when none is in flight and there is room.
    private func requestNext() {
        while true {
            enum Next {
                case nothing
                /// An utterance of whitespace, ended here without a request.
                case empty
                case request(number: Int, text: String)
            }
            let next: Next = state.withLock { state in
                guard !state.cancelled, state.failure == nil, state.inFlight == nil, state.buffered < limit, !state.waiting.isEmpty else {
                    return .nothing
                }
                let next = state.waiting.removeFirst()
                if next.text.allSatisfy(\.isWhitespace) {
                    state.items.append(.utteranceEnd)
                    return .empty
                }
                // In flight from now on; its id follows once the engine has it.
                state.inFlight = (-1, next.number)
                state.requests += 1
                return .request(number: next.number, text: next.text)
            }
            guard case .request(let number, let text) = next else {
                if case .empty = next { continue }
                return
            }
            var request: [String: Any] = [
                "text": text, "rate": settings.rate, "sentence-silence": settings.sentenceSilence, "volume": settings.volume,
                "speaker": settings.speaker,
            ]
            if let noise = settings.noise { request["noise-scale"] = noise }
            if let noiseWidth = settings.noiseWidth { request["noise-w-scale"] = noiseWidth }
            let textBytes = text.utf8.count
            let id = engine.submit(request) { [weak self] event in self?.receive(event, utterance: number, textBytes: textBytes) }
            let abort: Bool = state.withLock { state in
                if state.inFlight?.number == number, state.inFlight?.id == -1 { state.inFlight = (id, number) }
                return state.cancelled
            }
            if abort { engine.abort(id) }
            return
        }
    }

    /// [reader thread] An event of utterance `utterance`'s request.
    private func receive(_ event: PiperEngine.Event, utterance: Int, textBytes: Int) {
        var next = false
        state.withLock { state in
            guard !state.cancelled else {
                if case .done = event { state.inFlight = nil }
                return
            }
            switch event {
            case .word(let start, let length, let sample):
                // The engine's word lies in the text it was given; one that does not is dropped.
                guard start + length <= textBytes else { return }
                state.marks[utterance, default: []].append(WordMark(text: start..<(start + length), audioOffset: sample * 2))
            case .audio(let bytes):
                guard !bytes.isEmpty else { return }
                state.items.append(.audio(bytes))
                state.buffered += bytes.count
                state.peakBuffered = max(state.peakBuffered, state.buffered)
            case .done(let failure):
                state.inFlight = nil
                if let failure {
                    state.failure = failure
                } else {
                    state.items.append(.utteranceEnd)
                    next = true
                }
            }
        }
        if next { requestNext() }
    }
}
