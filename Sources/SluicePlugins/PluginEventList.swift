import Glibc
import SluiceAudio
import SluicePluginABI

/// The events the next `process` call hands a plugin (events.h): room for `capacity` of them
/// and the list of pointers `sluice_process_t.events` points at, allocated when the node is
/// prepared and refilled after every call. Nothing is allocated after `init`.
///
/// Every event waiting applies from the node's next frame (a marker its input has reached, a
/// change applied between two calls), which is the first frame of the next call: offset 0,
/// in the order the events happened — the order events.h asks for.
///
/// Threading: `init`/`deinit` [control-thread]; the rest [audio-thread].
final class PluginEventList {
    let capacity: Int
    /// Bytes of one slot: the largest event, so any event fits any slot.
    private static let slotSize = max(
        MemoryLayout<sluice_param_event_t>.stride, MemoryLayout<sluice_marker_event_t>.stride)

    // SAFETY: `capacity` slots and `capacity` pointers, allocated in `init` and freed in
    // `deinit` only; slots are reinitialised as whichever event they hold next (trivial types).
    private let storage: UnsafeMutableRawPointer
    let pointers: UnsafeMutablePointer<UnsafePointer<sluice_event_header_t>?>
    private(set) var count = 0

    /// Each parameter's name as a C string, by index: what `param_name` points at.
    private let parameterNames: UnsafeMutableBufferPointer<UnsafeMutablePointer<CChar>?>

    /// - Parameter parameterNames: the node descriptor's parameters, in order.
    init(capacity: Int, parameterNames: [String]) {
        precondition(capacity > 0, "an event list holds at least one event")
        self.capacity = capacity
        self.parameterNames = .allocate(capacity: max(parameterNames.count, 1))
        self.parameterNames.initialize(repeating: nil)
        for (index, name) in parameterNames.enumerated() { self.parameterNames[index] = strdup(name) }
        storage = .allocate(byteCount: capacity * Self.slotSize, alignment: 16)
        storage.initializeMemory(as: UInt8.self, repeating: 0, count: capacity * Self.slotSize)
        pointers = .allocate(capacity: capacity)
        pointers.initialize(repeating: nil, count: capacity)
    }

    deinit {
        storage.deallocate()
        pointers.deallocate()
        for name in parameterNames { free(name) }
        parameterNames.deallocate()
    }

    var isFull: Bool { count == capacity }

    func clear() { count = 0 }

    /// [audio-thread] Appends a live parameter's change. The list must not be full.
    func append(parameter index: Int, value: Double) {
        var event = sluice_param_event_t()
        event.header = Self.header(SLUICE_EVENT_PARAM, MemoryLayout<sluice_param_event_t>.size)
        event.param_index = UInt32(index)
        event.value = value
        event.param_name = parameterNames.indices.contains(index) ? UnsafePointer(parameterNames[index]) : nil
        push(event)
    }

    /// [audio-thread] Appends a marker that input `input` carried. The list must not be full.
    func append(_ marker: Marker, input: Int) {
        var event = sluice_marker_event_t()
        event.header = Self.header(SLUICE_EVENT_MARKER, MemoryLayout<sluice_marker_event_t>.size)
        event.input = UInt32(input)
        event.flags = marker.isDiscontinuous ? UInt32(SLUICE_MARKER_DISCONTINUOUS) : 0
        switch marker.event {
        case .utteranceStart(let utterance):
            event.marker = sluice_marker_kind_t(SLUICE_MARKER_UTTERANCE_START)
            event.utterance = utterance.rawValue
        case .utteranceEnd(let utterance):
            event.marker = sluice_marker_kind_t(SLUICE_MARKER_UTTERANCE_END)
            event.utterance = utterance.rawValue
        case .discontinuity:
            event.marker = sluice_marker_kind_t(SLUICE_MARKER_DISCONTINUITY)
        case .textSpan(let span):
            event.marker = sluice_marker_kind_t(SLUICE_MARKER_TEXT_SPAN)
            event.utterance = span.utterance.rawValue
            event.text_start = span.start
            event.text_end = span.end
        case .word(let span):
            event.marker = sluice_marker_kind_t(SLUICE_MARKER_WORD)
            event.utterance = span.utterance.rawValue
            event.text_start = span.start
            event.text_end = span.end
        case .endOfStream:
            event.marker = sluice_marker_kind_t(SLUICE_MARKER_END_OF_STREAM)
        }
        push(event)
    }

    private static func header(_ kind: Int, _ size: Int) -> sluice_event_header_t {
        sluice_event_header_t(size: UInt32(size), kind: sluice_event_kind_t(kind), offset: 0, reserved: 0)
    }

    // Two plain functions, not one generic one: a generic call unspecialised in a debug
    // build looks its type's metadata up at run time, on the audio thread.
    private func push(_ event: sluice_param_event_t) {
        precondition(count < capacity, "the event list is full: flush it first")
        // SAFETY: slot `count` is inside `storage` and holds any event (`slotSize`); the C side
        // reads it through its header, the common first member of every event.
        let slot = (storage + count * Self.slotSize).initializeMemory(as: sluice_param_event_t.self, to: event)
        pointers[count] = UnsafeRawPointer(slot).assumingMemoryBound(to: sluice_event_header_t.self)
        count += 1
    }

    private func push(_ event: sluice_marker_event_t) {
        precondition(count < capacity, "the event list is full: flush it first")
        // SAFETY: as above.
        let slot = (storage + count * Self.slotSize).initializeMemory(as: sluice_marker_event_t.self, to: event)
        pointers[count] = UnsafeRawPointer(slot).assumingMemoryBound(to: sluice_event_header_t.self)
        count += 1
    }
}
