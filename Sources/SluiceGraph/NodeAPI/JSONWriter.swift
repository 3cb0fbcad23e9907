import SluiceAudio

/// Writes compact JSON text as UTF-8 bytes, piece by piece: what a served graph sends many
/// times a second (events, replies) is written with it, without Foundation's encoder (which
/// sorts keys through a locale's collation, at many times the cost).
///
/// The caller writes the punctuation between members (`raw(",")`) and sorts keys where it
/// wants them sorted; the writer escapes strings and prints numbers as `JSONValue` does.
public struct JSONWriter: Sendable {
    public private(set) var bytes: [UInt8]

    public init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// The text written so far.
    public var text: String { String(decoding: bytes, as: UTF8.self) }

    /// Appends `text` as it is: punctuation, or JSON the caller wrote already.
    public mutating func raw(_ text: String) {
        var text = text
        text.withUTF8 { bytes.append(contentsOf: $0) }
    }

    /// Appends `text` as a JSON string: quotes, backslashes and control characters escaped,
    /// everything else as it is (a Swift string is valid UTF-8, so its bytes are JSON's).
    public mutating func string(_ text: String) {
        var text = text
        bytes.append(UInt8(ascii: "\""))
        text.withUTF8 { utf8 in
            var runStart = 0
            for index in utf8.indices {
                let byte = utf8[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
                runStart = index + 1
                appendEscaped(byte)
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// Appends `key` as a string and a colon.
    public mutating func key(_ key: String) {
        string(key)
        bytes.append(UInt8(ascii: ":"))
    }

    /// Appends a number in Swift's shortest round-trip form (`0.02`, `1e-05`), a whole value
    /// without a fraction (`48000`); `null` for one that is not finite, which JSON has no
    /// number for.
    public mutating func number(_ value: Double) {
        raw(value.isFinite ? ExternalNumber.text(value) : "null")
    }

    public mutating func integer(_ value: some BinaryInteger) {
        raw(String(value))
    }

    public mutating func bool(_ value: Bool) {
        raw(value ? "true" : "false")
    }

    public mutating func null() {
        raw("null")
    }

    private mutating func appendEscaped(_ byte: UInt8) {
        bytes.append(UInt8(ascii: "\\"))
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(byte)
        case 0x0A: bytes.append(UInt8(ascii: "n"))
        case 0x0D: bytes.append(UInt8(ascii: "r"))
        case 0x09: bytes.append(UInt8(ascii: "t"))
        default:
            let hex = Array("0123456789abcdef".utf8)
            bytes += [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
        }
    }
}
