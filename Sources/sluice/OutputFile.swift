import ArgumentParser
import SluiceAudio
import SluiceNodes

/// `-o/--output`, the sound file a command writes (`render`, `speak`, `convert`): checked
/// before anything runs, so a name Sluice cannot write (`.mp3`) is a usage error naming what
/// it can write, never a WAV file under another name.
enum OutputFile {
    /// [control-thread] Throws a usage error for an extension Sluice does not write.
    static func check(_ path: String) throws {
        guard SoundFileContainer(forPath: path) == nil else { return }
        throw ValidationError("-o/--output: " + SoundFileContainer.refusal(for: path))
    }

    /// How the file stores samples when nothing says otherwise: 32-bit float in WAV, 24-bit
    /// in FLAC (which cannot store floats).
    static func defaultSampleFormat(for path: String) -> SampleFormat {
        SoundFileContainer(forPath: path) == .flac ? .s24le : .f32le
    }
}
