import CYaml  // the libyaml Yams builds; its event parser sees keys before a mapping is composed

/// One pass of libyaml's event parser over a YAML text, before Yams composes it: it finds
/// every scalar key that repeats an earlier key of the same mapping (Yams stops at the first
/// mapping with repeats and names only one place, so finding them all here keeps
/// `DuplicateTolerantComposer` linear), and the first place collections nest deeper than
/// `maximumDepth` (Yams composes recursively, so a file of ten thousand `[` would exhaust
/// the stack).
struct YAMLEventScan {
    struct Repeat {
        var name: String
        /// Where the key starts, 1-based as Yams' marks (its opening quote, when quoted).
        var line: Int
        var column: Int
    }

    /// Every repeat after its first occurrence, in text order.
    var repeats: [Repeat] = []
    /// Where a collection first opens deeper than allowed (1-based), if one does.
    var tooDeep: (line: Int, column: Int)?

    /// Scans up to the end, the first syntax error (composing reports it) or the first
    /// collection nested too deep.
    init(_ text: String, maximumDepth: Int) {
        var found: [Repeat] = []
        var bytes = Array(text.utf8)
        bytes.append(0)
        var parser = yaml_parser_t()
        guard yaml_parser_initialize(&parser) == 1 else { return }
        defer { yaml_parser_delete(&parser) }
        var open: [Collection] = []
        var deepest: (line: Int, column: Int)?
        // SAFETY: the parser reads `bytes` only inside this closure; every event is deleted
        // before the next is parsed.
        bytes.withUnsafeBufferPointer { buffer in
            yaml_parser_set_input_string(&parser, buffer.baseAddress, buffer.count - 1)
            var event = yaml_event_t()
            while yaml_parser_parse(&parser, &event) == 1 {
                defer { yaml_event_delete(&event) }
                let type = event.type
                if type == YAML_STREAM_END_EVENT { break }
                switch type {
                case YAML_SCALAR_EVENT:
                    if let top = open.last, top.isMapping, top.expectingKey {
                        let scalar = event.data.scalar
                        // SAFETY: libyaml hands `length` bytes of UTF-8 at `value`, valid until the event is deleted.
                        let name = String(decoding: UnsafeBufferPointer(start: scalar.value, count: Int(scalar.length)), as: UTF8.self)
                        // In place: a copy of the collection would copy its set of keys.
                        if !open[open.count - 1].keys.insert(name).inserted {
                            found.append(Repeat(name: name, line: Int(event.start_mark.line) + 1, column: Int(event.start_mark.column) + 1))
                        }
                        open[open.count - 1].expectingKey = false
                    } else {
                        Self.nodeEnded(&open)
                    }
                case YAML_ALIAS_EVENT:
                    Self.nodeEnded(&open)
                case YAML_MAPPING_START_EVENT, YAML_SEQUENCE_START_EVENT:
                    guard open.count < maximumDepth else {
                        deepest = (Int(event.start_mark.line) + 1, Int(event.start_mark.column) + 1)
                        return
                    }
                    open.append(Collection(isMapping: type == YAML_MAPPING_START_EVENT))
                case YAML_MAPPING_END_EVENT, YAML_SEQUENCE_END_EVENT:
                    open.removeLast()
                    Self.nodeEnded(&open)
                default:
                    break
                }
            }
        }
        repeats = found
        tooDeep = deepest
    }

    /// An open collection: a mapping's keys so far, and whether its next node is a key.
    private struct Collection {
        var isMapping: Bool
        var keys: Set<String> = []
        var expectingKey = true
    }

    /// A whole node (a value, or a key that is not a scalar) ended inside the top collection:
    /// in a mapping, a key is followed by its value and a value by the next key.
    private static func nodeEnded(_ open: inout [Collection]) {
        guard let top = open.last, top.isMapping else { return }
        open[open.count - 1].expectingKey.toggle()
    }
}
