import ProviderTestSupport

/// The espeak provider driven raw.
typealias RawEspeak = RawProvider

extension RawProvider {
    /// An espeak instance with these settings.
    convenience init(voice: String = "en", rate: Int = 175, pitch: Int = 50, volume: Int = 100, buffer: Double = 1.0, engines: Int = 0) throws {
        try self.init(path: Plugins.espeak, type: "espeak", [
            ("voice", .string(voice)), ("rate", .integer(rate)), ("pitch", .integer(pitch)), ("volume", .integer(volume)),
            ("buffer", .number(buffer)), ("engines", .integer(engines)),
        ])
    }
}
