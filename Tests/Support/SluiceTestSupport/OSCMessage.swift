/// OSC 1.0 messages for the tests, written by hand from the spec so that what is sent does not
/// depend on the liblo the server reads them with: strings NUL-terminated and padded to four
/// bytes, numbers big-endian.
public enum OSCMessage {
    public enum Argument: Sendable {
        case string(String), float(Float), double(Double), int32(Int32), int64(Int64)
    }

    public static func encode(_ address: String, _ arguments: [Argument]) -> [UInt8] {
        func padded(_ text: String) -> [UInt8] {
            var bytes = Array(text.utf8) + [0]
            while bytes.count % 4 != 0 { bytes.append(0) }
            return bytes
        }
        var tags = ","
        var body: [UInt8] = []
        for argument in arguments {
            switch argument {
            case .string(let text): tags += "s"; body += padded(text)
            case .float(let value): tags += "f"; body += withUnsafeBytes(of: value.bitPattern.bigEndian, Array.init)
            case .double(let value): tags += "d"; body += withUnsafeBytes(of: value.bitPattern.bigEndian, Array.init)
            case .int32(let value): tags += "i"; body += withUnsafeBytes(of: value.bigEndian, Array.init)
            case .int64(let value): tags += "h"; body += withUnsafeBytes(of: value.bigEndian, Array.init)
            }
        }
        return padded(address) + padded(tags) + body
    }

    /// A message's address and arguments (s, f, d, i, h), or nil when it is not one.
    public static func decode(_ bytes: [UInt8]) -> (address: String, arguments: [Argument])? {
        var offset = 0
        func string() -> String? {
            guard offset < bytes.count, let end = bytes[offset...].firstIndex(of: 0) else { return nil }
            let text = String(decoding: bytes[offset..<end], as: UTF8.self)
            offset = (end + 4) / 4 * 4
            return text
        }
        func word(_ size: Int) -> UInt64? {
            guard offset + size <= bytes.count else { return nil }
            defer { offset += size }
            return bytes[offset..<(offset + size)].reduce(0) { $0 << 8 | UInt64($1) }
        }
        guard let address = string(), let tags = string(), tags.hasPrefix(",") else { return nil }
        var arguments: [Argument] = []
        for tag in tags.dropFirst() {
            switch tag {
            case "s": guard let text = string() else { return nil }; arguments.append(.string(text))
            case "f": guard let bits = word(4) else { return nil }; arguments.append(.float(Float(bitPattern: UInt32(bits))))
            case "i": guard let bits = word(4) else { return nil }; arguments.append(.int32(Int32(bitPattern: UInt32(bits))))
            case "d": guard let bits = word(8) else { return nil }; arguments.append(.double(Double(bitPattern: bits)))
            case "h": guard let bits = word(8) else { return nil }; arguments.append(.int64(Int64(bitPattern: bits)))
            default: return nil
            }
        }
        return (address, arguments)
    }
}
