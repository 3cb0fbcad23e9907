import SluiceAudio
import SluiceGraph
import SluicePluginABI
import Synchronization

/// Audio of whole utterances kept between runs (the speech controller's synthesis cache),
/// looked up by the utterance's text; which provider and settings made it is the cache's own
/// business.
public protocol UtteranceAudioCache: Sendable {
    /// [control-thread] The stored audio of `text` in `format`, or nil when there is none.
    func audio(for text: String, format: PCMFormat) -> [UInt8]?
    /// [source-thread] Keeps the audio the provider synthesised for `text`.
    func store(_ audio: [UInt8], for text: String, format: PCMFormat)
}

/// A plugin provider as a graph `TextDrivenSource`: text in, PCM bytes out on its one output.
///
/// Text: each `receive(text:)` is one utterance (`begin_utterance`, `push_text`,
/// `end_utterance`); `beginUtterance(at:)`, `push(text:)` and `endUtterance()` hand an
/// utterance over piece by piece (tokens from a language model). `finishText()` is
/// `end_text`. A text call the plugin refuses fails the stream at the next `produce`.
///
/// Audio: `produce` calls `read` once into the output's room. Utterance markers are placed
/// at the byte positions the provider's reads imply: `utteranceStart(k)` before the first
/// byte (or the end) of the k-th utterance, followed at the same position by `textSpan` (the
/// utterance's UTF-8 byte range in the whole text: `receive(text:at:)`'s offset, or the
/// texts received so far laid end to end); `utteranceEnd(k)` where `read` returned
/// SLUICE_READ_UTTERANCE_END. Ids count from 0 in the order utterances were begun. "Would
/// block" returns at once with nothing produced (the graph calls again within a
/// millisecond); an error fails the stream with the plugin's code and message.
///
/// With a cache (`useCache`), a whole utterance whose audio is stored is not sent to the
/// plugin: its turn plays the stored bytes. One the plugin synthesises is stored once its
/// `read` returned SLUICE_READ_UTTERANCE_END (never after a failure or a cancel, and never
/// when its audio outgrew 32 MiB: an incomplete recording is not stored).
///
/// `cancel()` calls the plugin's `cancel` and ends the stream at the next `produce`. The
/// instance is destroyed when the node goes.
public final class PluginProviderSource: IncrementalTextSource, @unchecked Sendable {
    // SAFETY (@unchecked Sendable): the plugin synchronises its text calls against `read`
    // (provider.h); `cancelled` is atomic, `textFailure` and `plan` are behind Mutexes; the
    // read state (`inUtterance`, `utterance`, `position`, …) is touched only by `produce`, on
    // the source thread.

    /// The library stays loaded (and its `deinit` waits) while this node lives.
    public let library: PluginLibrary
    public let typeName: String
    /// The format `read` delivers, from the plugin's `get_format`.
    public let format: PCMFormat
    /// Whether the plugin speaks an utterance before its text is complete
    /// (SLUICE_PROVIDER_INCREMENTAL_TEXT).
    public let acceptsIncrementalText: Bool
    /// Whether the plugin reports where each word's audio begins
    /// (SLUICE_PROVIDER_WORD_TIMING with `take_word_marks`): `produce` then emits a `word`
    /// marker at each.
    public let reportsWordTiming: Bool
    /// The plugin's vtable in the host's layout (GrownStruct): functions its version lacks are NULL.
    private let vtable: sluice_provider_vtable_t
    private let cancelled = Atomic<Bool>(false)
    private let textFailure = Mutex<SourceFailure?>(nil)
    /// Makes a fresh instance with the node's parameters, for `interrupt`.
    private let recreate: (([String: ParameterValue]) -> UnsafeMutableRawPointer?)?

    /// The instance text calls go to, and the ones `interrupt` retired, which `produce`
    /// destroys once it no longer reads them. One text call at a time, as the ABI promises.
    private struct TextSide: @unchecked Sendable {
        // SAFETY (@unchecked Sendable): the pointers are plugin instances, used only under
        // this mutex (text calls) or by the source thread once handed over (see produce).
        var instance: UnsafeMutableRawPointer
        var retired: [UnsafeMutableRawPointer] = []
        /// The id the next utterance after the latest interrupt gets; earlier ones are dropped.
        var resumeAt: UInt32 = 0
    }

    private let textSide: Mutex<TextSide>
    /// The instance `produce` reads: the source thread's.
    private var readInstance: UnsafeMutableRawPointer
    private let plan = Mutex(Plan())

    /// One utterance as the control side planned it.
    struct PlannedUtterance {
        var start: Int
        var end: Int
        /// Its text is complete (the span will not grow).
        var complete: Bool
        /// Stored audio played in place of the plugin's; dropped once played.
        var cached: [UInt8]?
        /// The text to store the plugin's audio under, when a cache is in use.
        var storeAs: String?
    }

    struct Plan {
        var utterances: [PlannedUtterance] = []
        var nextOffset = 0
        var cache: (any UtteranceAudioCache)?
    }

    /// Bytes of one utterance recorded for the cache at most; a longer one is not stored at
    /// all — neither its head nor its tail.
    static let largestCachedUtterance = 32 << 20

    // Read state: the source thread's.
    private var inUtterance = false
    private var utterance: UInt32 = 0
    private var position = 0
    private var finished = false
    /// The stream ended with the instance's read failure: an `interrupt` (a served graph
    /// making the provider anew) starts it again.
    private var endedByFailure = false
    private var emittedSpanEnd = 0
    private var cachedRead = 0
    /// The plugin's bytes of the current utterance, while it is to be stored.
    private var recording: [UInt8]?
    /// The current utterance outgrew `largestCachedUtterance`: nothing more of it is recorded,
    /// so an incomplete recording never becomes a cache entry.
    private var recordingAbandoned = false
    /// Where the current utterance's audio began (its first byte's `position`).
    private var utteranceStartPosition = 0
    /// Word markers taken from the plugin whose audio has not been produced yet, in order.
    private var pendingWords: [Marker] = []
    /// `take_word_marks`' array, allocated once.
    private var wordMarkBuffer = [sluice_word_mark_t](repeating: sluice_word_mark_t(), count: 16)

    /// The most bytes one read asks for while words are timed: one call emits at most
    /// `NodePorts.markerCapacity` markers, and no speech fits that many words into 4 KiB
    /// (93 ms of 22.05 kHz S16 mono, 23 ms of 44.1 kHz stereo).
    static let wordTimedReadLimit = 4_096
    /// Word markers one call emits at most, leaving room for an utterance's start and span.
    static let wordMarkersPerCall = NodePorts.markerCapacity - 4

    init(
        library: PluginLibrary, type: PluginNodeType, instance: UnsafeMutableRawPointer,
        functions v: sluice_provider_vtable_t,
        recreate: (([String: ParameterValue]) -> UnsafeMutableRawPointer?)? = nil
    ) throws(NodeCreationError) {
        let name = type.descriptor.typeName
        guard v.get_format != nil, v.begin_utterance != nil, v.push_text != nil, v.end_utterance != nil,
            v.end_text != nil, v.read != nil, v.cancel != nil, v.destroy != nil
        else {
            v.destroy?(instance)
            throw NodeCreationError("'\(name)' (plugin \(library.path)) has a provider vtable with a NULL function")
        }
        var raw = sluice_pcm_format_t()
        guard v.get_format!(instance, &raw), let format = Self.format(raw) else {
            v.destroy!(instance)
            throw NodeCreationError(
                "'\(name)' (plugin \(library.path)) declared no usable output format (sample format \(raw.sample_format), \(raw.sample_rate) Hz, \(raw.channels) channels)")
        }
        self.library = library
        typeName = name
        self.format = format
        let capabilities = v.get_capabilities?(instance) ?? 0
        acceptsIncrementalText = capabilities & UInt32(SLUICE_PROVIDER_INCREMENTAL_TEXT) != 0
        reportsWordTiming = capabilities & UInt32(SLUICE_PROVIDER_WORD_TIMING) != 0 && v.take_word_marks != nil
        textSide = Mutex(TextSide(instance: instance))
        readInstance = instance
        vtable = v
        self.recreate = recreate
    }

    deinit {
        let (current, retired) = textSide.withLock { ($0.instance, $0.retired) }
        for old in retired where old != readInstance { vtable.destroy!(old) }
        if readInstance != current { vtable.destroy!(readInstance) }
        vtable.destroy!(current)
    }

    static func format(_ raw: sluice_pcm_format_t) -> PCMFormat? {
        let sample: SampleFormat
        switch raw.sample_format {
        case sluice_sample_format_t(SLUICE_SAMPLE_S16LE): sample = .s16le
        case sluice_sample_format_t(SLUICE_SAMPLE_S24LE): sample = .s24le
        case sluice_sample_format_t(SLUICE_SAMPLE_S32LE): sample = .s32le
        case sluice_sample_format_t(SLUICE_SAMPLE_F32LE): sample = .f32le
        default: return nil
        }
        guard (1_000...384_000).contains(raw.sample_rate), (1...8).contains(raw.channels) else { return nil }
        return PCMFormat(sample, channels: Int(raw.channels), sampleRate: Int(raw.sample_rate))
    }

    public func outputFormats(for inputs: [StreamFormat], context: FormatContext) throws(FormatMismatch) -> [StreamFormat] {
        [.bytes(format)]
    }

    // MARK: Text

    /// [control-thread] Keeps and replays whole utterances' audio through `cache`. Set before any text.
    public func useCache(_ cache: (any UtteranceAudioCache)?) {
        plan.withLock { $0.cache = cache }
    }

    /// What a live run gave to be called when text arrives (`onTextArrival`).
    private let textArrival = Mutex<(@Sendable () -> Void)?>(nil)

    public func onTextArrival(_ wake: @escaping @Sendable () -> Void) {
        textArrival.withLock { $0 = wake }
    }

    /// Wakes the source thread, if a live run asked to be: new text for `produce` to look at.
    private func textArrived() {
        textArrival.withLock { $0 }?()
    }

    /// [control-thread] One whole utterance, placed after the text received so far.
    public func receive(text: String) {
        receive(text: text, at: plan.withLock { $0.nextOffset })
    }

    /// [control-thread] One whole utterance whose text starts at UTF-8 byte `offset` of the whole text.
    public func receive(text: String, at offset: Int) {
        let cached = plan.withLock { plan -> Bool in
            var planned = PlannedUtterance(start: offset, end: offset + text.utf8.count, complete: true)
            if let cache = plan.cache {
                planned.cached = cache.audio(for: text, format: format)
                if planned.cached == nil { planned.storeAs = text }
            }
            plan.utterances.append(planned)
            plan.nextOffset = planned.end
            return planned.cached != nil
        }
        // A stored utterance never reaches the plugin: its turn plays the stored audio.
        guard !cached else { return textArrived() }
        textCall { instance, error in vtable.begin_utterance!(instance, error) }
        push(text, growingSpan: false)
        textCall { instance, error in vtable.end_utterance!(instance, error) }
    }

    /// [control-thread] Starts an utterance whose text follows in `push(text:)` calls, placed after
    /// the text received so far.
    public func beginUtterance() {
        beginUtterance(at: plan.withLock { $0.nextOffset })
    }

    /// [control-thread] Starts an utterance whose text starts at UTF-8 byte `offset` of the whole
    /// text and follows in `push(text:)` calls. Not cached: its text is not known in advance.
    public func beginUtterance(at offset: Int) {
        plan.withLock { plan in
            plan.utterances.append(PlannedUtterance(start: offset, end: offset, complete: false))
            plan.nextOffset = offset
        }
        textCall { instance, error in vtable.begin_utterance!(instance, error) }
    }

    /// [control-thread] Appends text (a token, a word) to the current utterance.
    public func push(text: String) {
        push(text, growingSpan: true)
    }

    private func push(_ text: String, growingSpan: Bool) {
        if growingSpan {
            plan.withLock { plan in
                guard !plan.utterances.isEmpty else { return }
                plan.utterances[plan.utterances.count - 1].end += text.utf8.count
                plan.nextOffset = plan.utterances[plan.utterances.count - 1].end
            }
        }
        var text = text
        textCall { instance, error in
            text.withUTF8 { bytes in
                // SAFETY: `bytes` is valid for the call; the ABI says the plugin copies it.
                bytes.withMemoryRebound(to: CChar.self) { chars in
                    vtable.push_text!(instance, chars.baseAddress, chars.count, error)
                }
            }
        }
    }

    /// [control-thread] The current utterance's text is complete.
    public func endUtterance() {
        plan.withLock { plan in
            guard !plan.utterances.isEmpty else { return }
            plan.utterances[plan.utterances.count - 1].complete = true
        }
        textCall { instance, error in vtable.end_utterance!(instance, error) }
    }

    /// Every planned utterance has ended, none is under way, and more text may come. Once the
    /// text has ended it is false: the stream does not pause for text there but ends, which
    /// the plugin says at a later `read`, and a source thread asleep for text would not make
    /// it (it held the last utterance's processed tail back a whole second).
    public var hasSpokenAllText: Bool {
        !textEnded.load(ordering: .acquiring) && !inUtterance && plan.withLock { Int(utterance) >= $0.utterances.count }
    }

    /// Whether `finishText` was called: no more text comes.
    private let textEnded = Atomic<Bool>(false)

    public func finishText() {
        textSide.withLock { side in vtable.end_text!(side.instance) }
        textEnded.store(true, ordering: .releasing)
        // The end of the text is news too: a source thread asleep because all the text so far
        // was spoken (`hasSpokenAllText`) must look again to end the stream.
        textArrived()
    }

    /// Barge-in: the plugin's instance is cancelled (a read under way returns at once) and a
    /// fresh one with the same parameters (but `parameters`) takes the text from now on; the text not yet spoken
    /// is dropped. `produce` finishes the utterance under way with its end marker and a
    /// discontinuity, destroys the old instance, and reads the new one. Nil when the plugin's
    /// instance could not be made again (the stream then goes on as it was).
    public func interrupt(changing parameters: [String: ParameterValue]) -> UtteranceID? {
        guard let recreate, let fresh = recreate(parameters) else { return nil }
        // The graph was compiled for this format: a change of it is refused.
        var raw = sluice_pcm_format_t()
        guard vtable.get_format!(fresh, &raw), Self.format(raw) == format else {
            vtable.destroy!(fresh)
            return nil
        }
        // `produce` adopts the fresh instance (its markers, the discontinuity) with no new
        // text: a source thread asleep for text must look.
        defer { textArrived() }
        return textSide.withLock { side -> UtteranceID in
            vtable.cancel!(side.instance)
            side.retired.append(side.instance)
            side.instance = fresh
            // Every utterance planned so far is dropped: ids are their plan indexes.
            let next = plan.withLock { plan -> UInt32 in
                for index in plan.utterances.indices { plan.utterances[index].cached = nil }
                return UInt32(plan.utterances.count)
            }
            side.resumeAt = next
            // A text call's failure was the old instance's.
            textFailure.withLock { $0 = nil }
            return UtteranceID(next)
        }
    }

    /// Calls a text function (one at a time, as the ABI promises the plugin) and keeps its
    /// first failure for `produce`.
    private func textCall(_ body: (UnsafeMutableRawPointer, UnsafeMutablePointer<sluice_error_t>) -> Bool) {
        var error = sluice_error_t()
        let succeeded = textSide.withLock { side in body(side.instance, &error) }
        textArrived()
        guard !succeeded else { return }
        let failure = PluginFailure(error)
        textFailure.withLock { stored in
            if stored == nil { stored = SourceFailure(code: failure.code.isEmpty ? "plugin-text" : failure.code, message: failure.message) }
        }
    }

    // MARK: Audio

    public func produce(_ io: inout ProcessIO, at time: Double) -> SourceStatus {
        if endedByFailure, !cancelled.load(ordering: .acquiring), adoptInterrupt(&io) {
            // Made anew after its failure (a served graph goes on): the stream goes on too.
            finished = false
            endedByFailure = false
            return .more
        }
        if finished || cancelled.load(ordering: .acquiring) { return .finished }
        if let failure = textFailure.withLock({ $0 }) { return .failed(failure) }
        if adoptInterrupt(&io) { return .more }
        let room = io.bytes(output: 0)
        guard let base = room.baseAddress, room.count > 0 else { return .more }
        let planned = plan.withLock { plan in
            Int(utterance) < plan.utterances.count ? plan.utterances[Int(utterance)] : nil
        }
        if let planned, let cached = planned.cached {
            return playCached(cached, planned, into: base, room: room.count, &io)
        }
        var written = 0
        var error = sluice_error_t()
        let capacity = reportsWordTiming ? min(room.count, Self.wordTimedReadLimit) : room.count
        // SAFETY: `base` addresses `room.count` ≥ `capacity` writable bytes of the output edge
        // for this call; the plugin writes at most `capacity` bytes and reports how many
        // (checked below).
        let status = vtable.read!(readInstance, base, capacity, &written, &error)
        // Interrupted during the read: what it returned belongs to the dropped text (and an
        // END or error is the cancelled instance's, not the stream's).
        if adoptInterrupt(&io) {
            if status == sluice_read_status_t(SLUICE_READ_DATA), written > 0, written <= room.count {
                io.produce(written, output: 0)
                position += written
            }
            return .more
        }
        switch status {
        case sluice_read_status_t(SLUICE_READ_DATA):
            guard written > 0, written <= capacity else {
                return .failed(SourceFailure(
                    code: "plugin-read", message: "'\(typeName)' reported \(written) bytes read into \(capacity) bytes of room"))
            }
            startUtteranceIfNeeded(planned, &io)
            record(UnsafeRawBufferPointer(start: base, count: written), planned)
            io.produce(written, output: 0)
            position += written
            if reportsWordTiming { emitWords(planned, &io) }
            return .more
        case sluice_read_status_t(SLUICE_READ_UTTERANCE_END):
            startUtteranceIfNeeded(planned, &io)
            if let text = planned?.storeAs, let audio = recording, let cache = plan.withLock({ $0.cache }) {
                cache.store(audio, for: text, format: format)
            }
            endUtterance(planned, &io)
            return .more
        case sluice_read_status_t(SLUICE_READ_END):
            if inUtterance { endUtterance(planned, &io) }
            // Stored utterances may still follow the plugin's last one.
            if plan.withLock({ Int(utterance) < $0.utterances.count && $0.utterances[Int(utterance)].cached != nil }) {
                return .more
            }
            finished = true
            return .finished
        case sluice_read_status_t(SLUICE_READ_WOULD_BLOCK):
            return .more
        case sluice_read_status_t(SLUICE_READ_ERROR):
            let failure = PluginFailure(error)
            finished = true
            endedByFailure = true
            return .failed(SourceFailure(code: failure.code.isEmpty ? "plugin-error" : failure.code, message: failure.message))
        default:
            finished = true
            endedByFailure = true
            return .failed(SourceFailure(code: "plugin-read", message: "'\(typeName)' returned unknown read status \(status)"))
        }
    }

    /// Plays the next bytes of a stored utterance; ends it once all were played.
    private func playCached(
        _ cached: [UInt8], _ planned: PlannedUtterance, into base: UnsafeMutableRawPointer, room: Int,
        _ io: inout ProcessIO
    ) -> SourceStatus {
        startUtteranceIfNeeded(planned, &io)
        let count = min(room, cached.count - cachedRead)
        if count > 0 {
            cached.withUnsafeBytes { bytes in
                // SAFETY: `base` has `room` ≥ `count` writable bytes; the source range is in bounds.
                base.copyMemory(from: bytes.baseAddress! + cachedRead, byteCount: count)
            }
            cachedRead += count
            io.produce(count, output: 0)
            position += count
        }
        if cachedRead == cached.count {
            let id = Int(utterance)
            plan.withLock { $0.utterances[id].cached = nil }
            cachedRead = 0
            endUtterance(planned, &io)
        }
        return .more
    }

    /// Keeps the plugin's bytes of an utterance the cache should store.
    private func record(_ bytes: UnsafeRawBufferPointer, _ planned: PlannedUtterance?) {
        guard planned?.storeAs != nil, !recordingAbandoned else { return }
        if recording == nil { recording = [] }
        if recording!.count + bytes.count > Self.largestCachedUtterance {
            recording = nil
            recordingAbandoned = true
            return
        }
        recording!.append(contentsOf: bytes)
    }

    /// [source-thread] Takes the plugin's new word marks and emits the `word` markers whose
    /// audio has now been produced; later ones wait in `pendingWords`. Spans are placed in
    /// the whole text by the utterance's planned start; a mark behind the output (late, or
    /// beyond one call's marker budget) is emitted where the output is.
    private func emitWords(_ planned: PlannedUtterance?, _ io: inout ProcessIO) {
        let id = UtteranceID(utterance)
        let textStart = planned?.start ?? 0
        while true {
            let capacity = UInt32(wordMarkBuffer.count)
            // SAFETY: the array holds `capacity` marks for the call; the plugin writes at most that many.
            let taken = Int(vtable.take_word_marks!(readInstance, &wordMarkBuffer, capacity))
            for mark in wordMarkBuffer.prefix(min(taken, wordMarkBuffer.count)) {
                let start = textStart + Int(mark.text_start)
                let span = TextSpan(
                    utterance: id, start: Int32(clamping: start), end: Int32(clamping: start + Int(mark.text_length)))
                let at = utteranceStartPosition + Int(clamping: mark.audio_offset)
                pendingWords.append(Marker(position: max(at, pendingWords.last?.position ?? 0), event: .word(span)))
            }
            if taken < Int(capacity) { break }
        }
        var emitted = 0
        while emitted < Self.wordMarkersPerCall, let next = pendingWords.first, next.position <= position {
            io.emit(next.moved(to: max(next.position, utteranceStartPosition)), on: 0)
            pendingWords.removeFirst()
            emitted += 1
        }
    }

    private func startUtteranceIfNeeded(_ planned: PlannedUtterance?, _ io: inout ProcessIO) {
        guard !inUtterance else { return }
        let id = UtteranceID(utterance)
        utteranceStartPosition = position
        pendingWords.removeAll(keepingCapacity: true)
        io.emit(Marker(position: position, event: .utteranceStart(id)), on: 0)
        if let planned {
            io.emit(spanMarker(planned, id), on: 0)
            emittedSpanEnd = planned.end
        }
        inUtterance = true
        recording = nil
        recordingAbandoned = false
    }

    /// The `textSpan` marker of utterance `id`, at the current position.
    private func spanMarker(_ planned: PlannedUtterance, _ id: UtteranceID) -> Marker {
        Marker(position: position, event: .textSpan(TextSpan(
            utterance: id, start: Int32(clamping: planned.start), end: Int32(clamping: planned.end))))
    }

    private func endUtterance(_ planned: PlannedUtterance?, _ io: inout ProcessIO) {
        let id = UtteranceID(utterance)
        // Text that arrived after the utterance began to play: the final span, at its end.
        if let latest = plan.withLock({ Int(utterance) < $0.utterances.count ? $0.utterances[Int(utterance)] : nil }),
            latest.end != emittedSpanEnd
        {
            io.emit(spanMarker(latest, id), on: 0)
        }
        // Words held back by a call's marker budget still come before the end; words the
        // audio never reached (marks past its end) are dropped.
        for word in pendingWords.prefix(Self.wordMarkersPerCall) where word.position <= position {
            io.emit(word.moved(to: max(word.position, utteranceStartPosition)), on: 0)
        }
        pendingWords.removeAll(keepingCapacity: true)
        io.emit(Marker(position: position, event: .utteranceEnd(id)), on: 0)
        inUtterance = false
        recording = nil
        recordingAbandoned = false
        utterance &+= 1
    }

    public func cancel() {
        cancelled.store(true, ordering: .releasing)
        textSide.withLock { side in vtable.cancel!(side.instance) }
    }

    /// [source-thread] After an `interrupt`: ends the utterance under way (its end marker, then
    /// a discontinuity, so the nodes after flush what they hold of the dropped text), destroys
    /// the retired instances and reads the fresh one from the first utterance after the
    /// interrupt. False when there was none.
    private func adoptInterrupt(_ io: inout ProcessIO) -> Bool {
        let swap = textSide.withLock { side -> (UnsafeMutableRawPointer, [UnsafeMutableRawPointer], UInt32)? in
            guard side.instance != readInstance else { return nil }
            defer { side.retired.removeAll() }
            return (side.instance, side.retired, side.resumeAt)
        }
        guard let (fresh, retired, resumeAt) = swap else { return false }
        if inUtterance {
            io.emit(Marker(position: position, event: .utteranceEnd(UtteranceID(utterance))), on: 0)
            inUtterance = false
        }
        io.emit(Marker(position: position, event: .discontinuity, isDiscontinuous: true), on: 0)
        // destroy joins the plugin's own threads; the cancelled instances return at once.
        for old in retired { vtable.destroy!(old) }
        readInstance = fresh
        utterance = max(utterance, resumeAt)
        recording = nil
        recordingAbandoned = false
        cachedRead = 0
        return true
    }

    // MARK: Counters

    /// [any-thread] The plugin's counters (`get_counters`), by name; empty when it keeps none.
    public func counters() -> [String: Int] {
        guard let getCounters = vtable.get_counters else { return [:] }
        var capacity: UInt32 = 16
        while true {
            var buffer = [sluice_counter_t](repeating: sluice_counter_t(), count: Int(capacity))
            // SAFETY: `buffer` holds `capacity` counters for the call; names are the plugin's
            // static strings (common.h), read before returning.
            let total = textSide.withLock { side in getCounters(side.instance, &buffer, capacity) }
            guard total <= capacity else {
                capacity = total
                continue
            }
            var counters: [String: Int] = [:]
            for counter in buffer.prefix(Int(total)) {
                guard let name = counter.name else { continue }
                counters[String(cString: name)] = Int(counter.value)
            }
            return counters
        }
    }

    public func report(into report: inout NodeReport) {
        for (name, value) in counters() { report.counters[name, default: 0] += value }
    }
}
