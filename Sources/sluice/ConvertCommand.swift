import ArgumentParser
import Foundation
import SluiceAudio
import SluiceGraph
import SluiceNodes

struct ConvertCommand: ParsableCommand, LoggingCommand {
    static let configuration = CommandConfiguration(
        commandName: "convert", _superCommandName: SluiceCommand.name,
        abstract: "Convert a sound file's rate, channels and sample format through a graph.",
        discussion: """
            Renders the graph wav.source ! resampler ! fader ! channel-map ! wav.sink offline, \
            the same engine as `sluice render`: reads any file libsndfile reads, resamples, \
            fades the edges, maps channels (mono to N copies, N to mono averages, other counts \
            repeat the input channels in turn), and writes WAV (or FLAC when the output ends in \
            .flac). The output is -o/--output, as on every command; `convert IN OUT` still works. \
            A summary goes to standard error.
            """
    )

    static let qualityNames = (["auto"] + ResamplerQuality.allCases.map(\.rawValue)).joined(separator: ", ")

    @Argument(help: "The sound file to read.")
    var input: String

    @Argument(help: ArgumentHelp("The file to write, as -o/--output gives it (the older form).", valueName: "output"))
    var positionalOutput: String?

    @Option(name: .shortAndLong, help: "The file to write (.wav or .flac).", completion: .file(extensions: ["wav", "flac"]))
    var output: String?

    /// The file to write, however it was given (`validate` makes sure it was, once).
    var outputPath: String { output ?? positionalOutput ?? "" }

    @Option(name: .long, help: "Output sample rate in Hz (default: the input's).")
    var rate: Int?

    @Option(name: .long, help: "Output channels (default: the input's).")
    var channels: Int?

    @Option(name: .long, help: "Resampler converter: \(Self.qualityNames).")
    var quality: String = "auto"

    @Option(name: .long, help: "Edge fade length in frames.")
    var fade: Int = Fader.defaultFadeLength

    @Option(name: .long, help: "Output sample format: s16le, s24le, s32le or f32le.")
    var format: String = "s16le"

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        if let rate, !(1...Resampler.maximumRate).contains(rate) {
            throw ValidationError("--rate \(rate) is outside 1...\(Resampler.maximumRate) Hz")
        }
        if let channels, !(1...Resampler.maximumChannels).contains(channels) {
            throw ValidationError("--channels \(channels) is outside 1...\(Resampler.maximumChannels)")
        }
        if quality != "auto" && ResamplerQuality(rawValue: quality) == nil {
            throw ValidationError("unknown --quality '\(quality)'; choose one of \(Self.qualityNames)")
        }
        if SampleFormat(name: format) == nil {
            throw ValidationError("unknown --format '\(format)'; choose s16le, s24le, s32le or f32le")
        }
        if fade < 0 {
            throw ValidationError("--fade cannot be negative")
        }
        switch (output, positionalOutput) {
        case (nil, nil): throw ValidationError("name the file to write: -o/--output FILE")
        case (.some, .some): throw ValidationError("give the file to write once: -o/--output FILE")
        default: try OutputFile.check(outputPath)
        }
    }

    func run() throws {
        let started = ContinuousClock.now
        let sampleFormat = SampleFormat(name: format)!
        // ArgumentParser prints a thrown error's description and exits with status 1.
        let inputFormat = try SoundFileReader(path: input).format
        let description = graph(inputChannels: inputFormat.channels, sampleFormat: sampleFormat)
        let compiled: CompiledGraph
        do {
            compiled = try GraphCompiler(registry: GraphLoading.registry()).compile(description)
        } catch {
            throw ConvertError(message: error.description)
        }
        let report = try OfflineRenderer(graph: compiled).run()
        if !report.failures.isEmpty { throw ConvertError(message: report.failures.joined(separator: "; ")) }
        let written = try SoundFileReader(path: outputPath)
        let elapsed = started.duration(to: .now)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
        let frames = written.frames ?? 0
        let audio = Double(frames) / Double(written.sampleRate)
        // The summary, not data: standard error, as every command's.
        printError("""
            \(input): \(inputFormat), \(String(format: "%.3f", audio)) s
            \(outputPath): \(sampleFormat) \(written.sampleRate) Hz, \(written.channels) ch, \(frames) frames
            graph: \(Self.chainText(description))
            time: \(String(format: "%.3f", seconds)) s (\(String(format: "%.0f", audio / max(seconds, 1e-9)))× real time)
            """)
    }

    /// The graph `convert` renders: wav.source (any file libsndfile reads, as Float32) →
    /// resampler → fader (the edges) → channel-map (when the count changes) → wav.sink.
    func graph(inputChannels: Int, sampleFormat: SampleFormat) -> GraphDescription {
        func parameter(_ name: String, _ value: String) -> ParameterDeclaration {
            ParameterDeclaration(name: name, value: .scalar(value, quoted: true))
        }
        var nodes = [
            NodeDeclaration(name: "input", type: "wav.source", parameters: [parameter("path", input)]),
            NodeDeclaration(name: "resample", type: "resampler", parameters: [parameter("quality", quality)]),
            NodeDeclaration(name: "fade", type: "fader", parameters: [parameter("length", String(fade))]),
        ]
        let outputChannels = channels ?? inputChannels
        if outputChannels != inputChannels {
            // Mono to N copies, N to mono averages (the node's own rules); any other pair
            // repeats the input channels in turn.
            var map = [parameter("channels", String(outputChannels))]
            if inputChannels != 1 && outputChannels != 1 {
                map.append(ParameterDeclaration(
                    name: "routing", value: .list((0..<outputChannels).map { String($0 % inputChannels) })))
            }
            nodes.append(NodeDeclaration(name: "map", type: "channel-map", parameters: map))
        }
        var sink = [parameter("path", outputPath), parameter("sample-format", Self.sinkSampleFormat(sampleFormat))]
        if let rate { sink.append(parameter("rate", String(rate))) }
        nodes.append(NodeDeclaration(name: "output", type: "wav.sink", parameters: sink))
        let links = zip(nodes, nodes.dropFirst()).map { LinkDeclaration(from: PortReference(node: $0.name), to: PortReference(node: $1.name)) }
        return GraphDescription(name: "convert", nodes: nodes, links: links, playback: PlaybackSettings(blockFrames: 1_024))
    }

    /// wav.sink's name for a sample format.
    static func sinkSampleFormat(_ format: SampleFormat) -> String {
        switch format {
        case .s16le: "s16"
        case .s24le: "s24"
        case .s32le: "s32"
        case .f32le: "f32"
        }
    }

    /// The graph in the one-line form, for the summary.
    static func chainText(_ description: GraphDescription) -> String {
        description.nodes.map { node in
            ([node.type] + node.parameters.map { "\($0.name)=\($0.value)" }).joined(separator: " ")
        }.joined(separator: " ! ")
    }
}

/// A convert failure, told in a sentence (ArgumentParser prints it and exits 1).
struct ConvertError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}
