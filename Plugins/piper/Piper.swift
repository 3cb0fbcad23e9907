// The `piper` provider: a natural local voice, Piper's neural speech, with word timings.
// docs/providers/piper.md.
import Glibc
import SluicePluginABI
import SluicePluginKit

@c(sluice_plugin_entry)
public func sluicePluginEntry() -> UnsafePointer<sluice_plugin_entry_t>? {
    SluicePlugin.entry {
        [.provider(Piper.description, make: { parameters throws(PluginError) in try Piper.make(parameters) })]
    }
}

enum Piper {
    static let defaultVoice = "en_US-joe-medium"

    static let description = NodeDescription(
        typeName: "piper", kind: .provider,
        summary: "Speaks text with a Piper voice, the local neural speech engine: S16LE mono at the voice's rate, with word timings.",
        outputs: [Port("out", .bytes, summary: "S16LE mono PCM at the voice's rate (22050 Hz for most); link it to an aligner")],
        parameters: [
            Parameter("voice", .string, default: .string(defaultVoice),
                      summary: "A Piper voice by name (en_US-joe-medium), looked for in SLUICE_PIPER_VOICE_PATH, ~/.local/share/piper/voices and installed voice packages."),
            Parameter("model", .path, default: nil, summary: "A voice's .onnx file (its .onnx.json beside it); instead of voice."),
            Parameter("rate", .number(0.25...4), default: .number(1), summary: "Speaking speed: 1 is the voice's own, 2 twice as fast."),
            Parameter("noise", .number(0...2), default: nil, summary: "Piper's noise scale (variation in the voice); the voice's own by default."),
            Parameter("noise-width", .number(0...2), default: nil, summary: "Piper's noise width scale (variation in timing); the voice's own by default."),
            Parameter("sentence-silence", .number(0...10), default: .number(0), unit: "s", summary: "Silence after each sentence Piper speaks."),
            Parameter("volume", .number(0...4), default: .number(1), summary: "Multiplies the samples: 1 as the voice speaks."),
            Parameter("speaker", .integer(0...100_000), default: .integer(0), summary: "The speaker of a voice that has several."),
            Parameter("buffer", .number(0.02...60), default: .number(2), unit: "s",
                      summary: "Most audio held ahead of the graph before the next sentence is asked for."),
            Parameter("start-timeout", .number(1...600), default: .number(120), unit: "s",
                      summary: "How long the voice may take to load when the node is made."),
        ])

    static func make(_ parameters: Parameters) throws(PluginError) -> PiperProvider {
        let model = parameters.string("model").flatMap { $0.isEmpty ? nil : $0 }
        let key = PiperEngine.Key(
            python: python(), voice: model == nil ? parameters.string("voice") ?? defaultVoice : nil, model: model)
        let engine = try PiperEngines.engine(for: key, timeout: parameters.double("start-timeout") ?? 120)
        let settings = PiperProvider.Settings(
            rate: parameters.double("rate") ?? 1, noise: parameters.double("noise"), noiseWidth: parameters.double("noise-width"),
            sentenceSilence: parameters.double("sentence-silence") ?? 0, volume: parameters.double("volume") ?? 1,
            speaker: parameters.integer("speaker") ?? 0)
        return PiperProvider(engine: engine, settings: settings, bufferSeconds: parameters.double("buffer") ?? 2)
    }

    /// The Python to run the engine with (docs/providers/piper.md, "Installing"). Not a
    /// parameter: `configure` reaches parameters from control clients, and the program a node
    /// runs is the user's choice alone.
    static func python() -> String {
        if let variable = getenv("SLUICE_PIPER_PYTHON").map({ String(cString: $0) }), !variable.isEmpty { return variable }
        let dataHome = getenv("XDG_DATA_HOME").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 }
            ?? (getenv("HOME").map { String(cString: $0) } ?? "") + "/.local/share"
        let installed = dataHome + "/sluice/piper/bin/python3"
        if access(installed, X_OK) == 0 { return installed }
        return "python3"
    }
}
