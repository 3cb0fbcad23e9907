import Foundation
import SluiceTestSupport
import Testing

/// `sluice schema` and the committed schemas/sluice-graph.schema.json: up to date with the
/// node registry, every example graph valid against it under a real JSON Schema validator
/// (Python's jsonschema, draft 2020-12; scripts/setup installs it), wrong values caught, and
/// every example graph pointing an editor at it from its first line.
@Suite struct SchemaCommandTests {
    static let schemaPath = "schemas/sluice-graph.schema.json"
    static var schemaURL: URL { CLI.packageRoot.appendingPathComponent(schemaPath) }

    /// The example graphs: graphs/*.yaml and the plugins' own (Plugins/*/*.yaml).
    static func exampleGraphs() throws -> [URL] {
        let plugins = CLI.packageRoot.appendingPathComponent("Plugins")
        let pluginGraphs = try FileManager.default.contentsOfDirectory(atPath: plugins.path).flatMap { folder in
            ((try? FileManager.default.contentsOfDirectory(atPath: plugins.appendingPathComponent(folder).path)) ?? [])
                .filter { $0.hasSuffix(".yaml") }.map { plugins.appendingPathComponent(folder).appendingPathComponent($0) }
        }
        return CLI.graphFiles().map { CLI.graphsFolder.appendingPathComponent($0) } + pluginGraphs.sorted { $0.path < $1.path }
    }

    /// Loads the schema (checked against the draft's meta-schema) and validates each YAML file
    /// against it: a line `PATH: JSON-POINTER: MESSAGE` per error, exit 1 when there is one.
    static let validator = """
        import json, sys
        import yaml
        from jsonschema import Draft202012Validator
        schema = json.load(open(sys.argv[1]))
        Draft202012Validator.check_schema(schema)
        validator = Draft202012Validator(schema)
        failed = False
        for path in sys.argv[2:]:
            with open(path) as f:
                document = yaml.safe_load(f)
            for error in sorted(validator.iter_errors(document), key=lambda e: [str(p) for p in e.absolute_path]):
                failed = True
                print(path + ": /" + "/".join(str(p) for p in error.absolute_path) + ": " + error.message)
        sys.exit(1 if failed else 0)
        """

    static func validate(_ files: [URL], schema: URL = schemaURL) throws -> CommandRunner.Outcome {
        try CommandRunner.run(executable: URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", validator, schema.path] + files.map(\.path))
    }

    @Test("schemas/sluice-graph.schema.json is what `sluice schema` prints (regenerate: sluice schema > schemas/sluice-graph.schema.json)")
    func upToDate() throws {
        let outcome = try CLI.sluice(["schema"], environment: ["SLUICE_PLUGIN_PATH": ""])
        #expect(outcome.status == 0, "\(outcome.standardError)")
        #expect(outcome.standardError == "")
        let committed = try String(contentsOf: Self.schemaURL, encoding: .utf8)
        #expect(outcome.standardOutput == committed, "regenerate it: sluice schema > \(Self.schemaPath)")
    }

    @Test("the validator is there: Python's jsonschema and PyYAML (scripts/setup installs them)")
    func validatorPresent() throws {
        let outcome = try CommandRunner.run(
            executable: URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", "import jsonschema, yaml; print('ok')"])
        try #require(outcome.status == 0, "run scripts/setup: \(outcome.standardError)")
    }

    @Test("every example graph is valid against the schema, under a real JSON Schema validator")
    func examplesValidate() throws {
        let graphs = try Self.exampleGraphs()
        #expect(graphs.count >= 9, "\(graphs)")
        let outcome = try Self.validate(graphs)
        #expect(outcome.status == 0, "\(outcome.standardOutput)\(outcome.standardError)")
        #expect(outcome.standardOutput == "")
    }

    @Test("the validator catches what sluice refuses: a string where a number goes, a misspelt parameter, an unknown key, a bad link, a choice not offered")
    func wrongValuesCaught() throws {
        let folder = TemporaryFolder()
        let graph = try folder.write("""
            nodes:
              beep: { type: tone, frequency: loud }
              fade: { type: fader, gian: 1 }
              out:  { type: wav.sink, path: out.wav, format: mp3 }
            links:
              - beep -> fade -> out
              - beep ->
            colour: red

            """, to: "wrong.yaml")
        let outcome = try Self.validate([graph])
        #expect(outcome.status == 1, "\(outcome.standardError)")
        let errors = outcome.standardOutput.split(separator: "\n").map { String($0.dropFirst(graph.path.count + 2)) }
        #expect(errors.contains("/nodes/beep/frequency: 'loud' is not of type 'number'"), "\(errors)")
        #expect(errors.contains("/nodes/fade: Additional properties are not allowed ('gian' was unexpected)"), "\(errors)")
        #expect(errors.contains { $0.hasPrefix("/nodes/out/format: 'mp3' is not one of ['auto', 'wav', 'flac']") }, "\(errors)")
        #expect(errors.contains("/: Additional properties are not allowed ('colour' was unexpected)"), "\(errors)")
        #expect(errors.contains { $0.hasPrefix("/links/1: 'beep ->' does not match") }, "\(errors)")
        #expect(errors.count == 5, "\(errors)")
        // And sluice refuses the same file.
        let check = try CLI.sluice(["check", graph.path])
        #expect(check.status == 1)
        #expect(check.standardError.contains("unknown top-level key 'colour'"), "\(check.standardError)")
    }

    @Test("--installed: each installed LV2 and LADSPA plugin's own parameters are checked, and the installed URIs are offered")
    func installedPlugins() throws {
        let folder = TemporaryFolder()
        let schema = try CLI.sluice(["schema", "--installed"])
        #expect(schema.status == 0, "\(schema.standardError)")
        let schemaFile = try folder.write(schema.standardOutput, to: "installed.schema.json")
        let shipped = ["lv2-eq.yaml", "ladspa-echo.yaml"].map { CLI.graphsFolder.appendingPathComponent($0) }
        let valid = try Self.validate(shipped, schema: schemaFile)
        #expect(valid.status == 0, "\(valid.standardOutput)\(valid.standardError)")

        let graph = try folder.write("""
            nodes:
              eq:   { type: lv2, uri: "http://gareus.org/oss/lv2/fil4#mono", gain3: 40, gian3: 1 }
              echo: { type: ladspa, library: delay.so, label: delay_5s, delay-seconds: 9 }
              any:  { type: lv2, uri: "urn:not-installed", whatever: 1 }

            """, to: "plugins.yaml")
        let outcome = try Self.validate([graph], schema: schemaFile)
        let errors = outcome.standardOutput.split(separator: "\n").map { String($0.dropFirst(graph.path.count + 2)) }
        #expect(errors.contains("/nodes/eq/gain3: 40 is greater than the maximum of 18"), "\(errors)")
        #expect(errors.contains("/nodes/eq: Additional properties are not allowed ('gian3' was unexpected)"), "\(errors)")
        #expect(errors.contains("/nodes/echo/delay-seconds: 9 is greater than the maximum of 5"), "\(errors)")
        // A plugin not installed is left to `sluice check`.
        #expect(errors.count == 3, "\(errors)")

        let document = try #require(try JSONSerialization.jsonObject(with: Data(schema.standardOutput.utf8)) as? [String: Any])
        let definitions = try #require(document["$defs"] as? [String: Any])
        let lv2 = try #require((definitions["node.lv2"] as? [String: Any])?["properties"] as? [String: Any])
        let examples = (lv2["uri"] as? [String: Any])?["examples"] as? [String] ?? []
        #expect(examples.contains("http://lv2plug.in/plugins/eg-amp"), "\(examples.prefix(5))")
    }

    @Test("a number in range passes and one out of range fails, as in the node's descriptor")
    func ranges() throws {
        let folder = TemporaryFolder()
        let good = try folder.write("nodes:\n  f: { type: fader, gain: 4, length: 0 }\n", to: "good.yaml")
        let bad = try folder.write("nodes:\n  f: { type: fader, gain: 4.5, length: -1 }\n", to: "bad.yaml")
        #expect(try Self.validate([good]).status == 0)
        let outcome = try Self.validate([bad])
        #expect(outcome.standardOutput.contains("/nodes/f/gain: 4.5 is greater than the maximum of 4"), "\(outcome.standardOutput)")
        #expect(outcome.standardOutput.contains("/nodes/f/length: -1 is less than the minimum of 0"), "\(outcome.standardOutput)")
    }

    @Test("every example graph's first line points an editor at the schema, by a path that exists")
    func modelines() throws {
        for graph in try Self.exampleGraphs() {
            let text = try String(contentsOf: graph, encoding: .utf8)
            let first = try #require(text.split(separator: "\n").first.map(String.init))
            let match = try #require(first.wholeMatch(of: /# yaml-language-server: \$schema=(\S+)/), "\(graph.path): \(first)")
            let target = graph.deletingLastPathComponent().appendingPathComponent(String(match.1)).standardizedFileURL
            #expect(target.path == Self.schemaURL.standardizedFileURL.path, "\(graph.path) points at \(target.path)")
        }
    }

    @Test("--builtin leaves the plugins' types out; with them, each plugin type has its own definition")
    func builtinOnly() throws {
        let builtin = try CLI.sluice(["schema", "--builtin"])
        #expect(builtin.status == 0)
        let document = try #require(try JSONSerialization.jsonObject(with: Data(builtin.standardOutput.utf8)) as? [String: Any])
        let definitions = try #require(document["$defs"] as? [String: Any])
        #expect(definitions["node.tone"] != nil && definitions["node.espeak"] == nil)
        let full = try #require(try JSONSerialization.jsonObject(with: Data(String(contentsOf: Self.schemaURL, encoding: .utf8).utf8)) as? [String: Any])
        #expect((full["$defs"] as? [String: Any])?["node.espeak"] != nil)
    }
}
