/// What speech-dispatcher sets (SET: `rate`, `pitch`, `volume` from −100 to 100, `voice`,
/// `synthesis_voice`, `language`, `punctuation_mode`, `cap_let_recogn`, and modes a speech
/// engine handles) mapped to the served graph: the espeak provider's `rate` (words a minute),
/// `pitch` (0–99), `voice`, `punctuation` and `capitals`, the piper provider's `rate` and
/// `voice` (`provider(for:)`), and the volume node's gain.
public struct SpeechdSettings: Equatable, Sendable {
    public var rate = 0
    public var pitch = 0
    public var volume = 100
    public var voice = "en"
    /// A voice type (MALE1 … CHILD_FEMALE), as an espeak-ng variant.
    public var voiceType: String?
    public var synthesisVoice: String?
    /// Punctuation spoken by name: none, some, most, all (the espeak provider's `punctuation`).
    public var punctuation = "none"
    /// How capital letters are told: none, word (speech-dispatcher's `spell`: "capital" before
    /// the letter), pitch (its `icon`: espeak-ng has no sound icon; a higher pitch tells it
    /// without one). The espeak provider's `capitals`.
    public var capitals = "none"
    /// Whether `punctuation` and `capitals` were ever set to other than none: from then on
    /// they are always sent, so setting one back to none reaches the provider (a `configure`
    /// keeps the values it is not given).
    private var sendsPunctuation = false
    private var sendsCapitals = false

    public init() {}

    /// Sets one value; false when the name or value is not one speech-dispatcher sends (a
    /// number that is not a whole number, or lies outside −100…100 by more than rounding:
    /// `rate=1e300`, `rate=nan` and `rate=99999999999999999999` are refused, not clamped).
    public mutating func set(_ name: String, _ value: String) -> Bool {
        func number() -> Int? { Int(value).flatMap { (-100...100).contains($0) ? $0 : nil } }
        switch name {
        case "rate", "pitch", "volume":
            guard let number = number() else { return false }
            switch name {
            case "rate": rate = number
            case "pitch": pitch = number
            default: volume = number
            }
        case "language": if value != "NULL" { voice = value.lowercased() }
        case "voice": voiceType = value == "NULL" ? nil : value.uppercased()
        case "synthesis_voice": synthesisVoice = value == "NULL" || value.isEmpty ? nil : value
        case "punctuation_mode":
            guard ["none", "some", "most", "all"].contains(value) else { return false }
            punctuation = value
            sendsPunctuation = sendsPunctuation || value != "none"
        case "cap_let_recogn":
            guard let mode = ["none": "none", "spell": "word", "icon": "pitch"][value] else { return false }
            capitals = mode
            sendsCapitals = sendsCapitals || mode != "none"
        case "spelling_mode", "pitch_range":
            return true  // the graph's provider speaks text as it is
        default:
            return false
        }
        return true
    }

    /// The parameters of a provider of type `type` (the served graph's `speaker-types`): what
    /// that provider has of these settings, and nothing it lacks, since a `configure` with a
    /// parameter the node does not have is refused whole.
    ///
    /// - `espeak`: `provider`.
    /// - `piper`: `rate`, a speed factor: 0.5 at −100, 1 at 0 (the voice's own), 3 at 100; the
    ///   synthesis voice as its `voice` (a Piper voice name). Piper voices have no pitch,
    ///   punctuation or capitals setting, and one voice speaks one language.
    /// - any other: the synthesis voice as its `voice`, when one was set.
    public func provider(for type: String) -> [String: String] {
        switch type {
        case "espeak":
            return provider
        case "piper":
            let factor = rate < 0 ? 1 + 0.5 * Double(rate) / 100 : 1 + 2 * Double(rate) / 100
            var parameters = ["rate": String(format: "%.3f", factor)]
            if let synthesisVoice { parameters["voice"] = synthesisVoice }
            return parameters
        default:
            return synthesisVoice.map { ["voice": $0] } ?? [:]
        }
    }

    /// The espeak provider's parameters: −100 … 100 around espeak-ng's defaults.
    public var provider: [String: String] {
        // Rate: 175 words a minute at 0, 80 at −100, 450 at 100 (espeak-ng's own range).
        let words = rate < 0 ? 175 + (175 - 80) * rate / 100 : 175 + (450 - 175) * rate / 100
        var voiceName = synthesisVoice ?? voice
        if synthesisVoice == nil, let variant = voiceType.flatMap(Self.variants.index(forKey:)).map({ Self.variants.values[$0] }) {
            voiceName += "+" + variant
        }
        var parameters = ["rate": String(words), "pitch": String(50 + pitch / 2), "voice": voiceName]
        // Only once asked for: a graph whose provider has neither (not espeak) still takes the rest.
        if sendsPunctuation { parameters["punctuation"] = punctuation }
        if sendsCapitals { parameters["capitals"] = capitals }
        return parameters
    }

    /// The volume node's gain: 1 at speech-dispatcher's default 100, 0 at −100.
    public var gain: Double { Double(volume + 100) / 200 }

    public static let variants: [String: String] = [
        "MALE1": "m1", "MALE2": "m2", "MALE3": "m3", "FEMALE1": "f1", "FEMALE2": "f2", "FEMALE3": "f3",
        "CHILD_MALE": "m4", "CHILD_FEMALE": "f4",
    ]
}
