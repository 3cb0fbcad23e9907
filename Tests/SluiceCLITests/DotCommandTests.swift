import Foundation
import SluiceTestSupport
import Testing

@Suite("sluice dot")
struct DotCommandTests {
    static let header = #"""
        digraph "NAME" {
          rankdir=LR;
          label="sources blue, providers purple, processors grey, sinks green; dashed: the JACK cycle; auto: the server's rate"; labelloc=b; fontname="monospace"; fontsize=10;
          node [shape=box, style=filled, fontname="monospace"];
          edge [fontname="monospace", fontsize=10];

        """#

    static func header(_ name: String) -> String { header.replacingOccurrences(of: "NAME", with: name) }

    static func edges(_ dot: String) -> [String] {
        dot.split(separator: "\n").filter { $0.contains(" -> ") }.map(String.init)
    }

    @Test("graphs/mix.yaml: boxes coloured by kind, the mixer a table of its ports, each link meeting its port's cell")
    func mixGraph() throws {
        let outcome = try CLI.sluice(["dot", "graphs/mix.yaml"])
        #expect(outcome.status == 0, "\(outcome.standardError)")
        #expect(outcome.standardError == "")
        #expect(outcome.standardOutput == Self.header("mix") + #"""
              "low" [label="low\ntone", fillcolor="lightblue"];
              "high" [label="high\ntone", fillcolor="lightblue"];
              "up" [label="up\nresampler", fillcolor="gray92"];
              "mix" [shape=plain, style="", label=<<table border="0" cellborder="1" cellspacing="0" cellpadding="4"><tr><td port="in1" bgcolor="gray92">in1</td><td rowspan="2" bgcolor="gray92">mix<br/>mixer</td><td port="out" bgcolor="gray92">out</td></tr><tr><td port="in2" bgcolor="gray92">in2</td><td rowspan="1" border="0"></td></tr></table>>];
              "stereo" [label="stereo\nchannel-map", fillcolor="gray92"];
              "fade" [label="fade\nfader", fillcolor="gray92"];
              "out" [label="out\nwav.sink", fillcolor="palegreen"];
              "low" -> "up" [label="F32 24000 Hz mono"];
              "up" -> "mix":"in1":w [label="F32 48000 Hz mono"];
              "high" -> "mix":"in2":w [label="F32 48000 Hz mono"];
              "mix":"out":e -> "stereo" [label="F32 48000 Hz mono"];
              "stereo" -> "fade" [label="F32 48000 Hz stereo"];
              "fade" -> "out" [label="F32 48000 Hz stereo"];
            }

            """#)
    }

    @Test("a tee's outputs are cells its links leave from, no labels lying on the arrows")
    func teeGraph() throws {
        let outcome = try CLI.sluice(["dot", "graphs/record-and-listen.yaml"])
        #expect(outcome.status == 0, "\(outcome.standardError)")
        let edges = Self.edges(outcome.standardOutput)
        #expect(edges.contains(#"  "split":"out1":e -> "file" [label="F32 48000 Hz mono"];"#), "\(edges)")
        #expect(edges.contains(#"  "split":"out2":e -> "listen" [label="F32 48000 Hz mono"];"#), "\(edges)")
        #expect(!outcome.standardOutput.contains("taillabel") && !outcome.standardOutput.contains("headlabel"))
        #expect(outcome.standardOutput.contains(#"<td port="out1" bgcolor="gray92">out1</td>"#))
    }

    @Test("the speech graph: bytes before the aligner, the provider purple, rates the server decides drawn auto")
    func speechGraphAutoRates() throws {
        let outcome = try CLI.sluice(["dot", "graphs/speak.yaml"])
        #expect(outcome.status == 0, "\(outcome.standardError)")
        #expect(Self.edges(outcome.standardOutput) == [
            #"  "voice" -> "align" [label="S16LE 22050 Hz mono"];"#,
            #"  "align" -> "resample" [label="F32 22050 Hz mono"];"#,
            #"  "resample" -> "xfade" [label="F32 auto Hz mono"];"#,
            #"  "xfade" -> "fade" [label="F32 auto Hz mono"];"#,
            #"  "fade" -> "stereo" [label="F32 auto Hz mono"];"#,
            #"  "stereo" -> "out" [label="F32 auto Hz stereo"];"#,
        ])
        #expect(outcome.standardOutput.contains(#""voice" [label="voice\nespeak", fillcolor="plum"];"#))
        #expect(outcome.standardOutput.contains(#""out" [label="out\njack.sink", fillcolor="palegreen"];"#))
    }

    @Test("--rate decides every sink's rate, as render --rate would: nothing is left to the server")
    func rateOption() throws {
        let rated = try CLI.sluice(["dot", "graphs/speak.yaml", "--rate", "44100"])
        #expect(rated.status == 0, "\(rated.standardError)")
        #expect(Self.edges(rated.standardOutput).suffix(4) == [
            #"  "resample" -> "xfade" [label="F32 44100 Hz mono"];"#,
            #"  "xfade" -> "fade" [label="F32 44100 Hz mono"];"#,
            #"  "fade" -> "stereo" [label="F32 44100 Hz mono"];"#,
            #"  "stereo" -> "out" [label="F32 44100 Hz stereo"];"#,
        ])
        let render = try CLI.sluice(["dot", "graphs/speech-render.yaml", "--rate", "44100"])
        #expect(Self.edges(render.standardOutput).last == #"  "fade" -> "out" [label="F32 44100 Hz mono"];"#)
    }

    @Test("a graph without JACK has no auto rate: a wav.sink's own rate decides")
    func noServerNoAuto() throws {
        let outcome = try CLI.sluice(["dot", "graphs/speech-render.yaml"])
        #expect(outcome.status == 0, "\(outcome.standardError)")
        #expect(!outcome.standardOutput.contains("auto Hz"))
        #expect(Self.edges(outcome.standardOutput).last == #"  "fade" -> "out" [label="F32 48000 Hz mono"];"#)
    }

    @Test("a one-line graph: nodes named after their types, the graph named one-line")
    func oneLineGraph() throws {
        let outcome = try CLI.sluice(["dot", "tone ! fader ! null.sink"])
        #expect(outcome.status == 0, "\(outcome.standardError)")
        #expect(outcome.standardOutput == Self.header("one-line") + #"""
              "tone" [label="tone\ntone", fillcolor="lightblue"];
              "fader" [label="fader\nfader", fillcolor="gray92"];
              "null.sink" [label="null.sink\nnull.sink", fillcolor="palegreen"];
              "tone" -> "fader" [label="F32 48000 Hz mono"];
              "fader" -> "null.sink" [label="F32 48000 Hz mono"];
            }

            """#)
    }

    @Test("morse speaks text: a provider's colour; a JACK source is a source's")
    func kinds() throws {
        let morse = try CLI.sluice(["dot", "graphs/morse.yaml"])
        #expect(morse.standardOutput.contains(#"[label="key\nmorse", fillcolor="plum"]"#), "\(morse.standardOutput)")
        let live = try CLI.sluice(["dot", "graphs/live-gain.yaml"])
        #expect(live.standardOutput.contains(#""in" [label="in\njack.source", fillcolor="lightblue"];"#))
    }

    @Test("the nodes that run in the JACK cycle share a dashed cluster; every rate there is the server's")
    func cycleCluster() throws {
        let outcome = try CLI.sluice(["dot", "graphs/live-gain.yaml"])
        #expect(outcome.status == 0, "\(outcome.standardError)")
        let cluster = [
            "  subgraph \"cluster_cycle\" {",
            "    label=\"JACK cycle\"; labelloc=t; style=dashed; fontname=\"monospace\"; fontsize=12;",
            "    \"in\" [label=\"in\\njack.source\", fillcolor=\"lightblue\"];",
            "    \"gain\" [label=\"gain\\nfader\", fillcolor=\"gray92\"];",
            "    \"out\" [label=\"out\\njack.sink\", fillcolor=\"palegreen\"];",
            "  }",
        ].joined(separator: "\n")
        #expect(outcome.standardOutput.contains(cluster), "\(outcome.standardOutput)")
        #expect(Self.edges(outcome.standardOutput) == [
            #"  "in" -> "gain" [label="F32 auto Hz stereo"];"#,
            #"  "gain" -> "out" [label="F32 auto Hz stereo"];"#,
        ])
        // The speech graph: only the sink plays in the cycle.
        let speech = try CLI.sluice(["dot", "graphs/speak.yaml"])
        #expect(speech.standardOutput.contains("  subgraph \"cluster_cycle\" {\n    label=\"JACK cycle\"; labelloc=t; style=dashed; fontname=\"monospace\"; fontsize=12;\n    \"out\" [label=\"out\\njack.sink\", fillcolor=\"palegreen\"];\n  }\n"))
    }

    @Test("Graphviz draws every example graph without a warning", arguments: CLI.graphFiles() + ["../Plugins/ducker/ducking.yaml"])
    func graphvizDrawsIt(_ name: String) throws {
        let outcome = try CLI.sluice(["dot", "graphs/\(name)"])
        #expect(outcome.status == 0, "\(outcome.standardError)")
        let drawn = try CommandRunner.run(
            executable: URL(fileURLWithPath: "/usr/bin/env"), ["dot", "-Tsvg"], standardInput: Data(outcome.standardOutput.utf8))
        #expect(drawn.status == 0, "Graphviz (scripts/setup installs it): \(drawn.standardError)")
        #expect(drawn.standardError == "")
        #expect(drawn.standardOutput.contains("<svg"))
    }

    @Test("a broken graph prints its errors, not DOT, and exits 1")
    func brokenGraph() throws {
        let outcome = try CLI.sluice(["dot", "tone ! fadr ! null.sink"])
        #expect(outcome.status == 1)
        #expect(outcome.standardOutput == "")
        #expect(outcome.standardError.hasPrefix("<command line>:1:8: error: unknown node type 'fadr' for node 'fadr'\n"))
    }
}
