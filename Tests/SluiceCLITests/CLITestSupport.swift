import CSndFile
import Foundation
import SluiceTestSupport
import Testing

/// Shared by the graph-command tests (`check`, `render`, `dot`, `nodes`): where the package's
/// graphs are, a way to run `sluice` with a deadline, temporary folders that clean up, and a
/// libsndfile reader for what `render` writes.
enum CLI {
    /// The package's root: this file is `<root>/Tests/SluiceCLITests/CLITestSupport.swift`.
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static let graphsFolder = packageRoot.appendingPathComponent("graphs")

    /// Every run of `sluice` in these tests is killed after this many seconds (each takes well
    /// under one), so a hang fails the test instead of stalling the suite.
    static let timeout: Double = 60

    /// The synthesis cache `sluice speak` uses in these tests: a folder of this test run's,
    /// never the user's, so no run depends on what an earlier one stored.
    static let cacheHome: String = {
        try? FileManager.default.createDirectory(at: cacheHomeURL(), withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(at: CLI.cacheHomeURL()) }
        return cacheHomeURL().path
    }()

    private static func cacheHomeURL() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("sluice-cli-cache-\(getpid())")
    }

    /// Runs `sluice arguments…` in `directory` (the package root unless told), with `input`
    /// on standard input when given, and `cacheHome` as its XDG cache folder.
    static func sluice(
        _ arguments: [String], in directory: URL = packageRoot, input: Data? = nil, environment: [String: String] = [:]
    ) throws -> CommandRunner.Outcome {
        try CommandRunner.run(
            "sluice", arguments, timeout: timeout, standardInput: input, currentDirectory: directory,
            environment: environment.merging(["XDG_CACHE_HOME": cacheHome]) { mine, _ in mine })
    }

    /// The `.yaml` graphs shipped in `graphs/`, by file name.
    static func graphFiles() -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: graphsFolder.path)) ?? []
        return names.filter { $0.hasSuffix(".yaml") }.sorted()
    }
}

extension TemporaryFolder {
    /// Copies the package's `graphs/` (with `graphs/audio/`) into the folder.
    func copyOfGraphs() throws -> URL {
        let copy = file("graphs")
        try FileManager.default.copyItem(at: CLI.graphsFolder, to: copy)
        return copy
    }
}

/// A sound file read back with libsndfile: every frame as Float (interleaved), the header.
struct SoundFileContents {
    struct CannotOpen: Error, CustomStringConvertible {
        let path: String
        let reason: String
        var description: String { "libsndfile cannot open '\(path)': \(reason)" }
    }

    var samples: [Float]
    var frames: Int
    var rate: Int
    var channels: Int
    /// libsndfile's format word: container | encoding.
    var format: Int32
    var title: String?

    var container: Int32 { format & Int32(SF_FORMAT_TYPEMASK) }
    var encoding: Int32 { format & Int32(SF_FORMAT_SUBMASK) }

    init(_ url: URL) throws {
        var info = SF_INFO()
        guard let handle = sf_open(url.path, Int32(SFM_READ), &info) else {
            throw CannotOpen(path: url.path, reason: String(cString: sf_strerror(nil)))
        }
        defer { sf_close(handle) }
        frames = Int(info.frames)
        rate = Int(info.samplerate)
        channels = Int(info.channels)
        format = info.format
        samples = [Float](repeating: 0, count: frames * channels)
        let read = sf_readf_float(handle, &samples, info.frames)
        if read != info.frames { throw CannotOpen(path: url.path, reason: "read \(read) of \(info.frames) frames") }
        title = sf_get_string(handle, Int32(SF_STR_TITLE)).map { String(cString: $0) }
    }
}

/// International Morse code timing as `MorseSource` documents it, to say how long a render of
/// `graphs/morse.yaml` must be without running the node.
enum MorseTiming {
    static let codes: [Character: String] = [
        "A": ".-", "C": "-.-.", "E": ".", "O": "---", "Q": "--.-", "S": "...", "T": "-",
    ]

    /// Dits in one utterance: an element is 1 (dit) or 3 (dah), 1 between the elements of a
    /// letter, 3 between letters, 7 between words, and 7 of silence closing the utterance.
    /// Only the letters in `codes` may appear.
    static func dits(utterance: String) -> Int {
        var total = 0
        var words = 0
        for word in utterance.split(whereSeparator: \.isWhitespace) {
            let letters = word.map { codes[Character($0.uppercased())]! }
            if words > 0 { total += 7 }
            words += 1
            for (index, code) in letters.enumerated() {
                if index > 0 { total += 3 }
                for (element, symbol) in code.enumerated() {
                    if element > 0 { total += 1 }
                    total += symbol == "-" ? 3 : 1
                }
            }
        }
        return words > 0 ? total + 7 : 0
    }

    /// Dits in a text, one utterance per non-blank line.
    static func dits(text: String) -> Int {
        text.split(whereSeparator: \.isNewline).map { dits(utterance: String($0)) }.reduce(0, +)
    }

    /// Frames in a dit: `max(1, round(1.2 / wpm × rate))`.
    static func ditFrames(wpm: Double, rate: Int) -> Int {
        max(1, Int((1.2 / wpm * Double(rate)).rounded()))
    }
}

/// The bytes of a rendered file, for bit-identity checks across runs: every byte, header
/// included (SoundFileWriter leaves out libsndfile's PEAK chunk, which would hold the time
/// of writing).
enum RenderedBytes {
    static func comparable(_ url: URL) throws -> Data {
        try Data(contentsOf: url)
    }

    /// Where a WAV file's PEAK chunk keeps its timestamp (after the 4-byte version), if it has one.
    static func peakTimestampRange(in data: Data) -> Range<Int>? {
        let bytes = [UInt8](data)
        guard bytes.count >= 12, bytes[0..<4].elementsEqual("RIFF".utf8), bytes[8..<12].elementsEqual("WAVE".utf8) else { return nil }
        var offset = 12
        while offset + 8 <= bytes.count {
            let size = (0..<4).reduce(0) { $0 | Int(bytes[offset + 4 + $1]) << (8 * $1) }
            if bytes[offset..<(offset + 4)].elementsEqual("PEAK".utf8) {
                let start = offset + 8 + 4
                return start + 4 <= bytes.count ? start..<(start + 4) : nil
            }
            offset += 8 + size + (size & 1)
        }
        return nil
    }
}
