import ArgumentParser
import Foundation
import SluiceAudio
import SluiceGraph
import SluiceNodes

struct RenderCommand: ParsableCommand, LoggingCommand {
    static let configuration = CommandConfiguration(
        commandName: "render", _superCommandName: SluiceCommand.name,
        abstract: "Render a graph offline, on a virtual clock, as it would play.",
        discussion: """
            The first sink's audio goes to -o/--output (WAV as 32-bit float, or FLAC as 24-bit \
            when it ends in .flac; any other extension is refused) in place of the sink, so a \
            graph written for JACK renders unchanged. Without -o the graph's own sinks are used (a wav.sink writes its file). \
            The output is the same on every run.
            """
    )


    @Argument(help: "A graph file, or a one-line graph in quotes.", completion: .file(extensions: ["yaml", "yml"]))
    var graph: String

    @Option(name: .shortAndLong, help: "The file to write (.wav or .flac) in place of the first sink.", completion: .file(extensions: ["wav", "flac"]))
    var output: String?

    @Option(name: .long, help: "Render every sink at this rate in Hz; `auto` rates follow it.")
    var rate: Int?

    @Option(name: .long, help: "Frames per block (a sink period), 16–8192.")
    var block: Int?

    @OptionGroup var text: TextOptions

    @Option(name: .long, help: "Print the run's timings and counters: json.")
    var stats: StatsFormat?

    @OptionGroup var timeline: TimelineOption

    @OptionGroup var failures: FailureOptions

    @OptionGroup var plugins: PluginOptions

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        if let rate, !(1000...384_000).contains(rate) { throw ValidationError("--rate must be 1000…384000 Hz") }
        if let block, !GraphLimits.blockFrames.contains(block) { throw ValidationError("--block must be 16…8192 frames") }
        if let output { try OutputFile.check(output) }
    }

    func run() throws {
        let compiled = try GraphLoading.compile(graph, options: .init(isLive: false, sinkRate: rate), trustGraphFolder: plugins.trustGraphFolder) { description in
            if let block { description.playback.blockFrames = block }
        }
        let fedText = try text.feed(compiled)
        let renderer = try OfflineRenderer(graph: compiled)
        renderer.recordsTimeline = timeline.isRequested
        var file: SoundFileWriter?
        if let output {
            guard case .frames(let sinkRate, let channels)? = compiled.sinks.first?.inputFormats.first else {
                printError("error: the graph has no sink to render")
                throw ExitCode(1)
            }
            file = try SoundFileWriter(path: output, sampleRate: sinkRate, channels: channels, sampleFormat: OutputFile.defaultSampleFormat(for: output))
            renderer.output = { index, samples in
                guard index == 0 else { return }
                try file!.write(samples.baseAddress!, frames: samples.count / channels)
            }
        }
        // Ctrl-C fades out and ends the render cleanly, so the file is complete and playable.
        let interrupt = InterruptHandler { renderer.cancel() }
        defer { interrupt.stop() }
        let progress = ProgressBar()
        let report: RunReport
        do {
            report = try renderer.run { progress.update($0) }
        } catch {
            progress.finish()
            printError("error: \(error)")
            throw ExitCode(1)
        }
        progress.finish()
        file = nil
        if stats == .json { try StatsOutput.print(report) }
        try timeline.write(report, title: "sluice render: \(compiled.description.name)", spans: TimelineOption.spans(of: report, text: fedText))
        if report.cancelled { printError("interrupted: rendered \(report.audioSeconds) s, faded out") }
        try failures.finish(report)
    }
}
