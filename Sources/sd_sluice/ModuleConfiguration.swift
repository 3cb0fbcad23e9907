import Foundation
import SluiceControl

/// The module's configuration file (dotconf, as speech-dispatcher's module files are: a
/// directive and its value a line, `#` comments):
///
///     SluiceSocket "/run/user/1000/sluice/speak.sock"   # the served graph's control socket
///     SluiceSpeaker "voice"                             # its text-driven node (default: the only one)
///     SluiceVolumeNode "fade"                           # a node with a live `gain` for volume
///     SluiceVoice "en"                                  # the voice when none is asked for
///
/// `SLUICE_CONTROL_SOCKET` in the environment overrides `SluiceSocket`; without either, the
/// socket `sluice serve graphs/speak.yaml` makes by default.
struct ModuleConfiguration {
    var socket: String
    var speaker: String?
    var volumeNode: String? = "fade"
    var defaultVoice = "en"

    init(file: String?) {
        var values: [String: String] = [:]
        if let file, let text = try? String(contentsOfFile: file, encoding: .utf8) {
            for line in text.split(whereSeparator: \.isNewline) {
                let content = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0]
                let parts = content.split(maxSplits: 1, whereSeparator: { $0 == " " || $0 == "\t" })
                guard parts.count == 2 else { continue }
                values[String(parts[0])] = parts[1].trimmingCharacters(in: .whitespaces)
                    .trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            }
        }
        socket = ProcessInfo.processInfo.environment["SLUICE_CONTROL_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
            ?? values["SluiceSocket"] ?? ControlSocketServer.defaultFolder + "/speak.sock"
        speaker = values["SluiceSpeaker"]
        if let volume = values["SluiceVolumeNode"] { volumeNode = volume.isEmpty || volume == "none" ? nil : volume }
        if let voice = values["SluiceVoice"], !voice.isEmpty { defaultVoice = voice }
    }
}
