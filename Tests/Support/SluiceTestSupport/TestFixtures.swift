import Foundation
import Synchronization

/// The plugins only the tests load (Tests/Fixtures, a package of its own so that Sluice's
/// product list holds only what users can use), built once and found by path.
///
/// scripts/test builds the package up front and names the folder in SLUICE_TEST_FIXTURES. A
/// `swift test` run without it builds the package on first use (`swift build`, into
/// `.build-fixtures`) and sets the variable, so the child processes of exit tests find the
/// same build without building again.
public enum TestFixtures {
    /// The environment variable naming the folder the fixture plugins are built in.
    public static let folderVariable = "SLUICE_TEST_FIXTURES"

    /// The package's root folder (this file is Tests/Support/SluiceTestSupport/TestFixtures.swift).
    public static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    public struct BuildFailed: Error, CustomStringConvertible {
        public let description: String
    }

    /// The path of fixture plugin `name` (as its product is named, e.g. "test-plugin-swift").
    /// A failed build fails every test that asks, each with the build's error.
    public static func plugin(_ name: String) -> String {
        folder.appendingPathComponent("lib\(name).so").path
    }

    /// Where the fixture plugins are: built on first use unless scripts/test built them.
    public static var folder: URL {
        if let named = ProcessInfo.processInfo.environment[folderVariable], !named.isEmpty {
            return URL(fileURLWithPath: named)
        }
        return built.withLock { built in
            if let built { return built }
            let folder = build()
            setenv(folderVariable, folder.path, 1)
            built = folder
            return folder
        }
    }

    private static let built = Mutex<URL?>(nil)

    /// Builds Tests/Fixtures (debug) and returns its products folder. A build that fails is
    /// reported on standard error; the paths then name files that do not exist, and each
    /// test that loads one fails with the loader's error.
    private static func build() -> URL {
        let fixtures = packageRoot.appendingPathComponent("Tests/Fixtures").path
        let scratch = packageRoot.appendingPathComponent(".build-fixtures").path
        let arguments = ["build", "--package-path", fixtures, "--scratch-path", scratch]
        do {
            let outcome = try CommandRunner.run(
                executable: URL(fileURLWithPath: "/usr/bin/env"), ["swift"] + arguments, timeout: 900)
            if outcome.status != 0 {
                FileHandle.standardError.write(Data("TestFixtures: `swift \(arguments.joined(separator: " "))` failed:\n\(outcome.standardError)\(outcome.standardOutput)\n".utf8))
            }
            let path = try CommandRunner.run(
                executable: URL(fileURLWithPath: "/usr/bin/env"), ["swift"] + arguments + ["--show-bin-path"], timeout: 120)
            let folder = path.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
            if path.status == 0, !folder.isEmpty { return URL(fileURLWithPath: folder) }
        } catch {
            FileHandle.standardError.write(Data("TestFixtures: could not build Tests/Fixtures: \(error)\n".utf8))
        }
        return URL(fileURLWithPath: scratch).appendingPathComponent("debug")
    }
}
