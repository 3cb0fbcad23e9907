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
}
