import Foundation
import SluiceTestSupport
import Testing

@Suite("sluice check")
struct CheckCommandTests {
    private let folder = TemporaryFolder("sluice-check")

    /// What `check` says of each shipped graph: its nodes and links.
    static let shippedGraphs: [String: (nodes: Int, links: Int)] = [
        "ladspa-echo.yaml": (4, 3),
        "lv2-eq.yaml": (4, 3),
        "live-gain.yaml": (3, 2),
        "mix.yaml": (7, 6),
        "morse.yaml": (3, 2),
        "record-and-listen.yaml": (5, 4),
        "speak.yaml": (7, 6),
        "speech-render.yaml": (6, 5),
        "tone.yaml": (3, 2),
    ]

    @Test("check opens no LADSPA library for a graph without a `ladspa` node, and only the one a graph names")
    func ladspaOpenedOnlyWhenUsed() throws {
        // glibc's loader reports every library it opens.
        let without = try CLI.sluice(["check", "graphs/morse.yaml"], environment: ["LD_DEBUG": "files"])
        #expect(without.status == 0, "\(without.standardError)")
        #expect(!without.standardError.contains("/ladspa/"), "\(without.standardError.split(separator: "\n").filter { $0.contains("ladspa") })")
        let with = try CLI.sluice(["check", "graphs/ladspa-echo.yaml"], environment: ["LD_DEBUG": "files"])
        #expect(with.status == 0, "\(with.standardError)")
        let opened = Set(with.standardError.split(separator: "\n").compactMap { line in
            line.firstMatch(of: /file=(\S*\/ladspa\/[^ \[]+)/).map { String($0.1) }
        })
        #expect(opened == ["/usr/lib/ladspa/delay.so"], "\(opened)")
    }

    @Test("the graphs this test knows are all shipped")
    func shippedGraphsArePresent() {
        #expect(Set(CLI.graphFiles()).isSuperset(of: Self.shippedGraphs.keys))
    }

    @Test("every graph in graphs/ checks ok, with its node and link counts: a summary, on standard error", arguments: CLI.graphFiles())
    func shippedGraphChecks(_ name: String) throws {
        let path = "graphs/\(name)"
        let outcome = try CLI.sluice(["check", path])
        #expect(outcome.status == 0, "\(outcome.standardError)")
        #expect(outcome.standardOutput == "")
        if let (nodes, links) = Self.shippedGraphs[name] {
            #expect(outcome.standardError == "\(path): ok (\(nodes) nodes, \(links) links)\n")
        } else {
            // A graph added since: the line's shape is still fixed.
            #expect(outcome.standardError.wholeMatch(of: /graphs\/[^:]+: ok \(\d+ nodes, \d+ links\)\n/) != nil,
                    "\(outcome.standardError)")
        }
    }

    @Test("--verbose lists where each node runs live: the speech chain on the worker, a live chain in the JACK cycle on the period's buffers")
    func verboseShowsPlacement() throws {
        let speech = try CLI.sluice(["check", "--verbose", "graphs/speak.yaml"])
        #expect(speech.status == 0, "\(speech.standardError)")
        // The listing is data (standard output); the verdict went to standard error.
        #expect(speech.standardError == "graphs/speak.yaml: ok (7 nodes, 6 links)\n")
        let lines = speech.standardOutput.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        let placement = Dictionary(uniqueKeysWithValues: lines.map { ($0[0], $0[1]) })
        #expect(placement == [
            "voice": "source-thread", "align": "worker", "resample": "worker", "xfade": "worker",
            "fade": "worker", "stereo": "worker", "out": "jack-cycle",
        ])
        // The resampler's auto quality: check compiles as a render, so it names both picks.
        #expect(speech.standardOutput.contains("(quality auto: soxr-hq here, speex-6 live)"), "\(speech.standardOutput)")
        let live = try CLI.sluice(["check", "-v", "graphs/live-gain.yaml"])
        #expect(live.status == 0, "\(live.standardError)")
        #expect(live.standardOutput.split(separator: "\n").count == 3, "\(live.standardOutput)")
        // Frame for frame from JACK's input to its output: on the period's buffers, no ring.
        #expect(live.standardOutput.split(separator: "\n").allSatisfy { $0.contains(" jack-direct ") }, "\(live.standardOutput)")
    }

    /// Writes `yaml` as `name` in the temporary folder and checks it from there, so messages
    /// start with the bare file name.
    private func check(_ yaml: String, as name: String) throws -> CommandRunner.Outcome {
        try folder.write(yaml, to: name)
        return try CLI.sluice(["check", name], in: folder.url)
    }

    @Test("numbers at the extremes (±1e300, NaN, infinities, past Int) are refused with the place and the range, never trapped on",
          arguments: ["1e300", "-1e300", ".nan", ".inf", "-.inf", "9223372036854775808", "-9223372036854775809"])
    func extremeNumbers(_ value: String) throws {
        let folder = TemporaryFolder()
        for (line, expected) in [
            ("  fade: { type: fader, length: \(value) }", "must be an integer in 0…48000"),
            ("  fade: { type: fader, gain: \(value) }", "gain"),
        ] {
            let graph = try folder.write(
                "name: extremes\nnodes:\n  tone: { type: tone, duration: 1 }\n\(line)\n  out: { type: null.sink }\nlinks: [tone -> fade -> out]\n",
                to: "extremes.yaml")
            let outcome = try CLI.sluice(["check", graph.path])
            #expect(outcome.status == 1, "\(line): \(outcome.standardError)")
            #expect(outcome.standardError.contains("extremes.yaml:4:"), "\(line): \(outcome.standardError)")
            #expect(outcome.standardError.contains(expected), "\(line): \(outcome.standardError)")
        }
        for setting in ["watermark", "max-buffered", "block"] {
            let graph = try folder.write(
                "name: extremes\nnodes:\n  tone: { type: tone, duration: 1 }\n  out: { type: null.sink }\nlinks: [tone -> out]\nplayback: { \(setting): \(value) }\n",
                to: "playback.yaml")
            let outcome = try CLI.sluice(["check", graph.path])
            #expect(outcome.status == 1, "\(setting): \(outcome.standardError)")
            #expect(outcome.standardError.contains("playback.yaml:6:"), "\(setting): \(outcome.standardError)")
        }
    }

    @Test("a format mismatch: exit 1, file:line:col of the link, and the node to insert")
    func formatMismatch() throws {
        let outcome = try check("""
            name: bad
            nodes:
              voice: { type: tone, rate: 24000 }
              fade:  { type: fader }
              out:   { type: wav.sink, path: x.wav, rate: 48000 }
            links:
              - voice -> fade -> out

            """, as: "rates.yaml")
        #expect(outcome.status == 1)
        #expect(outcome.standardOutput == "")
        #expect(outcome.standardError == """
            rates.yaml:7:22: error: format mismatch: sample rates differ: 'fade' gives 24000 Hz, 'out' takes 48000 Hz
              fix: insert a resampler between 'fade' (24000 Hz) and 'out' (48000 Hz)

            """)
    }

    @Test("invalid YAML: exit 1 at the place the parser stopped, with how to close the mapping")
    func yamlSyntax() throws {
        let outcome = try check("""
            name: bad
            nodes:
              a4: { type: tone }
              out: { type: null.sink

            """, as: "syntax.yaml")
        #expect(outcome.status == 1)
        #expect(outcome.standardOutput == "")
        #expect(outcome.standardError == """
            syntax.yaml:5:1: error: invalid YAML: did not find expected ',' or '}' (while parsing a flow mapping at line 4, column 8)
              fix: close the `{` with `}` and separate its entries with ','

            """)
    }

    @Test("several errors are reported together, each with its fix, in file order")
    func severalErrorsInFileOrder() throws {
        let outcome = try check("""
            name: bad
            nodes:
              a4:   { type: tone, frequncy: 440 }
              fade: { type: fadr }
              out:  { type: wav.sink, path: x.wav }
            links:
              - a4 -> fade -> out

            """, as: "typos.yaml")
        #expect(outcome.status == 1)
        #expect(outcome.standardOutput == "")
        #expect(outcome.standardError == """
            typos.yaml:3:23: error: node 'a4' (tone) has no parameter 'frequncy'
              fix: did you mean 'frequency'?
            typos.yaml:4:17: error: unknown node type 'fadr' for node 'fade'
              fix: did you mean 'fader'?

            """)
    }

    @Test("errors are sorted by place in the file, not by when the check found them")
    func errorsSortedByPlace() throws {
        // Links are resolved after nodes are made, but written first here: the link error
        // comes first.
        let outcome = try check("""
            name: bad
            links:
              - a4 -> fade -> outt
            nodes:
              a4:   { type: tone, amplitude: 3 }
              fade: { type: fader }
              out:  { type: wav.sink, path: x.wav, rate: 7 }

            """, as: "order.yaml")
        #expect(outcome.status == 1)
        #expect(outcome.standardOutput == "")
        #expect(outcome.standardError == """
            order.yaml:3:19: error: link to missing node 'outt'
              fix: did you mean 'out'?
            order.yaml:5:34: error: parameter 'amplitude' of node 'a4' must be a number in 0…1, got 3
              fix: amplitude: 0.5 — Peak value (full scale is 1).
            order.yaml:7:46: error: parameter 'rate' (Hz) of node 'out' must be a rate in 1000…384000, or auto, got 7
              fix: rate: auto — The file's rate; auto takes the input's. A set rate is what auto rates upstream follow.

            """)
    }

    @Test("a link is checked at both ends even when the node it leaves could not be made")
    func linkFromABrokenNode() throws {
        let outcome = try check("""
            name: bad
            nodes:
              a4:   { type: tone }
              fade: { type: fader, gain: loud }
              out:  { type: wav.sink, path: x.wav }
            links:
              - a4 -> fade -> outt

            """, as: "ends.yaml")
        #expect(outcome.status == 1)
        #expect(outcome.standardError.hasPrefix("""
            ends.yaml:4:30: error: parameter 'gain' of node 'fade' must be a number in 0…4, got 'loud'
              fix: gain: 1 — Linear gain on everything; 1 leaves samples outside the fades untouched.

            """))
        #expect(outcome.standardError.contains("""
            ends.yaml:7:19: error: link to missing node 'outt'
              fix: did you mean 'out'?

            """))
    }

    @Test("an unknown top-level key does not hide the file's other errors: all of them, in file order")
    func unknownKeyHidesNothing() throws {
        let outcome = try check("""
            name: keys
            colour: red
            nodes:
              a4:   { type: tone, frequncy: 440 }
              fade: { type: fadr }
              out:  { type: wav.sink, path: x.wav }
            links:
              - a4 -> fade -> out
            playback: { strategy: auto, tempo: fast }

            """, as: "keys.yaml")
        #expect(outcome.status == 1)
        #expect(outcome.standardOutput == "")
        let errors = outcome.standardError.split(separator: "\n").filter { !$0.hasPrefix("  fix:") }
        #expect(errors == [
            "keys.yaml:2:1: error: unknown top-level key 'colour'",
            "keys.yaml:4:23: error: node 'a4' (tone) has no parameter 'frequncy'",
            "keys.yaml:5:17: error: unknown node type 'fadr' for node 'fade'",
            "keys.yaml:9:29: error: unknown playback setting 'tempo'",
        ], "\(outcome.standardError)")
        // With the other errors fixed, the unknown key alone still fails the check.
        let alone = try check("nodes:\n  a4: { type: tone }\n  out: { type: null.sink }\nlinks: [a4 -> out]\ncolour: red\n", as: "alone.yaml")
        #expect(alone.status == 1)
        #expect(alone.standardError.hasPrefix("alone.yaml:5:1: error: unknown top-level key 'colour'\n"), "\(alone.standardError)")
    }

    @Test("a structural error still stops the check before the graph's meaning (it could not be read whole)")
    func structuralErrorStops() throws {
        let outcome = try check("nodes:\n  a4: { type: tone, frequncy: 440 }\n  b: [1, 2]\ncolour: red\n", as: "broken.yaml")
        #expect(outcome.status == 1)
        #expect(outcome.standardError.contains("node 'b' must be a mapping"), "\(outcome.standardError)")
        #expect(outcome.standardError.contains("unknown top-level key 'colour'"))
        #expect(!outcome.standardError.contains("frequncy"), "\(outcome.standardError)")
    }

    @Test("a one-line graph checks ok")
    func oneLineGraph() throws {
        let outcome = try CLI.sluice(["check", "tone ! fader ! null.sink"])
        #expect(outcome.status == 0, "\(outcome.standardError)")
        #expect(outcome.standardError == "tone ! fader ! null.sink: ok (3 nodes, 2 links)\n")
        #expect(outcome.standardOutput == "")
    }

    @Test("a broken one-line graph is placed on the command line")
    func brokenOneLineGraph() throws {
        let outcome = try CLI.sluice(["check", "tone ! fadr ! null.sink"])
        #expect(outcome.status == 1)
        #expect(outcome.standardOutput == "")
        #expect(outcome.standardError == """
            <command line>:1:8: error: unknown node type 'fadr' for node 'fadr'
              fix: did you mean 'fader'?

            """)
    }

    @Test("a missing graph file: exit 1 naming the file")
    func missingFile() throws {
        let missing = folder.file("nowhere/graph.yaml").path
        let outcome = try CLI.sluice(["check", missing])
        #expect(outcome.status == 1)
        #expect(outcome.standardOutput == "")
        #expect(outcome.standardError == "error: cannot read graph file '\(missing)': no such file\n")
    }

    @Test("a FIFO in place of a graph file is refused, not waited on; a file over 8 MiB is refused unread")
    func notAFileOrTooLarge() throws {
        let fifo = folder.file("fifo.yaml").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let waiting = try CLI.sluice(["check", fifo])
        #expect(waiting.status == 1)
        #expect(waiting.standardError == "error: cannot read graph file '\(fifo)': it is not a regular file\n")

        let huge = folder.file("huge.yaml")
        #expect(FileManager.default.createFile(atPath: huge.path, contents: Data(repeating: UInt8(ascii: "#"), count: (8 << 20) + 1)))
        let large = try CLI.sluice(["check", huge.path])
        #expect(large.status == 1)
        #expect(large.standardError == "error: cannot read graph file '\(huge.path)': it is 8388609 bytes; a graph file may be at most 8 MiB\n")
    }
}

extension CheckCommandTests {
    @Test("a link's capacity and when-full: checked where they cannot apply, naming the link, the place and the fix")
    func linkSettingsWhereTheyCannotApply() throws {
        let head = "name: links\nnodes:\n  voice: { type: bytes.source, path: \"-\" }\n  align: { type: aligner }\n  split: { type: tee }\n  a: { type: null.sink }\n  b: { type: null.sink }\nlinks:\n"
        let intoSink = try check(head + "  - voice -> align -> split -> a\n  - { chain: split.out2 -> b, when-full: drop-oldest }\n", as: "sink.yaml")
        #expect(intoSink.status == 1)
        #expect(intoSink.standardError.contains(
            "sink.yaml:10:31: error: the link split.out2 -> b feeds a sink, whose buffer is set by the graph's playback: section, not by the link"),
            "\(intoSink.standardError)")
        #expect(intoSink.standardError.contains("set `playback: { max-buffered: … }`"), "\(intoSink.standardError)")
        // A sink with a meter: the link still feeds the sink (the meter is inserted before it).
        let metered = try check(
            head.replacingOccurrences(of: "b: { type: null.sink }", with: "b: { type: null.sink, meter: 0.1 }")
                + "  - voice -> align -> split -> a\n  - { chain: split.out2 -> b, when-full: drop-oldest }\n",
            as: "metered.yaml")
        #expect(metered.status == 1 && metered.standardError.contains("metered.yaml:10:31: error: the link b-meter -> b feeds a sink"),
                "\(metered.standardError)")
        let bytes = try check(head + "  - { chain: voice -> align, when-full: drop-newest }\n  - align -> split -> a\n  - split.out2 -> b\n", as: "bytes.yaml")
        #expect(bytes.status == 1)
        #expect(bytes.standardError.contains("bytes.yaml:9:30: error: the link voice -> align carries bytes, which cannot be dropped without splitting a sample"),
                "\(bytes.standardError)")
        let fromSource = try check(
            "name: t\nnodes:\n  beep: { type: tone, duration: 1 }\n  level: { type: meter }\n  out: { type: null.sink }\nlinks:\n"
                + "  - { chain: beep -> level, when-full: drop-oldest }\n  - level -> out\n",
            as: "source.yaml")
        #expect(fromSource.status == 1 && fromSource.standardError.contains(
            "source.yaml:7:29: error: the link beep -> level is written by source 'beep', which makes audio as fast as the link takes it"),
                "\(fromSource.standardError)")
        #expect(fromSource.standardError.contains("drop on a branch"), "\(fromSource.standardError)")
        let fine = try check(
            head.replacingOccurrences(of: "links:\n", with: "  fade: { type: fader, length: 0 }\nlinks:\n")
                + "  - voice -> align -> split -> a\n  - { chain: split.out2 -> fade, capacity: 0.02, when-full: drop-oldest }\n  - fade -> b\n",
            as: "fine.yaml")
        #expect(fine.status == 0, "\(fine.standardError)")
    }

    @Test("a fader's fade longer than its look-ahead is refused at the value, with the fix")
    func fadeLongerThanTheLookAhead() throws {
        let graph = "name: fades\nnodes:\n  beep: { type: tone, duration: 1 }\n  fade: { type: fader, length: 128, fade-out: 512 }\n  out: { type: null.sink }\nlinks:\n  - beep -> fade -> out\n"
        let refused = try check(graph, as: "fades.yaml")
        #expect(refused.status == 1)
        #expect(refused.standardError.contains(
            "fades.yaml:4:47: error: node 'fade' (fader): fade-out 512 is longer than the look-ahead (length 128): a fade cannot be longer than what the fader holds"),
            "\(refused.standardError)")
        #expect(refused.standardError.contains("raise `length` to at least 512, or shorten `fade-out`"), "\(refused.standardError)")
        let fine = try check(graph.replacingOccurrences(of: "512", with: "32"), as: "fine.yaml")
        #expect(fine.status == 0, "\(fine.standardError)")
    }
}
