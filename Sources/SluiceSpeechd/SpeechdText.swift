/// The text of a speech-dispatcher message: modules receive SSML (`<speak>…</speak>`, with
/// `<mark/>` elements and escaped characters); the served graph speaks plain text.
public enum SpeechdText {
    /// `ssml` without its tags, its character entities decoded, white space kept.
    ///
    /// Malformed markup is read the way that speaks least of it: a `<` inside a tag opens
    /// another level that its own `>` closes (so `<<<<a>>>>` is all markup, not `>>>`), and a
    /// character reference to a character XML forbids in text (`&#0;`, other controls,
    /// surrogates, U+FFFE and U+FFFF) is dropped, and so is such a character written as it is
    /// (a raw NUL or escape: the `speechd` fuzz target found one reaching the text spoken).
    /// Read scalar by scalar, so a combining mark after `<` does not hide the bracket.
    public static func plain(_ ssml: String) -> String {
        var text = String.UnicodeScalarView()
        var depth = 0
        for scalar in ssml.unicodeScalars {
            switch scalar {
            case "<": depth += 1
            case ">" where depth > 0: depth -= 1
            default: if depth == 0 && isAllowedInXML(scalar) { text.append(scalar) }
            }
        }
        return decodeEntities(String(text))
    }

    /// XML 1.0's Char production: what a character reference may stand for.
    public static func isAllowedInXML(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x9, 0xA, 0xD, 0x20...0xD7FF, 0xE000...0xFFFD, 0x10000...0x10FFFF: true
        default: false
        }
    }

    private static func decodeEntities(_ text: String) -> String {
        guard text.contains("&") else { return text }
        var decoded = ""
        var rest = Substring(text)
        while let ampersand = rest.firstIndex(of: "&") {
            decoded += rest[..<ampersand]
            guard let semicolon = rest[ampersand...].firstIndex(of: ";"),
                rest.distance(from: ampersand, to: semicolon) <= 10
            else {
                decoded += "&"
                rest = rest[rest.index(after: ampersand)...]
                continue
            }
            let name = rest[rest.index(after: ampersand)..<semicolon]
            switch name {
            case "lt": decoded += "<"
            case "gt": decoded += ">"
            case "amp": decoded += "&"
            case "quot": decoded += "\""
            case "apos": decoded += "'"
            default:
                if name.hasPrefix("#x"), let code = UInt32(name.dropFirst(2), radix: 16) {
                    if let scalar = Unicode.Scalar(code), isAllowedInXML(scalar) { decoded.unicodeScalars.append(scalar) }
                } else if name.hasPrefix("#"), let code = UInt32(name.dropFirst()) {
                    if let scalar = Unicode.Scalar(code), isAllowedInXML(scalar) { decoded.unicodeScalars.append(scalar) }
                } else {
                    decoded += rest[ampersand...semicolon]
                }
            }
            rest = rest[rest.index(after: semicolon)...]
        }
        return decoded + rest
    }
}
