import Foundation

/// The voices espeak-ng knows, read from `espeak-ng --voices`: what sd_sluice lists to
/// speech-dispatcher and what `sluice`'s shell completion offers for `--voice`.
public enum EspeakVoices {
    /// One row of the listing: the language code (`en-gb`), the voice's name
    /// (`English_(Great_Britain)`) and its file (`gmw/en`).
    public struct Voice: Sendable, Hashable {
        public var language: String
        public var name: String
        public var file: String
    }

    /// The rows of `espeak-ng --voices`, in its order; empty when espeak-ng is not there.
    public static func list(espeak: String = "/usr/bin/espeak-ng") -> [Voice] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: espeak)
        process.arguments = ["--voices"]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return [] }
        let listing = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        // Pty Language Age/Gender VoiceName File Other Languages
        return listing.split(separator: "\n").dropFirst().compactMap { row in
            let fields = row.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 5 else { return nil }
            return Voice(language: String(fields[1]), name: String(fields[3]), file: String(fields[4]))
        }
    }
}
