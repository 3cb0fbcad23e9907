import Foundation
import SluiceTestSupport
import Testing

@Suite("sluice nodes")
struct NodesCommandTests {
    /// Every built-in node type, its kind, and its parameters in the order listed.
    static let builtins: [(type: String, kind: String, parameters: [String])] = [
        ("tone", "source", ["waveform", "frequency", "amplitude", "duration", "rate", "channels", "seed", "pace", "stall-at", "stall-for"]),
        ("wav.source", "source", ["path", "pace"]),
        ("bytes.source", "source", ["path", "format", "rate", "channels", "chunk"]),
        ("morse", "source", ["frequency", "wpm", "amplitude", "rate", "channels"]),
        ("aligner", "processor", []),
        ("resampler", "processor", ["quality", "rate"]),
        ("crossfader", "processor", ["duration"]),
        ("fader", "processor", ["length", "gain", "ramp", "fade-in", "fade-out"]),
        ("meter", "processor", ["interval", "loudness", "true-peak"]),
        ("mixer", "processor", Self.mixerParameters),
        ("channel-map", "processor", ["channels", "routing", "gain", "pan"]),
        ("tee", "processor", ["outputs"]),
        ("wav.sink", "sink", ["path", "format", "sample-format", "rate", "channels", "title", "artist", "meter"]),
        ("null.sink", "sink", ["rate", "channels", "speed", "period", "meter"]),
    ]

    /// One type's entry as printed: `type (kind): summary`, port lines, `  name: …` lines.
    struct Entry {
        var type: String
        var kind: String
        var parameters: [String]
        var text: String
    }

    /// Splits `sluice nodes` output into entries (blank lines between them).
    static func entries(_ output: String) -> [Entry] {
        output.components(separatedBy: "\n\n").compactMap { block in
            let lines = block.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
            guard let header = lines.first?.firstMatch(of: /^(\S+) \((source|processor|sink)\): \S/) else { return nil }
            let parameters = lines.dropFirst().compactMap { $0.firstMatch(of: /^  ([a-z][a-z0-9-]*):\s/).map { String($0.1) } }
            return Entry(type: String(header.1), kind: String(header.2), parameters: parameters, text: block)
        }
    }

    static let mixerParameters = ["inputs", "gains", "ramp"] + (1...16).map { "level\($0)" }

    @Test("--ladspa lists the installed LADSPA plugins; ladspa:<library>:<label> shows one with its parameters")
    func ladspaPlugins() throws {
        let listing = try CLI.sluice(["nodes", "--ladspa"])
        #expect(listing.status == 0, "\(listing.standardError)")
        let lines = listing.standardOutput.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.hasPrefix("amp.so:amp_mono ") && $0.contains("Mono Amplifier (LADSPA 1048, 1 in, 1 out") }, "\(lines.prefix(10))")
        #expect(lines.contains { $0.hasPrefix("dj_eq_1901.so:dj_eq_mono ") }, "swh-plugins is a test package")

        let one = try CLI.sluice(["nodes", "ladspa:delay.so:delay_5s"])
        #expect(one.status == 0, "\(one.standardError)")
        let entry = try #require(Self.entries(one.standardOutput).first)
        #expect(entry.type == "ladspa" && entry.kind == "processor")
        #expect(entry.parameters == ["library", "label", "delay-seconds", "dry-wet-balance"])
        #expect(entry.text.contains("delay-seconds: number in 0…5, default 1, live"), "\(entry.text)")

        let wrong = try CLI.sluice(["nodes", "ladspa:amp.so:amp_mno"])
        #expect(wrong.status == 1)
        #expect(wrong.standardError == "error: '/usr/lib/ladspa/amp.so' has no LADSPA plugin labelled 'amp_mno'\n  fix: its plugins: amp_mono, amp_stereo\n")
    }

    @Test("lists every built-in type, with its kind and each parameter")
    func listsEverything() throws {
        let outcome = try CLI.sluice(["nodes"])
        #expect(outcome.status == 0, "\(outcome.standardError)")
        #expect(outcome.standardError == "")
        let listed = Self.entries(outcome.standardOutput)
        // Every block of the output is a type entry.
        #expect(listed.count == outcome.standardOutput.components(separatedBy: "\n\n").count)
        for builtin in Self.builtins {
            let entry = try #require(listed.first { $0.type == builtin.type }, "'\(builtin.type)' is not listed")
            #expect(entry.kind == builtin.kind, "'\(builtin.type)'")
            #expect(entry.parameters == builtin.parameters, "'\(builtin.type)'")
        }
        #expect(Set(listed.map(\.type)).count == listed.count, "a type listed twice")
    }

    @Test("each entry shows ports, and per parameter its type, default and what it does")
    func entryShape() throws {
        let outcome = try CLI.sluice(["nodes", "fader"])
        #expect(outcome.status == 0, "\(outcome.standardError)")
        #expect(outcome.standardOutput == """
            fader (processor): Fades in and out around breaks and at the end so nothing clicks, and applies a gain.
              in   in [frames]  Float32 frames
              out  out [frames]  The same format, `length` frames later
              length: integer in 0…48000 (frames), default 256 — The look-ahead: the delay the node adds to see breaks coming, and the longest fade (both fades default to it).
              gain: number in 0…4, default 1, live — Linear gain on everything; 1 leaves samples outside the fades untouched.
              ramp: number in 0…10 (s), default 0.02, live — How long a gain change takes while playing, a straight line so it never clicks; live (from the next gain change).
              fade-in: integer in 0…48000 (frames), optional, live — Fade-in length after a break, at most `length` (the default); live, from the next break.
              fade-out: integer in 0…48000 (frames), optional, live — Fade-out length before a break, at most `length` (the default); live, from the next break.

            """)
    }

    @Test("sluice nodes tone shows only tone, as the full list does")
    func onlyTone() throws {
        let outcome = try CLI.sluice(["nodes", "tone"])
        #expect(outcome.status == 0, "\(outcome.standardError)")
        let listed = Self.entries(outcome.standardOutput)
        #expect(listed.map(\.type) == ["tone"])
        let all = Self.entries(try CLI.sluice(["nodes"]).standardOutput)
        let tone = try #require(all.first { $0.type == "tone" })
        #expect(outcome.standardOutput == tone.text + "\n")
    }

    @Test("several types: just those")
    func severalTypes() throws {
        let outcome = try CLI.sluice(["nodes", "wav.sink", "tone"])
        #expect(outcome.status == 0, "\(outcome.standardError)")
        #expect(Set(Self.entries(outcome.standardOutput).map(\.type)) == ["tone", "wav.sink"])
    }

    @Test("an unknown type: exit 1 with the closest name", arguments: [
        ("tonne", "tone"), ("wav.snk", "wav.sink"), ("fadr", "fader"),
    ])
    func unknownType(_ typo: String, _ meant: String) throws {
        let outcome = try CLI.sluice(["nodes", typo])
        #expect(outcome.status == 1)
        #expect(outcome.standardOutput == "")
        #expect(outcome.standardError == "error: unknown node type '\(typo)'; did you mean '\(meant)'?\n")
    }

    @Test("an unknown type with nothing close: exit 1, no suggestion")
    func unknownTypeNothingClose() throws {
        let outcome = try CLI.sluice(["nodes", "xyzzyq"])
        #expect(outcome.status == 1)
        #expect(outcome.standardOutput == "")
        #expect(outcome.standardError == "error: unknown node type 'xyzzyq'\n")
    }
}

/// Plugin node types in `sluice nodes`, marked with their file as gst-inspect marks elements
/// with their plugin, and `--json`.
@Suite("sluice nodes: plugins and --json")
struct NodesCommandPluginTests {
    /// The plugins built beside the tool, each with the types it provides.
    static let plugins: [(file: String, types: [String])] = [
        ("libsluice-ducker.so", ["ducker"]), ("libsluice-espeak.so", ["espeak"]), ("libsluice-elevenlabs.so", ["elevenlabs"]),
        ("libsluice-openai.so", ["openai"]), ("libsluice-http-pcm.so", ["http-pcm"]),
    ]

    @Test("the plugins' types are listed beside the built-in ones, each with the file it comes from")
    func pluginTypesListed() throws {
        let outcome = try CLI.sluice(["nodes"], environment: ["SLUICE_PLUGIN_PATH": ""])
        #expect(outcome.status == 0, "\(outcome.standardError)")
        let entries = NodesCommandTests.entries(outcome.standardOutput)
        for (file, types) in Self.plugins {
            for type in types {
                let entry = try #require(entries.first { $0.type == type }, "'\(type)' is not listed")
                let lines = entry.text.split(separator: "\n")
                #expect(lines.dropFirst().first == "  plugin  \(CommandRunner.productsFolder.appendingPathComponent(file).path)", "\(entry.text)")
            }
        }
        // Built-in types carry no such line.
        let tone = try #require(entries.first { $0.type == "tone" })
        #expect(!tone.text.contains("  plugin  "))
        #expect(entries.first { $0.type == "ducker" }?.kind == "processor")
        #expect(entries.first { $0.type == "espeak" }?.kind == "source")
    }

    @Test("--builtin lists only the built-in types")
    func builtinOnly() throws {
        let outcome = try CLI.sluice(["nodes", "--builtin"])
        #expect(outcome.status == 0)
        let types = Set(NodesCommandTests.entries(outcome.standardOutput).map(\.type))
        #expect(types == Set(NodesCommandTests.builtins.map(\.type) + ["jack.sink", "jack.source", "ladspa", "lv2"]))
    }

    @Test("--json: every type with its kind, plugin file, ports and parameters (type, range, default, unit, live, summary)")
    func json() throws {
        let outcome = try CLI.sluice(["nodes", "--json"], environment: ["SLUICE_PLUGIN_PATH": ""])
        #expect(outcome.status == 0, "\(outcome.standardError)")
        let types = try #require(try JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8)) as? [[String: Any]])
        let text = try CLI.sluice(["nodes"], environment: ["SLUICE_PLUGIN_PATH": ""]).standardOutput
        #expect(types.compactMap { $0["type"] as? String } == NodesCommandTests.entries(text).map(\.type), "the same types, in the same order")

        let fader = try #require(types.first { $0["type"] as? String == "fader" })
        #expect(fader["kind"] as? String == "processor")
        #expect(fader["plugin"] == nil)
        let inputs = try #require(fader["inputs"] as? [[String: Any]])
        #expect(inputs.first?["name"] as? String == "in" && inputs.first?["medium"] as? String == "frames")
        let parameters = try #require(fader["parameters"] as? [[String: Any]])
        #expect(parameters.compactMap { $0["name"] as? String } == ["length", "gain", "ramp", "fade-in", "fade-out"])
        let length = parameters[0], gain = parameters[1]
        #expect(length["type"] as? String == "integer" && length["minimum"] as? Int == 0 && length["maximum"] as? Int == 48_000)
        #expect(length["default"] as? Int == 256 && length["unit"] as? String == "frames" && length["live"] as? Bool == false)
        #expect(gain["type"] as? String == "number" && gain["maximum"] as? Double == 4 && gain["live"] as? Bool == true)
        #expect((gain["summary"] as? String)?.hasPrefix("Linear gain") == true)

        let wavSink = try #require(types.first { $0["type"] as? String == "wav.sink" })
        let format = try #require((wavSink["parameters"] as? [[String: Any]])?.first { $0["name"] as? String == "format" })
        #expect(format["type"] as? String == "choice" && format["choices"] as? [String] == ["auto", "wav", "flac"])
        let path = try #require((wavSink["parameters"] as? [[String: Any]])?.first { $0["name"] as? String == "path" })
        #expect(path["required"] as? Bool == true && path["default"] == nil)

        let mixer = try #require(types.first { $0["type"] as? String == "mixer" })
        #expect(mixer["inputCountParameter"] as? String == "inputs")

        let espeak = try #require(types.first { $0["type"] as? String == "espeak" })
        #expect(espeak["plugin"] as? String == CommandRunner.productsFolder.appendingPathComponent("libsluice-espeak.so").path)
        let rate = try #require((espeak["parameters"] as? [[String: Any]])?.first { $0["name"] as? String == "rate" })
        #expect(rate["unit"] as? String == "wpm" && rate["default"] as? Int == 175)
    }

    @Test("--json with named types: just those; --json and --markdown together: a usage error")
    func jsonSelection() throws {
        let outcome = try CLI.sluice(["nodes", "tone", "--json"])
        let types = try #require(try JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8)) as? [[String: Any]])
        #expect(types.compactMap { $0["type"] as? String } == ["tone"])
        let both = try CLI.sluice(["nodes", "--json", "--markdown"])
        #expect(both.status == 2)
        #expect(both.standardError.contains("give --markdown or --json, not both"))
    }
}
