import Foundation
import SluiceTestSupport
import Testing

@Suite("sluice dot")
struct DotCommandTests {
    @Test("graphs/mix.yaml: boxes labelled name\\ntype, links labelled with formats, the mixer's ports as headlabels")
    func mixGraph() throws {
        let outcome = try CLI.sluice(["dot", "graphs/mix.yaml"])
        #expect(outcome.status == 0, "\(outcome.standardError)")
        #expect(outcome.standardError == "")
        #expect(outcome.standardOutput == #"""
            digraph "mix" {
              rankdir=LR;
              node [shape=box, fontname="monospace"];
              "low" [label="low\ntone"];
              "high" [label="high\ntone"];
              "up" [label="up\nresampler"];
              "mix" [label="mix\nmixer"];
              "stereo" [label="stereo\nchannel-map"];
              "fade" [label="fade\nfader"];
              "out" [label="out\nwav.sink"];
              "low" -> "up" [label="F32 24000 Hz mono"];
              "up" -> "mix" [label="F32 48000 Hz mono", headlabel="in1"];
              "high" -> "mix" [label="F32 48000 Hz mono", headlabel="in2"];
              "mix" -> "stereo" [label="F32 48000 Hz mono"];
              "stereo" -> "fade" [label="F32 48000 Hz stereo"];
              "fade" -> "out" [label="F32 48000 Hz stereo"];
            }

            """#)
    }

    @Test("a tee's outputs are taillabels")
    func teeGraph() throws {
        let outcome = try CLI.sluice(["dot", "graphs/record-and-listen.yaml"])
        #expect(outcome.status == 0, "\(outcome.standardError)")
        let lines = outcome.standardOutput.split(separator: "\n").map(String.init)
        #expect(lines.contains(#"  "split" -> "file" [label="F32 48000 Hz mono", taillabel="out1"];"#))
        #expect(lines.contains(#"  "split" -> "listen" [label="F32 48000 Hz mono", taillabel="out2"];"#))
    }

    @Test("bytes before the aligner, frames after; --rate changes the rates after the resampler, as render --rate would")
    func speechGraphAndRate() throws {
        let standard = try CLI.sluice(["dot", "graphs/speech-render.yaml"])
        #expect(standard.status == 0, "\(standard.standardError)")
        let edges = standard.standardOutput.split(separator: "\n").filter { $0.contains("->") }
        #expect(edges == [
            #"  "voice" -> "align" [label="S16LE 24000 Hz mono"];"#,
            #"  "align" -> "resample" [label="F32 24000 Hz mono"];"#,
            #"  "resample" -> "xfade" [label="F32 48000 Hz mono"];"#,
            #"  "xfade" -> "fade" [label="F32 48000 Hz mono"];"#,
            #"  "fade" -> "out" [label="F32 48000 Hz mono"];"#,
        ])
        let rated = try CLI.sluice(["dot", "graphs/speech-render.yaml", "--rate", "44100"])
        #expect(rated.status == 0, "\(rated.standardError)")
        #expect(rated.standardOutput == standard.standardOutput.replacingOccurrences(of: "48000 Hz", with: "44100 Hz"))
    }

    @Test("a one-line graph: nodes named after their types, the graph named one-line")
    func oneLineGraph() throws {
        let outcome = try CLI.sluice(["dot", "tone ! fader ! null.sink"])
        #expect(outcome.status == 0, "\(outcome.standardError)")
        #expect(outcome.standardOutput == #"""
            digraph "one-line" {
              rankdir=LR;
              node [shape=box, fontname="monospace"];
              "tone" [label="tone\ntone"];
              "fader" [label="fader\nfader"];
              "null.sink" [label="null.sink\nnull.sink"];
              "tone" -> "fader" [label="F32 48000 Hz mono"];
              "fader" -> "null.sink" [label="F32 48000 Hz mono"];
            }

            """#)
    }

    @Test("the nodes that run in the JACK cycle share a dashed cluster")
    func cycleCluster() throws {
        let outcome = try CLI.sluice(["dot", "graphs/live-gain.yaml"])
        #expect(outcome.status == 0, "\(outcome.standardError)")
        let cluster = [
            "  subgraph \"cluster_cycle\" {",
            "    label=\"JACK cycle\"; style=dashed; fontname=\"monospace\";",
            "    \"in\" [label=\"in\\njack.source\"];",
            "    \"gain\" [label=\"gain\\nfader\"];",
            "    \"out\" [label=\"out\\njack.sink\"];",
            "  }",
        ].joined(separator: "\n")
        #expect(outcome.standardOutput.contains(cluster), "\(outcome.standardOutput)")
    }

    @Test("a broken graph prints its errors, not DOT, and exits 1")
    func brokenGraph() throws {
        let outcome = try CLI.sluice(["dot", "tone ! fadr ! null.sink"])
        #expect(outcome.status == 1)
        #expect(outcome.standardOutput == "")
        #expect(outcome.standardError.hasPrefix("<command line>:1:8: error: unknown node type 'fadr' for node 'fadr'\n"))
    }
}
