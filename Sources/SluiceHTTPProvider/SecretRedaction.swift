import SluicePluginKit

/// Secrets (API keys) taken out of error messages, whatever a server echoed back.
///
/// A secret is replaced where it stands as a token of its own: not inside a longer run of
/// letters, digits, `-` and `_`. A key echoed by a server (`Invalid key: sk-…`, `?key=…&`) is
/// always such a token; a short secret (a one-character test key) is not also taken out of
/// every word that happens to contain it, which made messages unreadable.
public enum SecretRedaction {
    public static let replacement = "[redacted]"

    /// `error` with every occurrence of each of `secrets` replaced.
    public static func redacted(_ error: PluginError, secrets: [String]) -> PluginError {
        var error = error
        error.message = redacted(error.message, secrets: secrets)
        return error
    }

    public static func redacted(_ text: String, secrets: [String]) -> String {
        var text = Array(text.utf8)
        for secret in secrets.map({ Array($0.utf8) }) where !secret.isEmpty {
            var output: [UInt8] = []
            var index = 0
            while index < text.count {
                let end = index + secret.count
                if end <= text.count, text[index..<end].elementsEqual(secret),
                    index == 0 || !isTokenByte(text[index - 1]) || !isTokenByte(secret[0]),
                    end == text.count || !isTokenByte(text[end]) || !isTokenByte(secret[secret.count - 1])
                {
                    output += replacement.utf8
                    index = end
                } else {
                    output.append(text[index])
                    index += 1
                }
            }
            text = output
        }
        return String(decoding: text, as: UTF8.self)
    }

    private static func isTokenByte(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5a).contains(byte) || (0x61...0x7a).contains(byte)
            || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || byte >= 0x80
    }
}
