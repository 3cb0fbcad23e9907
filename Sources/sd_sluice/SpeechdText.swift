/// The text of a speech-dispatcher message: modules receive SSML (`<speak>…</speak>`, with
/// `<mark/>` elements and escaped characters); the served graph speaks plain text.
enum SpeechdText {
    /// `ssml` without its tags, its character entities decoded, white space kept.
    static func plain(_ ssml: String) -> String {
        var text = ""
        var inTag = false
        for character in ssml {
            if inTag {
                if character == ">" { inTag = false }
            } else if character == "<" {
                inTag = true
            } else {
                text.append(character)
            }
        }
        return decodeEntities(text)
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
                if name.hasPrefix("#x"), let code = UInt32(name.dropFirst(2), radix: 16), let scalar = Unicode.Scalar(code) {
                    decoded.unicodeScalars.append(scalar)
                } else if name.hasPrefix("#"), let code = UInt32(name.dropFirst()), let scalar = Unicode.Scalar(code) {
                    decoded.unicodeScalars.append(scalar)
                } else {
                    decoded += rest[ampersand...semicolon]
                }
            }
            rest = rest[rest.index(after: semicolon)...]
        }
        return decoded + rest
    }
}
