import SluiceAudio

/// A JSON value with its object members in the order they were written, and a printer whose
/// output is the same on every run: what `sluice nodes --json` and `sluice schema` print, and
/// what a committed schema file is compared with. Building one never fails; text is UTF-8.
public enum JSONValue: Sendable, Hashable, ExpressibleByDictionaryLiteral, ExpressibleByArrayLiteral,
    ExpressibleByStringLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral
{
    case null
    case bool(Bool)
    case integer(Int)
    /// Printed in Swift's shortest round-trip form (`0.02`, `1e-05`), a whole value without
    /// a fraction (`48000`); a value that is not finite prints as `null`, which JSON has no
    /// number for.
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([Member])

    /// One member of an object.
    public struct Member: Sendable, Hashable {
        public var key: String
        public var value: JSONValue

        public init(_ key: String, _ value: JSONValue) {
            self.key = key
            self.value = value
        }
    }

    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(elements.map { Member($0.0, $0.1) })
    }

    public init(arrayLiteral elements: JSONValue...) {
        self = .array(elements)
    }

    public init(stringLiteral value: String) {
        self = .string(value)
    }

    public init(booleanLiteral value: Bool) {
        self = .bool(value)
    }

    public init(integerLiteral value: Int) {
        self = .integer(value)
    }

    /// An object from members, leaving out those whose value is nil.
    public static func object(_ members: [(String, JSONValue?)]) -> JSONValue {
        .object(members.compactMap { key, value in value.map { Member(key, $0) } })
    }

    /// The member named `key` of an object, or nil.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    /// The text, indented by two spaces a level; arrays of scalars on one line. Ends without
    /// a newline.
    public var text: String {
        var output = ""
        write(into: &output, indent: "")
        return output
    }

    /// The text on one line with no spaces: a message on a socket.
    public var compactText: String {
        var writer = JSONWriter()
        write(to: &writer)
        return writer.text
    }

    /// Writes the value on one line with no spaces.
    public func write(to writer: inout JSONWriter) {
        switch self {
        case .null: writer.null()
        case .bool(let value): writer.bool(value)
        case .integer(let value): writer.integer(value)
        case .number(let value): writer.number(value)
        case .string(let value): writer.string(value)
        case .array(let items):
            writer.raw("[")
            for (index, item) in items.enumerated() {
                if index > 0 { writer.raw(",") }
                item.write(to: &writer)
            }
            writer.raw("]")
        case .object(let members):
            writer.raw("{")
            for (index, member) in members.enumerated() {
                if index > 0 { writer.raw(",") }
                writer.key(member.key)
                member.value.write(to: &writer)
            }
            writer.raw("}")
        }
    }

    private var isScalar: Bool {
        switch self {
        case .array, .object: false
        default: true
        }
    }

    private func write(into output: inout String, indent: String) {
        switch self {
        case .null: output += "null"
        case .bool(let value): output += value ? "true" : "false"
        case .integer(let value): output += String(value)
        case .number(let value): output += Self.numberText(value)
        case .string(let value): output += Self.quoted(value)
        case .array(let items):
            if items.isEmpty {
                output += "[]"
            } else if items.allSatisfy(\.isScalar) {
                output += "["
                for (index, item) in items.enumerated() {
                    if index > 0 { output += ", " }
                    item.write(into: &output, indent: indent)
                }
                output += "]"
            } else {
                let inner = indent + "  "
                output += "[\n"
                for (index, item) in items.enumerated() {
                    output += inner
                    item.write(into: &output, indent: inner)
                    output += index == items.count - 1 ? "\n" : ",\n"
                }
                output += indent + "]"
            }
        case .object(let members):
            guard !members.isEmpty else {
                output += "{}"
                return
            }
            let inner = indent + "  "
            output += "{\n"
            for (index, member) in members.enumerated() {
                output += inner + Self.quoted(member.key) + ": "
                member.value.write(into: &output, indent: inner)
                output += index == members.count - 1 ? "\n" : ",\n"
            }
            output += indent + "}"
        }
    }

    static func numberText(_ value: Double) -> String {
        guard value.isFinite else { return "null" }
        return ExternalNumber.text(value)
    }

    /// A JSON string: quotes, backslashes and control characters escaped, the rest as it is.
    static func quoted(_ text: String) -> String {
        var writer = JSONWriter(capacity: text.utf8.count + 2)
        writer.string(text)
        return writer.text
    }
}
