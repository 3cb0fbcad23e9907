import Foundation
import SluiceGraph
import SluicePlugins
import SluiceTestSupport
import Testing

/// scripts/install into a temporary PREFIX (from what `swift build` already built), then a
/// plugin built outside the repository against the installed headers with pkg-config, loaded
/// with the loader and run.
@Suite struct InstallTests {
    static func run(_ program: String, _ arguments: [String], environment: [String: String] = [:]) throws -> CommandRunner.Outcome {
        try CommandRunner.run(
            executable: URL(fileURLWithPath: program), arguments, timeout: 120, currentDirectory: Plugins.packageRoot,
            environment: environment)
    }

    @Test("into ~/.local the user unit goes where systemd looks in a home; --no-man says no man page was installed")
    func homePrefix() throws {
        let home = TemporaryFolder("sluice-home")
        let prefix = home.path + "/.local"
        let install = try Self.run(
            "/bin/bash", [Plugins.packageRoot.appendingPathComponent("scripts/install").path,
                          "--bin-path", CommandRunner.productsFolder.path, "--no-man", prefix],
            environment: ["HOME": home.path, "XDG_DATA_HOME": ""])
        try #require(install.status == 0, "\(install.standardError)")
        #expect(FileManager.default.fileExists(atPath: prefix + "/share/systemd/user/sluice@.service"))
        #expect(!FileManager.default.fileExists(atPath: prefix + "/lib/systemd/user/sluice@.service"))
        #expect(install.standardError.contains("systemd user unit (share/systemd/user/sluice@.service)"), "\(install.standardError)")
        #expect(!install.standardError.contains("man page"), "\(install.standardError)")
        #expect(!install.standardError.contains("note: systemd does not look"), "\(install.standardError)")
    }

    @Test("install, then cc $(pkg-config --cflags sluice-plugin) -shared -fPIC the C example, then load and run it")
    func buildAgainstInstalledTree() throws {
        let prefix = TemporaryFolder("sluice-prefix")
        let install = try Self.run(
            "/bin/bash", [Plugins.packageRoot.appendingPathComponent("scripts/install").path,
                          "--bin-path", CommandRunner.productsFolder.path, "--no-man", prefix.path])
        try #require(install.status == 0, "\(install.standardError)")
        for file in ["bin/sluice", "lib/sluice/plugins/libsluice-ducker.so", "lib/sluice/plugins/sluice-espeak-engine", "include/sluice/sluice.h",
                     "include/sluice/common.h", "lib/pkgconfig/sluice-plugin.pc", "share/sluice/examples/ducker/ducker.c",
                     "share/bash-completion/completions/sluice", "share/zsh/site-functions/_sluice",
                     "share/fish/vendor_completions.d/sluice.fish", "lib/systemd/user/sluice@.service",
                     "share/sluice/graphs/speak.yaml"] {
            #expect(FileManager.default.fileExists(atPath: prefix.path(file)), "\(file) is not installed")
        }

        // The unit runs the installed tool (scripts/test-package verifies the unit as a whole).
        let unit = try String(contentsOfFile: prefix.path("lib/systemd/user/sluice@.service"), encoding: .utf8)
        #expect(unit.contains("\nExecStart=\(prefix.path)/bin/sluice serve %E/sluice/graphs/%i.yaml"), "\(unit)")

        // Outside the repository: only the installed tree and pkg-config.
        let work = TemporaryFolder("sluice-plugin-author")
        let environment = ["PKG_CONFIG_PATH": prefix.path("lib/pkgconfig")]
        let flags = try Self.run("/usr/bin/pkg-config", ["--cflags", "sluice-plugin"], environment: environment)
        #expect(flags.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines) == "-I\(prefix.path)/include")
        let plugindir = try Self.run("/usr/bin/pkg-config", ["--variable=plugindir", "sluice-plugin"], environment: environment)
        #expect(plugindir.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines) == prefix.path + "/lib/sluice/plugins")
        let output = work.path("libsluice-my-ducker.so")
        let source = prefix.path("share/sluice/examples/ducker/ducker.c")
        let compile = try Self.run(
            "/bin/sh", ["-c", "cc $(pkg-config --cflags sluice-plugin) -std=c11 -pedantic -Werror -shared -fPIC -fvisibility=hidden -o \"$1\" \"$2\" -lm", "sh", output, source],
            environment: environment)
        try #require(compile.status == 0, "\(compile.standardError)")

        let library = try PluginLibrary.load(path: output)
        #expect(library.nodeTypes.map(\.descriptor.typeName) == ["ducker"])
        // It runs, and matches the ducker built by SwiftPM within float rounding.
        let yaml = DuckerTests.yaml(ducked: true)
        let (mine, _) = try GraphRendering.render(try Plugins.compile(yaml, libraries: [library]), text: ["e e"])
        let (built, _) = try GraphRendering.render(try Plugins.compile(yaml, libraries: [try PluginLibrary.load(path: Plugins.ducker)]), text: ["e e"])
        #expect(mine.count == built.count && !mine.isEmpty)
        #expect(zip(mine, built).allSatisfy { abs($0 - $1) <= 1e-6 })

        // The installed tool finds the installed plugin folder with no configuration.
        let listing = try Self.run(prefix.path("bin/sluice"), ["plugins"], environment: ["SLUICE_PLUGIN_PATH": ""])
        #expect(listing.status == 0, "\(listing.standardError)")
        #expect(listing.standardOutput.contains("  1. \(prefix.path)/lib/sluice/plugins (install)"), "\(listing.standardOutput)")
        #expect(listing.standardOutput.contains("\(prefix.path)/lib/sluice/plugins/libsluice-ducker.so (install)\n  ducker (processor)"))
    }
}
