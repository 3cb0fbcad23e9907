import SluiceControlProtocol
import SluiceSpeechd

/// The control surfaces' parsers: what a local client writes to the control socket, what any
/// sender puts in a UDP datagram, what speech-dispatcher hands sd_sluice.
enum ControlTargets {
    /// One request line. A reply is always one line of JSON that says whether it was taken.
    static func controlJSON(_ bytes: UnsafeBufferPointer<UInt8>) {
        let (request, id) = ControlJSON.parse(bytes)
        let reply = ControlJSON.reply(request.map { _ in [:] }, command: nil, id: id)
        guard !reply.contains("\n"), reply.hasPrefix("{") else { fatalError("a reply that is not one JSON line: \(reply)") }
        _ = ControlJSON.firstDuplicateKey(bytes)
    }

    /// One OSC datagram, with no secret and with one (then a datagram without it is dropped).
    static func osc(_ bytes: UnsafeBufferPointer<UInt8>) {
        var buffer = Array(bytes)
        guard OSCRequest.parse(&buffer, count: buffer.count) != nil else { fatalError("no answer without a secret") }
        var again = Array(bytes)
        _ = OSCRequest.parse(&again, count: again.count, secret: Array("0123456789abcdef".utf8))
    }

    /// A speech-dispatcher message body (SSML) and a SET block's `name=value` lines.
    static func speechd(_ bytes: UnsafeBufferPointer<UInt8>) {
        let text = String(decoding: bytes, as: UTF8.self)
        let plain = SpeechdText.plain(text)
        if plain.unicodeScalars.contains(where: { $0.value == 0 }) { fatalError("a NUL in the text spoken") }
        var settings = SpeechdSettings()
        for line in text.split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            _ = settings.set(String(line[..<equals]), String(line[line.index(after: equals)...]))
        }
        guard (-100...100).contains(settings.rate), (-100...100).contains(settings.pitch), (-100...100).contains(settings.volume)
        else { fatalError("a setting outside −100…100: \(settings)") }
        _ = settings.provider
    }
}
