import Foundation

// SluiceBenchmarks SUITE [--runs N]
//
// Measures Sluice against a reference, side by side in one process, and prints one JSON object
// per figure on stdout. Progress goes to stderr. Run it through `scripts/bench`, which builds
// in release mode first. See docs/benchmarks.md.

/// Every suite, in the order `all` runs them. A new suite is one more entry.
let suites: [(name: String, summary: String, run: (_ runs: Int) -> Void)] = [
    ("ring", "SPSC ring vs jack_ringbuffer, two threads, 1 KiB and 4 KiB chunks", RingSuite.run),
    ("resampler", "Resampler node vs the raw library, 24 kHz -> 48 kHz: libsamplerate, soxr-hq, speex-6", ResamplerSuite.run),
    ("nodes", "Aligner, Crossfader, Fader vs memcpy of the same data", NodesSuite.run),
    ("render", "sluice render of speech-render.yaml vs sox rate -l, sox, gst-launch-1.0; in-process vs libsoxr", RenderSuite.run),
    ("jack", "jack.sink on a private jackd vs a C client, jack_simple_client, gst jackaudiosink", JackSuite.run),
    ("providers", "http-pcm provider from a loopback server vs curl to /dev/null, bytes per second", ProvidersSuite.run),
    ("speech", "sluice speak - fed 30 tokens/s: first audio after the first sentence vs espeak-ng --stdout", SpeechSuite.run),
    ("sizes", "reading and compiling 20 000-node graphs, 2 MB of comments, 2 000 repeated keys vs libyaml's compose", SizesSuite.run),
    ("density", "N espeak voices mixed into one JACK client vs N gst-launch jackaudiosink pipelines: the most with 0 xruns", DensitySuite.run),
    ("control", "sluice serve: set over OSC and the socket, send to heard vs a period + 1 ms; reply after reply vs fresh sluice speak", ControlSuite.run),
    ("web", "sluice serve --http with its page in Chromium: callback p99 and CPU with a page vs without; the page's slider to heard", WebSuite.run),
    ("plugins", "an LV2 plugin live vs jalv (callback p99, CPU), offline vs lv2file (CPU); sluice check with and without plugins installed", PluginsSuite.run),
    ("piper", "the piper provider through Sluice vs Piper's command line: time to first audio, real-time factor", PiperSuite.run),
    ("soak", "speech and a live chain for --minutes N (default 1): xruns, underruns, RSS, descriptors, threads", SoakSuite.run),
]

let defaultRuns = 7

@MainActor func usage() -> String {
    var text = "usage: SluiceBenchmarks SUITE [--runs N]   (default --runs \(defaultRuns))\nsuites:\n"
    for suite in suites { text += "  \(suite.name.padding(toLength: 10, withPad: " ", startingAt: 0)) \(suite.summary)\n" }
    text += "  all        every suite above, in order\n"
    return text
}

@MainActor func exitWithUsage(_ problem: String) -> Never {
    FileHandle.standardError.write(Data(("SluiceBenchmarks: \(problem)\n" + usage()).utf8))
    exit(2)
}

var arguments = CommandLine.arguments.dropFirst()
if arguments.contains("--help") || arguments.contains("-h") {
    print(usage(), terminator: "")
    exit(0)
}
guard let suiteName = arguments.popFirst() else { exitWithUsage("no suite given") }
var runs = defaultRuns
while let option = arguments.popFirst() {
    switch option {
    case "--runs":
        guard let value = arguments.popFirst().flatMap({ Int($0) }), value > 0 else {
            exitWithUsage("--runs needs a positive whole number")
        }
        runs = value
    case "--minutes":
        guard let value = arguments.popFirst().flatMap({ Double($0) }), value > 0 else {
            exitWithUsage("--minutes needs a positive number")
        }
        SoakSuite.minutes = value
    default:
        exitWithUsage("unknown argument '\(option)'")
    }
}

// A failure or a signal ends every child the suites started (and jackd last).
ChildRegistry.installSignalHandlers()
let selected = suiteName == "all" ? suites : suites.filter { $0.name == suiteName }
if selected.isEmpty { exitWithUsage("unknown suite '\(suiteName)'") }
for suite in selected {
    FileHandle.standardError.write(Data("== \(suite.name) (\(runs) interleaved runs per figure)\n".utf8))
    let seconds = secondsTaken { suite.run(runs) }
    FileHandle.standardError.write(Data(String(format: "== %@ done in %.1f s\n", suite.name, seconds).utf8))
}
