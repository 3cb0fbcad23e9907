import Crypto

/// What identifies one synthesis: the provider, its model and voice, every other setting and
/// the text. Two requests with the same key produce the same audio, so the second is served
/// from the ``SynthesisCache``.
public struct CacheKey: Hashable, Sendable, CustomStringConvertible {
    /// The SHA-256 of ``encoding(provider:model:voice:settings:text:)``, as 64 lowercase hex
    /// digits: the entry's file name.
    public let hex: String

    public init(provider: String, model: String, voice: String, settings: [String: String] = [:], text: String) {
        let digest = SHA256.hash(
            data: Self.encoding(provider: provider, model: model, voice: voice, settings: settings, text: text))
        hex = digest.map { byte in
            let digits = Array("0123456789abcdef")
            return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
        }.joined()
    }

    /// The bytes hashed: `sluice-cache-key-1`, then provider, model, voice, the number of
    /// settings, each setting's name and value sorted by name, and the text — every field as
    /// its UTF-8 length (8 bytes, little-endian) followed by its UTF-8 bytes.
    ///
    /// Length prefixes make the encoding unambiguous: no choice of field contents (a voice
    /// ending in the model's name, a `=` in a setting) can make two different requests
    /// encode alike. Sorting makes the order settings were given in irrelevant.
    public static func encoding(
        provider: String, model: String, voice: String, settings: [String: String], text: String
    ) -> [UInt8] {
        var bytes: [UInt8] = []
        func append(_ field: String) {
            let utf8 = Array(field.utf8)
            appendLength(utf8.count)
            bytes += utf8
        }
        func appendLength(_ length: Int) {
            withUnsafeBytes(of: UInt64(length).littleEndian) { bytes += $0 }
        }
        append("sluice-cache-key-1")
        append(provider)
        append(model)
        append(voice)
        appendLength(settings.count)
        // Sorted by the names' UTF-8 bytes, not by String's Unicode-aware ordering, so the
        // order is the same on every platform and in any independent implementation.
        for name in settings.keys.sorted(by: { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }) {
            append(name)
            append(settings[name]!)
        }
        append(text)
        return bytes
    }

    public var description: String { hex }
}
