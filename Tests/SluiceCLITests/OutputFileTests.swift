import Foundation
import SluiceTestSupport
import Testing

/// `-o/--output` on every command that writes a sound file (`render`, `speak`, `convert`), and
/// file names Sluice cannot write refused with what it can write, never written as WAV.
@Suite struct OutputFileTests {
    let folder = TemporaryFolder("sluice-output")

    @Test("render -o with an extension Sluice does not write: a usage error naming .wav and .flac; nothing written",
          arguments: ["out.mp3", "out.ogg", "out.aiff"])
    func renderRefuses(_ name: String) throws {
        let target = folder.file(name)
        let outcome = try CLI.sluice(["render", "graphs/tone.yaml", "-o", target.path])
        #expect(outcome.status == 2)
        let fileExtension = target.pathExtension
        #expect(outcome.standardError.hasPrefix(
            "error: -o/--output: cannot write '\(target.path)': Sluice writes .wav (WAV) or .flac (FLAC), not .\(fileExtension)\n"),
            "\(outcome.standardError)")
        #expect(!FileManager.default.fileExists(atPath: target.path))
    }

    @Test("-o naming a folder, or a file in a folder that does not exist: our sentence with the fix, not libsndfile's")
    func outputIntoAFolder() throws {
        let folder = TemporaryFolder()
        let intoFolder = try CLI.sluice(["render", "graphs/tone.yaml", "-o", folder.path])
        #expect(intoFolder.status == 1)
        #expect(intoFolder.standardError == "error: cannot write '\(folder.path)': it is a folder; give a file name, such as '\(folder.path)/out.wav'\n",
                "\(intoFolder.standardError)")
        let missing = try CLI.sluice(["render", "graphs/tone.yaml", "-o", folder.path + "/no/such/x.wav"])
        #expect(missing.status == 1)
        #expect(missing.standardError.hasPrefix("error: cannot write '\(folder.path)/no/such/x.wav': no such file or directory"),
                "\(missing.standardError)")
        #expect(!missing.standardError.contains("System error"))
    }

    @Test("speak -o with an extension Sluice does not write: refused before any speech")
    func speakRefuses() throws {
        let target = folder.file("hello.mp3")
        let outcome = try CLI.sluice(["speak", "Hello.", "-o", target.path, "--no-cache"])
        #expect(outcome.status == 2)
        #expect(outcome.standardError.contains("Sluice writes .wav (WAV) or .flac (FLAC), not .mp3"), "\(outcome.standardError)")
        #expect(!FileManager.default.fileExists(atPath: target.path))
    }

    @Test("a wav.sink path Sluice cannot write fails the graph at the path's value, with the fix")
    func wavSinkRefuses() throws {
        let target = folder.file("a4.mp3")
        let outcome = try CLI.sluice(["render", "tone duration=0.1 ! wav.sink path=\(target.path)"])
        #expect(outcome.status == 1)
        #expect(outcome.standardError.contains("error: node 'wav.sink' (wav.sink): cannot write '\(target.path)': Sluice writes .wav (WAV) or .flac (FLAC), not .mp3"),
                "\(outcome.standardError)")
        #expect(outcome.standardError.contains("fix: name the file .wav or .flac, or set `format: wav` or `format: flac`"))
        #expect(!FileManager.default.fileExists(atPath: target.path))
        // A container named outright is written under any name: the user asked for it.
        let named = try CLI.sluice(["render", "tone duration=0.1 ! wav.sink format=wav path=\(target.path)"])
        #expect(named.status == 0, "\(named.standardError)")
        #expect(try SoundFileContents(target).rate == 48_000)
    }

    @Test("WAV and FLAC names in any case, and a name without an extension (WAV), are written")
    func writableNames() throws {
        for name in ["a.WAV", "b.Flac", "c.wave", "noextension"] {
            let target = folder.file(name)
            let outcome = try CLI.sluice(["render", "graphs/tone.yaml", "-o", target.path])
            #expect(outcome.status == 0, "\(name): \(outcome.standardError)")
            #expect((try? SoundFileContents(target)) != nil, "\(name) is not a sound file")
        }
    }

    @Test("speak writes with -o and --output, and still with --out (its old name); two of them is a usage error")
    func speakSpellings() throws {
        var written: [Data] = []
        for option in ["-o", "--output", "--out"] {
            let target = folder.file("hi\(option).wav")
            let outcome = try CLI.sluice(["speak", "Hi.", option, target.path, "--no-cache"])
            #expect(outcome.status == 0, "\(option): \(outcome.standardError)")
            written.append(try Data(contentsOf: target))
        }
        #expect(Set(written).count == 1, "the three spellings write the same file")
        let twice = try CLI.sluice(["speak", "Hi.", "-o", folder.file("x.wav").path, "--out", folder.file("y.wav").path])
        #expect(twice.status == 2)
        #expect(twice.standardError.contains("give the output file once: -o/--output (--out is its old name)"), "\(twice.standardError)")
    }

    @Test("every command that writes a sound file documents -o/--output in its help", arguments: ["render", "speak", "convert"])
    func helpNamesOutput(_ command: String) throws {
        let help = try CLI.sluice([command, "--help"])
        #expect(help.status == 0)
        #expect(help.standardOutput.contains("-o, --output <output>"), "\(help.standardOutput)")
        #expect(!help.standardOutput.contains("--out <"), "the old name stays out of the help")
    }
}
