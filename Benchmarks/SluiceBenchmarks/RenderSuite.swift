import CSampleRate
import CSndFile
import Foundation
import SluiceConfig
import SluiceGraph
import SluiceNodes

/// Offline render of the speech chain (`graphs/speech-render.yaml`) against the same job done
/// by raw libsamplerate + libsndfile in-process, by `sox` and by `gst-launch-1.0`.
///
/// Every side turns the same 60 s of S16LE 24 kHz mono bytes (the espeak-ng fixture repeated)
/// into a 48 kHz mono 32-bit float WAV, and is timed from the first byte read to the closed
/// file (a child process: from spawn to exit). The figure is the real-time factor: processing
/// time per second of audio, lower is faster. The sides run round-robin — sluice,
/// libsamplerate, sox…, gst, the breakdown variants, sluice, … — so load drift hits them all
/// alike, and every figure compares against the same Sluice runs.
enum RenderSuite {
    static let graphPath = "graphs/speech-render.yaml"
    static let inputRate = 24_000
    static let outputRate = 48_000
    static let audioSeconds = 60
    static var inputFrames: Int { audioSeconds * inputRate }
    static var expectedOutputFrames: Int { audioSeconds * outputRate }
    /// How far an output's length may stray from 48 kHz × 60 s ("a few frames": gst drops one).
    static let frameTolerance = 4
    /// The reference hands libsamplerate input blocks of the size the graph's resampler node
    /// uses, so both call `src_process` equally often.
    static let referenceBlockFrames = Resampler.defaultBlockFrames
    /// The reference reads the input in chunks of the size bytes.source reads by default.
    static let readChunkBytes = 4_096

    /// One contender (or one breakdown variant): how to run one render, and the file it writes.
    struct Side {
        var name: String
        var output: String
        var pass: () -> Void
    }

    static func run(runs: Int) {
        let input = speechFixture(frames: inputFrames)
        // A failed check stops the program at once and leaves the folder for inspection.
        let folder = makeBenchFolder("render")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let inputPath = folder + "/speech-24k.s16"
        guard FileManager.default.createFile(atPath: inputPath, contents: input) else { fail("cannot write \(inputPath)") }
        note("input: \(speechFixturePath) repeated to \(audioSeconds) s (\(inputFrames) frames, S16LE 24 kHz mono) in \(inputPath)")

        let description = sluiceDescription(input: inputPath, output: folder + "/sluice.wav")
        let registry = BuiltinNodes.registry()
        let gstArguments = { (output: String) in
            [
                "gst-launch-1.0", "-q", "filesrc", "location=\(inputPath)", "!",
                "rawaudioparse", "use-sink-caps=false", "format=pcm", "pcm-format=s16le",
                "sample-rate=\(inputRate)", "num-channels=1", "!", "audioconvert", "!", "audioresample", "!",
                "audio/x-raw,format=F32LE,rate=\(outputRate)", "!", "wavenc", "!", "filesink", "location=\(output)",
            ]
        }
        let soxArguments = { (output: String, quality: [String]) in
            ["sox", "-t", "raw", "-r", "\(inputRate)", "-e", "signed", "-b", "16", "-c", "1", inputPath,
             "-e", "floating-point", "-b", "32", output, "rate"] + quality + ["\(outputRate)"]
        }

        // The breakdown: the same graph without its crossfader and fader (what the chain's
        // last two nodes cost), and the whole graph ticking in 1024-frame blocks instead of
        // 256 (what the per-tick work of the runtime costs).
        var withoutFades = description
        withoutFades.nodes.removeAll { ["crossfader", "fader"].contains($0.type) }
        let kept = withoutFades.nodes.map(\.name)
        withoutFades.links = zip(kept, kept.dropFirst()).map {
            LinkDeclaration(from: PortReference(node: $0), to: PortReference(node: $1))
        }
        var largeBlocks = description
        largeBlocks.playback.blockFrames = 1_024

        var sides: [Side] = []
        func add(_ name: String, _ file: String, _ pass: @escaping (String) -> Void) {
            let output = folder + "/" + file
            sides.append(Side(name: name, output: output, pass: { pass(output) }))
        }
        add("sluice", "sluice.wav") { _ in sluicePass(description, registry: registry) }
        add("libsamplerate", "libsamplerate.wav") { libsampleratePass(input: inputPath, output: $0) }
        add("sox -q", "sox-q.wav") { runChild(soxArguments($0, ["-q"])) }
        add("sox -l", "sox-l.wav") { runChild(soxArguments($0, ["-l"])) }
        add("sox", "sox-h.wav") { runChild(soxArguments($0, [])) }
        add("gst", "gst.wav") { runChild(gstArguments($0)) }
        add("sluice without crossfader, fader", "sluice-no-fades.wav") { output in
            var graph = withoutFades
            setPath(ofType: "wav.sink", to: output, in: &graph)
            sluicePass(graph, registry: registry)
        }
        add("sluice, 1024-frame blocks", "sluice-1024.wav") { output in
            var graph = largeBlocks
            setPath(ofType: "wav.sink", to: output, in: &graph)
            sluicePass(graph, registry: registry)
        }

        // One untimed pass each: warm-up, and proof that every side wrote the file it should.
        var outputs: [[Float]] = []
        for side in sides {
            side.pass()
            let samples = checkOutput(side.name, path: side.output)
            note("\(side.name): \(samples.count) frames at \(outputRate) Hz, RMS \(String(format: "%.4f", rootMeanSquare(samples)))")
            outputs.append(samples)
        }
        compare(outputs[0], "sluice", with: outputs[1], "libsamplerate")
        compare(outputs[6], sides[6].name, with: outputs[1], "libsamplerate")
        compare(outputs[7], sides[7].name, with: outputs[0], "sluice")
        outputs = []

        // Each side runs enough passes to last at least `minimumRunSeconds` a run.
        var passes: [Int] = []
        for side in sides {
            passes.append(calibratePasses { count in for _ in 0..<count { side.pass() } })
        }
        note("passes per run: " + zip(sides, passes).map { "\($0.name) \($1)" }.joined(separator: ", "))

        // Round-robin: every side once per run, in the same order.
        var factors = [[Double]](repeating: [], count: sides.count)
        for run in 0..<runs {
            for (index, side) in sides.enumerated() {
                let seconds = secondsTaken { for _ in 0..<passes[index] { side.pass() } }
                factors[index].append(seconds / Double(passes[index] * audioSeconds))
                // Outside the timing: a run that broke its output must not report a speed.
                checkOutput(side.name, path: side.output)
            }
            note("run \(run + 1)/\(runs) done")
        }
        for (index, side) in sides.enumerated() {
            note("\(side.name): ms per audio second [" + factors[index].map { String(format: "%.3f", $0 * 1_000) }.joined(separator: ", ") + "]")
        }

        // (bench, sluice side, reference side, reference name, goal)
        let figures: [(String, Int, Int, String, String?)] = [
            ("render.libsamplerate", 0, 1,
             "raw libsamplerate SRC_SINC_FASTEST + libsndfile, in-process, same blocks and writes", "<= 1.10"),
            ("render.sox-q", 0, 2, "sox rate -q (quick: cubic interpolation), child process", nil),
            ("render.sox-l", 0, 3, "sox rate -l (low quality, 80 % band: closest to SINC_FASTEST), child process", nil),
            ("render.sox", 0, 4, "sox rate (default -h: high quality), child process", nil),
            ("render.gst", 0, 5, "gst-launch-1.0 audioresample (default quality 4), child process", nil),
            ("render.breakdown.no-fades", 6, 1,
             "raw libsamplerate (sluice side: graph without crossfader and fader)", nil),
            ("render.breakdown.block-1024", 7, 1,
             "raw libsamplerate (sluice side: whole graph, playback block 1024)", nil),
        ]
        for (bench, sluice, reference, name, goal) in figures {
            // Milliseconds per audio second: the harness prints small numbers to three decimals,
            // which would leave a factor of 0.004 one significant digit.
            Figure(
                bench: bench, metric: "realtime_factor", sluice: median(factors[sluice]) * 1_000,
                reference: median(factors[reference]) * 1_000, unit: "ms/s", referenceName: name,
                runs: runs, goal: goal, extras: [("audio_seconds", Double(audioSeconds))]
            ).emit()
        }
    }

    /// Notes on stderr where two outputs differ (it is not an error: the chains differ), as
    /// stretches of consecutive differing frames.
    static func compare(_ samples: [Float], _ name: String, with other: [Float], _ otherName: String) {
        let common = min(samples.count, other.count)
        var largest: Float = 0
        var differing = 0
        var stretches: [ClosedRange<Int>] = []
        for index in 0..<common where samples[index] != other[index] {
            largest = max(largest, abs(samples[index] - other[index]))
            differing += 1
            if let last = stretches.last, last.upperBound == index - 1 {
                stretches[stretches.count - 1] = last.lowerBound...index
            } else {
                stretches.append(index...index)
            }
        }
        guard differing > 0 else {
            note("\(name) vs \(otherName): bit-identical over \(common) frames")
            return
        }
        let shown = stretches.prefix(4).map { "\($0.lowerBound)…\($0.upperBound)" }.joined(separator: ", ")
        note("\(name) vs \(otherName): \(differing) of \(common) samples differ, by at most \(largest), in frames "
            + shown + (stretches.count > 4 ? " and \(stretches.count - 4) more stretches" : ""))
    }

    // MARK: The sides

    /// The graph file as written, with its bytes.source reading `input` and its wav.sink
    /// writing `output`.
    static func sluiceDescription(input: String, output: String) -> GraphDescription {
        var description: GraphDescription
        do {
            description = try GraphFile.load(path: graphPath)
        } catch {
            fail("cannot load \(graphPath): \(error)")
        }
        setPath(ofType: "bytes.source", to: input, in: &description)
        setPath(ofType: "wav.sink", to: output, in: &description)
        return description
    }

    /// Points the `path` parameter of the first node of `type` at `path`.
    static func setPath(ofType type: String, to path: String, in description: inout GraphDescription) {
        guard let node = description.nodes.firstIndex(where: { $0.type == type }),
            let parameter = description.nodes[node].parameters.firstIndex(where: { $0.name == "path" })
        else { fail("\(graphPath) has no \(type) with a path") }
        description.nodes[node].parameters[parameter].value = .scalar(path, quoted: true)
    }

    /// Compiles the graph afresh and renders it: the file is written and closed on return.
    static func sluicePass(_ description: GraphDescription, registry: NodeRegistry) {
        do {
            let graph = try GraphCompiler(registry: registry).compile(description)
            let report = try OfflineRenderer(graph: graph).run()
            if !report.failures.isEmpty { fail("sluice: the render failed: \(report.failures)") }
        } catch {
            fail("sluice: \(error)")
        }
    }

    /// The same job straight through the C libraries: read 4 KiB at a time, S16 → float,
    /// `src_process` in 128-frame blocks, each block's output appended to the WAV at once (as
    /// the graph's sink does), then libsamplerate's end-of-input flush.
    static func libsampleratePass(input: String, output: String) {
        let descriptor = open(input, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { fail("libsamplerate: cannot open \(input): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        var info = SF_INFO()
        info.samplerate = Int32(outputRate)
        info.channels = 1
        info.format = Int32(SF_FORMAT_WAV) | Int32(SF_FORMAT_FLOAT)
        guard let file = sf_open(output, Int32(SFM_WRITE), &info) else {
            fail("libsamplerate: cannot write \(output): \(String(cString: sf_strerror(nil)))")
        }
        var error: Int32 = 0
        guard let state = src_new(Int32(SRC_SINC_FASTEST), 1, &error) else {
            fail("src_new: \(String(cString: src_strerror(error)))")
        }
        defer { src_delete(state) }

        let chunkFrames = readChunkBytes / 2
        let shorts = UnsafeMutablePointer<Int16>.allocate(capacity: chunkFrames)
        let floats = UnsafeMutablePointer<Float>.allocate(capacity: chunkFrames)
        let outputCapacity = referenceBlockFrames * outputRate / inputRate + 16
        let out = UnsafeMutablePointer<Float>.allocate(capacity: outputCapacity)
        defer {
            shorts.deallocate()
            floats.deallocate()
            out.deallocate()
        }
        var data = SRC_DATA()
        data.src_ratio = Double(outputRate) / Double(inputRate)

        func append(_ frames: Int) {
            guard frames > 0 else { return }
            if sf_writef_float(file, out, sf_count_t(frames)) != frames {
                fail("libsamplerate: cannot write \(output): \(String(cString: sf_strerror(file)))")
            }
        }
        while true {
            // SAFETY: at most readChunkBytes bytes into a buffer of chunkFrames Int16s.
            let count = read(descriptor, shorts, readChunkBytes)
            if count < 0 { fail("libsamplerate: cannot read \(input): \(String(cString: strerror(errno)))") }
            if count == 0 { break }
            if count % 2 != 0 { fail("libsamplerate: a read ended inside a sample") }
            let frames = count / 2
            src_short_to_float_array(shorts, floats, Int32(frames))
            var offset = 0
            while offset < frames {
                // SAFETY: offset < frames ≤ chunkFrames, and the output room offered is `out`'s.
                data.data_in = UnsafePointer(floats + offset)
                data.input_frames = min(referenceBlockFrames, frames - offset)
                data.data_out = out
                data.output_frames = outputCapacity
                data.end_of_input = 0
                let status = src_process(state, &data)
                if status != 0 { fail("src_process: \(String(cString: src_strerror(status)))") }
                if data.input_frames_used == 0 && data.output_frames_gen == 0 { fail("src_process stalled") }
                offset += data.input_frames_used
                append(data.output_frames_gen)
            }
        }
        repeat {
            data.data_in = UnsafePointer(floats)
            data.input_frames = 0
            data.data_out = out
            data.output_frames = outputCapacity
            data.end_of_input = 1
            let status = src_process(state, &data)
            if status != 0 { fail("src_process (flush): \(String(cString: src_strerror(status)))") }
            append(data.output_frames_gen)
        } while data.output_frames_gen > 0
        let closed = sf_close(file)
        if closed != 0 { fail("libsamplerate: cannot finish \(output): \(String(cString: sf_error_number(closed)))") }
    }

    /// Runs a tool and waits for it; its output goes to stderr, so stdout stays JSON lines.
    /// The time measured around this is the child's whole life: exec, start-up, work, exit.
    static func runChild(_ arguments: [String]) {
        ChildProcess.start(arguments).expectExit()
    }

    // MARK: Input and checks

    /// Reads an output back and stops the suite unless it is a mono 48 kHz float WAV of
    /// 60 s ± `frameTolerance` frames with sound in it.
    @discardableResult
    static func checkOutput(_ side: String, path: String) -> [Float] {
        var info = SF_INFO()
        guard let file = sf_open(path, Int32(SFM_READ), &info) else {
            fail("\(side): cannot read its output \(path): \(String(cString: sf_strerror(nil)))")
        }
        defer { sf_close(file) }
        let format = info.format & Int32(SF_FORMAT_TYPEMASK)
        let encoding = info.format & Int32(SF_FORMAT_SUBMASK)
        guard format == Int32(SF_FORMAT_WAV), encoding == Int32(SF_FORMAT_FLOAT), info.channels == 1,
            info.samplerate == Int32(outputRate)
        else {
            fail("\(side): \(path) is not a mono \(outputRate) Hz float WAV (format 0x\(String(info.format, radix: 16)), \(info.channels) channels, \(info.samplerate) Hz)")
        }
        let frames = Int(info.frames)
        guard abs(frames - expectedOutputFrames) <= frameTolerance else {
            fail("\(side): \(path) holds \(frames) frames, not \(expectedOutputFrames) ± \(frameTolerance)")
        }
        var samples = [Float](repeating: 0, count: frames)
        let read = samples.withUnsafeMutableBufferPointer { sf_readf_float(file, $0.baseAddress, sf_count_t(frames)) }
        guard read == frames else { fail("\(side): read \(read) of \(frames) frames back from \(path)") }
        guard rootMeanSquare(samples) > 0.01 else { fail("\(side): \(path) is (nearly) silent") }
        return samples
    }

    static func rootMeanSquare(_ samples: [Float]) -> Double {
        guard !samples.isEmpty else { return 0 }
        var sum = 0.0
        for sample in samples { sum += Double(sample) * Double(sample) }
        return (sum / Double(samples.count)).squareRoot()
    }
}
