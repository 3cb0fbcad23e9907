import Foundation
import SluiceTestSupport
import Testing

/// `sluice --version`: Sluice's version from its one constant, the plugin ABI range from the C
/// header, and every library with the version it reports and the file it was found in.
@Suite struct VersionReportTests {
    static let packageRoot = CLI.packageRoot

    /// `SluiceVersion.string` as the source writes it.
    static func versionConstant() throws -> String {
        let source = try String(
            contentsOf: packageRoot.appendingPathComponent("Sources/SluiceHost/SluiceVersion.swift"), encoding: .utf8)
        let match = try #require(source.firstMatch(of: /public static let string = "(\d+\.\d+\.\d+)"/))
        return String(match.1)
    }

    /// A `#define NAME Nu` of the plugin ABI's common.h.
    static func abiDefine(_ name: String) throws -> String {
        let header = try String(
            contentsOf: packageRoot.appendingPathComponent("Sources/SluicePluginABI/include/sluice/common.h"), encoding: .utf8)
        let line = try #require(header.split(separator: "\n").first { $0.hasPrefix("#define \(name) ") })
        return String(try #require(line.split(separator: " ").last)).replacingOccurrences(of: "u", with: "")
    }

    @Test("the first line is `sluice VERSION` from SluiceVersion, the second the ABI range from common.h")
    func versionAndABI() throws {
        let outcome = try CLI.sluice(["--version"])
        #expect(outcome.status == 0, "\(outcome.standardError)")
        #expect(outcome.standardError == "")
        let lines = outcome.standardOutput.split(separator: "\n").map(String.init)
        #expect(lines.first == "sluice \(try Self.versionConstant())")
        let version = try Self.abiDefine("SLUICE_ABI_VERSION"), minimum = try Self.abiDefine("SLUICE_ABI_VERSION_MIN")
        #expect(lines.dropFirst().first == "plugin ABI \(version) (loads plugins built for versions \(minimum)…\(version))")
    }

    @Test("each library: found, with the version it reports and its file; speexdsp has no version call")
    func libraries() throws {
        let outcome = try CLI.sluice(["--version"])
        let lines = outcome.standardOutput.split(separator: "\n").map(String.init)
        func entry(_ name: String) -> [String]? {
            lines.first { $0.hasPrefix("  \(name) ") }?.split(separator: " ").map(String.init)
        }
        // Each reported by the library itself (a number), and the real file it was loaded from.
        for name in ["libjack", "libsndfile", "libsamplerate", "libsoxr", "liblo", "espeak-ng", "libcurl"] {
            let fields = try #require(entry(name), "\(name) is not listed:\n\(outcome.standardOutput)")
            #expect(fields.count >= 3, "\(fields)")
            #expect(fields[1].wholeMatch(of: /\d+(\.\d+)+/) != nil, "\(name)'s version: \(fields)")
            #expect(fields[2].hasPrefix("/") && FileManager.default.fileExists(atPath: fields[2]), "\(name)'s file: \(fields)")
        }
        let speex = try #require(entry("libspeexdsp"))
        #expect(speex.joined(separator: " ").contains("(no version call) /"), "\(speex)")
        // What libsndfile says of itself, through its own call, is what the tool prints.
        let sndfile = try #require(entry("libsndfile"))
        #expect(sndfile[2].contains("libsndfile.so"))
        #expect(lines.first { $0.hasPrefix("  espeak-ng ") }?.hasSuffix("(for the espeak plugin)") == true)
    }

    @Test("--version is the root command's only option; `sluice` alone prints the help")
    func bareCommand() throws {
        let outcome = try CLI.sluice([])
        #expect(outcome.status == 0)
        #expect(outcome.standardOutput.contains("USAGE: sluice [--version] <subcommand>"), "\(outcome.standardOutput)")
        #expect(outcome.standardOutput.contains("  schema "), "the schema command is listed")
    }
}
