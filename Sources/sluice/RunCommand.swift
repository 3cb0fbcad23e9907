import ArgumentParser
import Foundation
import SluiceGraph
import SluiceJACK

struct RunCommand: ParsableCommand, LoggingCommand {
    static let configuration = CommandConfiguration(
        commandName: "run", _superCommandName: SluiceCommand.name,
        abstract: "Play a graph live (into JACK), until the stream has played out.",
        discussion: """
            Ctrl-C fades out, closes the JACK client and exits 130. A JACK server must be \
            running (`jackd -d alsa`, or `jackd --no-realtime -d dummy -r 48000 -p 256 &` for a \
            test server; under PipeWire, run through `pw-jack`).
            """
    )


    @Argument(help: "A graph file, or a one-line graph in quotes.", completion: .file(extensions: ["yaml", "yml"]))
    var graph: String

    @OptionGroup var text: TextOptions

    @Option(name: .long, help: "The JACK server for jack.sink nodes that name none (default: $JACK_DEFAULT_SERVER, then \"default\").")
    var server: String?

    @Option(name: .long, help: "Print the run's timings and counters: json.")
    var stats: StatsFormat?

    @OptionGroup var timeline: TimelineOption

    @OptionGroup var failures: FailureOptions

    @OptionGroup var plugins: PluginOptions

    @OptionGroup var logging: LoggingOptions

    func run() throws {
        try LivePlayback.play(
            graph, text: text, server: server, stats: stats, timeline: timeline, failures: failures,
            trustGraphFolder: plugins.trustGraphFolder)
    }
}

struct LaunchCommand: ParsableCommand, LoggingCommand {
    static let configuration = CommandConfiguration(
        commandName: "launch", _superCommandName: SluiceCommand.name,
        abstract: "Play a one-line graph live, in the manner of gst-launch.",
        discussion: "sluice launch 'tone frequency=440 duration=2 ! fader ! jack.sink'"
    )


    @Argument(help: "The graph: TYPE key=value … ! TYPE … ! jack.sink")
    var elements: [String]

    @Option(name: .long, help: "The JACK server (default: $JACK_DEFAULT_SERVER, then \"default\").")
    var server: String?

    @Option(name: .long, help: "Print the run's timings and counters: json.")
    var stats: StatsFormat?

    @OptionGroup var timeline: TimelineOption

    @OptionGroup var failures: FailureOptions

    @OptionGroup var logging: LoggingOptions

    func run() throws {
        try LivePlayback.play(
            elements.joined(separator: " "), text: nil, server: server, stats: stats, timeline: timeline, failures: failures,
            oneLine: true)
    }
}

/// What `run` and `launch` share: compile live, start, follow, report.
enum LivePlayback {
    static func play(
        _ argument: String, text: TextOptions?, server: String?, stats: StatsFormat?, timeline: TimelineOption,
        failures: FailureOptions, trustGraphFolder: Bool = false, oneLine: Bool = false
    ) throws {
        let compiled = try GraphLoading.compile(argument, options: .init(isLive: true), server: server, oneLine: oneLine, trustGraphFolder: trustGraphFolder)
        let fedText = try text?.feed(compiled)
        let live = try LiveRun(graph: compiled)
        live.recordsTimeline = timeline.isRequested
        let interrupt = InterruptHandler { live.cancel() }
        defer { interrupt.stop() }
        let report: RunReport
        do {
            try live.start()
            report = try live.wait()
        } catch {
            printError("error: \(error)")
            throw ExitCode(1)
        }
        if stats == .json { try StatsOutput.print(report, extra: jackFigures(compiled)) }
        try timeline.write(report, title: "sluice run: \(compiled.description.name)", spans: TimelineOption.spans(of: report, text: fedText))
        try failures.finish(report)
    }

    /// xruns, the client names JACK gave, and the callback's duration percentiles.
    static func jackFigures(_ graph: CompiledGraph) -> [String: Any] {
        let sinks = graph.nodes.compactMap { $0.instance as? JackSink }
        guard !sinks.isEmpty else { return [:] }
        // One client per graph: its figures once, whatever the number of sinks.
        let devices = graph.devices.compactMap { $0 as? JackDevice }
        var durations = devices.flatMap { $0.takeCallbackDurations() }.map(Double.init)
        durations.sort()
        func percentile(_ p: Double) -> Double {
            guard !durations.isEmpty else { return 0 }
            return durations[min(durations.count - 1, Int((p * Double(durations.count)).rounded(.down)))] / 1000
        }
        return [
            "xruns": devices.map(\.xruns).reduce(0, +),
            "jackClients": devices.compactMap(\.lastClientName),
            "jackLatencyFrames": devices.compactMap(\.startLatency),
            "callbackMicroseconds": [
                "p50": percentile(0.5), "p99": percentile(0.99), "p99.9": percentile(0.999),
                "max": durations.last.map { $0 / 1000 } ?? 0, "count": Double(durations.count),
            ],
        ]
    }
}
