import Foundation
import SluiceTestSupport
import Testing

/// `sluice plugins`, and plugins in graph commands, with the plugins `swift build` put beside
/// the tool (found with no configuration).
@Suite("sluice plugins")
struct PluginsCommandTests {
    static let buildFolder = CommandRunner.productsFolder.resolvingSymlinksInPath().path
    static var ducker: String { CommandRunner.productsFolder.appendingPathComponent("libsluice-ducker.so").path }

    static func sluice(_ arguments: [String], pluginPath: String? = nil, in directory: URL = CLI.packageRoot) throws -> CommandRunner.Outcome {
        try CommandRunner.run(
            executable: CommandRunner.productsFolder.appendingPathComponent("sluice"), arguments, timeout: CLI.timeout,
            currentDirectory: directory, environment: ["SLUICE_PLUGIN_PATH": pluginPath ?? ""])
    }

    @Test("the plugins built beside sluice are found with no configuration")
    func builtPluginsFound() throws {
        let outcome = try Self.sluice(["plugins"])
        #expect(outcome.status == 0, "\(outcome.standardError)")
        #expect(outcome.standardOutput.contains("search path:\n  1. "))
        #expect(outcome.standardOutput.contains("libsluice-ducker.so (install)\n  ducker (processor): Lowers `in` while `speech`"))
        #expect(!outcome.standardOutput.contains("test-plugin"), "test-only libraries are not named libsluice-*")
    }

    @Test("--verbose prints each type's ports and parameters")
    func verbose() throws {
        let outcome = try Self.sluice(["plugins", "--verbose"])
        #expect(outcome.status == 0, "\(outcome.standardError)")
        #expect(outcome.standardOutput.contains("    in   speech [frames]"))
        // `depth` is live (SLUICE_PARAM_LIVE): `sluice serve` and `sluice ctl set` change it.
        #expect(outcome.standardOutput.contains("    depth: number in 0…60 (dB), default 12, live — "))
        #expect(outcome.standardOutput.contains("    ramp: number in 0…10 (s), default 0.02 — "))
        // The plugins the `lv2` and `ladspa` nodes host, with their parameters.
        #expect(outcome.standardOutput.contains("\n  http://lv2plug.in/plugins/eg-amp  Simple Amplifier (LV2, 1 in, 1 out)\n    parameters: gain\n"))
        #expect(outcome.standardOutput.contains("\n  delay.so:delay_5s  Simple Delay Line (LADSPA 1043, 1 in, 1 out"), "\(outcome.standardOutput.suffix(400))")
    }

    @Test("order and shadowing: the trusted graph folder, then SLUICE_PLUGIN_PATH, then the build folder")
    func order() throws {
        let graphs = TemporaryFolder()
        let environment = TemporaryFolder()
        try FileManager.default.copyItem(atPath: Self.ducker, toPath: graphs.file("libsluice-ducker.so").path)
        try graphs.write("name: g\nnodes:\n  a: { type: tone }\n  out: { type: null.sink }\nlinks:\n  - a -> out\n", to: "g.yaml")
        let outcome = try Self.sluice(["plugins", "--graph", graphs.file("g.yaml").path, "--trust-graph-folder"], pluginPath: environment.url.path)
        #expect(outcome.status == 0, "\(outcome.standardError)")
        let lines = outcome.standardOutput.split(separator: "\n").map(String.init)
        #expect(lines[1] == "  1. \(graphs.url.path) (graph folder)")
        #expect(lines[2] == "  2. \(environment.url.path) (SLUICE_PLUGIN_PATH)")
        #expect(lines[3].hasPrefix("  3. ") && lines[3].hasSuffix(" (install)"))
        #expect(outcome.standardOutput.contains("\(graphs.file("libsluice-ducker.so").path) (graph folder)\n  ducker (processor)"))
        #expect(outcome.standardOutput.contains("libsluice-ducker.so (install)\n  shadowed by \(graphs.file("libsluice-ducker.so").path)"))
    }

    @Test("a broken plugin on the path: listed with its error, exit 1; it fails only a graph that needs a missing type")
    func brokenPlugin() throws {
        let folder = TemporaryFolder()
        let bad = try folder.write("not a library\n", to: "libsluice-bad.so").path
        let outcome = try Self.sluice(["plugins"], pluginPath: folder.url.path)
        #expect(outcome.status == 1)
        #expect(outcome.standardOutput.contains("\(bad) (SLUICE_PLUGIN_PATH)\n  error: plugin '\(bad)' is not a shared library ("))

        let unrelated = try Self.sluice(["check", "graphs/tone.yaml"], pluginPath: folder.url.path)
        #expect(unrelated.status == 0, "\(unrelated.standardError)")

        let needing = try Self.sluice(["check", "tone ! bad-node ! null.sink"], pluginPath: folder.url.path)
        #expect(needing.status == 1)
        #expect(needing.standardError.contains("unknown node type 'bad-node'"), "\(needing.standardError)")
        #expect(needing.standardError.contains("a plugin on the search path did not load: plugin '\(bad)' is not a shared library ("),
                "\(needing.standardError)")
    }

    @Test("a graph's folder is not opened unless trusted: the graph fails with a hint, and runs with --trust-graph-folder")
    func untrustedGraphFolder() throws {
        let folder = TemporaryFolder()
        try FileManager.default.copyItem(atPath: Self.ducker, toPath: folder.file("libsluice-duck2.so").path)
        // The ducker under another file name still registers `ducker`, which the build folder
        // also has: trusted, the two clash; untrusted, the folder's copy is never opened.
        let graph = try folder.write("name: g\nnodes:\n  a: { type: tone }\n  out: { type: null.sink }\nlinks:\n  - a -> out\n", to: "g.yaml")
        let plain = try Self.sluice(["check", graph.path])
        #expect(plain.status == 0, "\(plain.standardError)")
        let trusted = try Self.sluice(["check", graph.path, "--trust-graph-folder"])
        #expect(trusted.status == 1)
        #expect(trusted.standardError.contains("node type 'ducker' from plugin '"), "\(trusted.standardError)")

        // A type only the folder's plugin provides: the hint names the file and the flag.
        let other = TemporaryFolder()
        try FileManager.default.copyItem(atPath: CommandRunner.productsFolder.appendingPathComponent("libsluice-espeak.so").path,
                                         toPath: other.file("libsluice-voice.so").path)
        let speaking = try other.write("name: s\nnodes:\n  v: { type: espeek }\n  a: { type: aligner }\n  out: { type: null.sink }\nlinks:\n  - v -> a -> out\n", to: "s.yaml")
        let hinted = try Self.sluice(["check", speaking.path])
        #expect(hinted.status == 1)
        #expect(hinted.standardError.contains("the graph's folder holds libsluice-voice.so, not opened: if you trust it, add --trust-graph-folder"),
                "\(hinted.standardError)")
        let listing = try Self.sluice(["plugins", "--graph", speaking.path])
        #expect(listing.standardOutput.contains("(not opened: libsluice-voice.so in the graph's folder \(other.url.path); add --trust-graph-folder to search it)"),
                "\(listing.standardOutput)")
    }

    @Test("a plugin file or folder others may write is refused with the fix", arguments: [true, false])
    func writableByOthers(_ folderWritable: Bool) throws {
        let folder = TemporaryFolder()
        let copy = folder.file("libsluice-mine.so").path
        try FileManager.default.copyItem(atPath: CommandRunner.productsFolder.appendingPathComponent("libsluice-espeak.so").path, toPath: copy)
        let loose = folderWritable ? folder.url.path : copy
        #expect(chmod(loose, folderWritable ? 0o777 : 0o666) == 0)
        defer { _ = chmod(folder.url.path, 0o755) }
        let outcome = try Self.sluice(["plugins"], pluginPath: folder.url.path)
        #expect(outcome.status == 1)
        #expect(outcome.standardOutput.contains(
            "error: plugin '\(copy)' is not loaded: '\(loose)' may be written by other users (mode \(folderWritable ? "777" : "666")); run `chmod go-w '\(loose)'` if it is yours"),
            "\(outcome.standardOutput)")
    }

    /// As sudo and ssh check a key: every folder up to the root, and the owners too. The
    /// tests run as root and plant files as nobody (uid 65534).
    @Test("a plugin another user owns, or under a folder another user owns or may write, is refused, its code never run",
          arguments: ["sticky", "owned-folder", "writable-grandparent"])
    func ownedByOthers(_ trap: String) throws {
        let root = TemporaryFolder()
        let top = root.url.path
        var folder = top
        var expected = ""
        switch trap {
        case "sticky":
            // /tmp-like: anyone may add files, nobody may replace another's; the file is nobody's.
            #expect(chmod(top, 0o1777) == 0)
            expected = "belongs to uid 65534"
        case "owned-folder":
            folder = top + "/theirs"
            #expect(mkdir(folder, 0o755) == 0 && chown(folder, 65_534, 65_534) == 0)
            expected = "'\(folder)' belongs to uid 65534"
        default:
            // A 0755 folder of root's inside one that anyone may write (and rename it away).
            #expect(chmod(top, 0o777) == 0)
            folder = top + "/inner"
            #expect(mkdir(folder, 0o755) == 0)
            expected = "'\(top)' may be written by other users (mode 777)"
        }
        defer { _ = chmod(top, 0o755) }
        let copy = folder + "/libsluice-planted.so"
        try FileManager.default.copyItem(atPath: Self.ducker, toPath: copy)
        if trap == "sticky" { #expect(chown(copy, 65_534, 65_534) == 0) }
        let outcome = try Self.sluice(["plugins"], pluginPath: folder)
        #expect(outcome.status == 1)
        #expect(outcome.standardOutput.contains("error: plugin '\(copy)' is not loaded: "), "\(outcome.standardOutput)")
        #expect(outcome.standardOutput.contains(expected), "\(outcome.standardOutput)")
    }

    @Test("a second plugin with a taken type name: exit 1 naming both files")
    func duplicate() throws {
        let folder = TemporaryFolder()
        let copy = folder.file("libsluice-ducker-copy.so").path
        try FileManager.default.copyItem(atPath: Self.ducker, toPath: copy)
        let outcome = try Self.sluice(["check", "graphs/tone.yaml"], pluginPath: folder.url.path)
        #expect(outcome.status == 1)
        #expect(outcome.standardError.contains("error: node type 'ducker' from plugin '"), "\(outcome.standardError)")
        #expect(outcome.standardError.contains("is already defined by plugin '\(copy)'"), "\(outcome.standardError)")
    }

    @Test("the ducker example graph renders with the built plugin")
    func duckingExample() throws {
        let folder = TemporaryFolder()
        let output = folder.file("ducking.wav").path
        let outcome = try Self.sluice(["render", "Plugins/ducker/ducking.yaml", "--text", "hi", "-o", output])
        #expect(outcome.status == 0, "\(outcome.standardError)")
        #expect(FileManager.default.fileExists(atPath: output))
    }

    /// The plugin libraries a run of `sluice arguments…` opened, by file name, as the dynamic
    /// loader reports them (LD_DEBUG=files), with a cache folder (and so a plugin index) of
    /// the test's own.
    static func opened(_ arguments: [String], cache: TemporaryFolder, pluginPath: String = "") throws -> (Set<String>, CommandRunner.Outcome) {
        let outcome = try CommandRunner.run(
            executable: CommandRunner.productsFolder.appendingPathComponent("sluice"), arguments, timeout: CLI.timeout,
            currentDirectory: CLI.packageRoot,
            environment: ["SLUICE_PLUGIN_PATH": pluginPath, "XDG_CACHE_HOME": cache.url.path, "LD_DEBUG": "files"])
        var names: Set<String> = []
        for line in outcome.standardError.split(separator: "\n") where line.contains("file=") && line.contains("libsluice-") {
            guard let start = line.range(of: "file=") else { continue }
            let path = line[start.upperBound...].prefix { !$0.isWhitespace }
            if let name = path.split(separator: "/").last, name.hasPrefix("libsluice-") { names.insert(String(name)) }
        }
        return (names, outcome)
    }

    @Test("with the plugin index warm, a graph command opens only the plugins its graph uses; a new or changed file is opened again")
    func onlyNeededPluginsOpen() throws {
        let cache = TemporaryFolder()
        let shipped: Set = [
            "libsluice-ducker.so", "libsluice-espeak.so", "libsluice-elevenlabs.so", "libsluice-openai.so", "libsluice-http-pcm.so",
            "libsluice-piper.so",
        ]
        // First run: nothing is known yet, so every plugin is opened and remembered.
        var (names, outcome) = try Self.opened(["check", "graphs/tone.yaml"], cache: cache)
        #expect(outcome.status == 0, "\(outcome.standardError.suffix(500))")
        #expect(names == shipped)
        #expect(FileManager.default.fileExists(atPath: cache.file("sluice/plugin-index").path))
        // Then: none for a graph of built-in nodes, only espeak for the speech graph.
        (names, outcome) = try Self.opened(["check", "graphs/tone.yaml"], cache: cache)
        #expect(outcome.status == 0)
        #expect(names.isEmpty, "\(names)")
        (names, outcome) = try Self.opened(["check", "graphs/speak.yaml"], cache: cache)
        #expect(outcome.status == 0)
        #expect(names == ["libsluice-espeak.so"])

        // A plugin that appears on SLUICE_PLUGIN_PATH is opened once, then known.
        let extra = TemporaryFolder()
        let test = extra.file("libsluice-test.so").path
        try FileManager.default.copyItem(atPath: TestFixtures.plugin("test-plugin-swift"), toPath: test)
        (names, _) = try Self.opened(["check", "graphs/tone.yaml"], cache: cache, pluginPath: extra.url.path)
        #expect(names == shipped.union(["libsluice-test.so"]))
        (names, _) = try Self.opened(["check", "graphs/tone.yaml"], cache: cache, pluginPath: extra.url.path)
        #expect(names.isEmpty, "\(names)")
        // Replaced by another build (a new inode, size and time): opened again.
        try FileManager.default.removeItem(atPath: test)
        try FileManager.default.copyItem(atPath: CommandRunner.productsFolder.appendingPathComponent("libsluice-ducker.so").path, toPath: extra.file("libsluice-other.so").path)
        try FileManager.default.copyItem(atPath: TestFixtures.plugin("test-plugin-swift"), toPath: test)
        (names, outcome) = try Self.opened(["check", "graphs/tone.yaml"], cache: cache, pluginPath: extra.url.path)
        #expect(names.contains("libsluice-test.so"))
        // …and the copy of the ducker clashes with the shipped one, opened or known.
        #expect(outcome.status == 1)
        #expect(outcome.standardError.contains("node type 'ducker'"), "\(outcome.standardError.suffix(300))")
        try FileManager.default.removeItem(atPath: extra.file("libsluice-other.so").path)

        // A type nobody is known to provide: every plugin is opened, so the error can suggest.
        (names, outcome) = try Self.opened(["check", "tone ! duker ! null.sink"], cache: cache)
        #expect(outcome.status == 1)
        #expect(names == shipped)
        #expect(outcome.standardError.contains("did you mean 'ducker'?"), "\(outcome.standardError.suffix(300))")
    }
}
