/// Reads typed values off a fuzzer's bytes, front to back; past the end every read gives zero
/// or empty, so any input is a whole case.
struct FuzzInput {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var offset = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    var remaining: UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(rebasing: bytes[min(offset, bytes.count)...])
    }

    mutating func byte() -> UInt8 {
        guard offset < bytes.count else { return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func integer<T: FixedWidthInteger>(_: T.Type = T.self) -> T {
        var value: T = 0
        for _ in 0..<MemoryLayout<T>.size { value = value << 8 | T(truncatingIfNeeded: byte()) }
        return value
    }

    mutating func double() -> Double { Double(bitPattern: integer(UInt64.self)) }

    mutating func boolean() -> Bool { byte() & 1 == 1 }

    /// Up to `limit` bytes, length first.
    mutating func string(limit: Int = 24) -> String {
        let count = Int(byte()) % (limit + 1)
        var scalars: [UInt8] = []
        for _ in 0..<count { scalars.append(byte()) }
        return String(decoding: scalars, as: UTF8.self)
    }
}
