import CSndFile
import CSoxr
import Foundation
import SluiceConfig
import SluiceGraph
import SluiceNodes

/// Offline render of the speech chain (`graphs/speech-render.yaml`, the resampler at its
/// default quality) against the same job done by `sox` and `gst-launch-1.0`, whole processes
/// as users run them, and in-process against raw libsoxr + libsndfile (the engine the
/// default quality uses in a render).
///
/// Every side turns the same 600 s of S16LE 24 kHz mono bytes (the espeak-ng fixture repeated)
/// into a 48 kHz mono 32-bit float WAV, and is timed from the first byte read to the closed
/// file (a child process: from spawn to exit). The figure is the real-time factor: processing
/// time per second of audio, lower is faster. The sides run round-robin — sluice render,
/// sox…, gst, the in-process pair, the breakdown variants, sluice render, … — so load drift
/// hits them all alike. Beside each figure, the quality of both outputs: their SNR against
/// `sox rate -v` (very high quality) of the same input.
enum RenderSuite {
    static let graphPath = "graphs/speech-render.yaml"
    static let inputRate = 24_000
    static let outputRate = 48_000
    /// Ten minutes, as the issue measured: long enough that start-up is not the figure.
    static let audioSeconds = 600
    static var inputFrames: Int { audioSeconds * inputRate }
    static var expectedOutputFrames: Int { audioSeconds * outputRate }
    /// How far an output's length may stray from 48 kHz × 600 s ("a few frames": gst drops one).
    static let frameTolerance = 4
    /// The reference hands libsoxr input blocks of the size the graph's resampler node uses,
    /// so both call `soxr_process` equally often.
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

        let description = sluiceDescription(input: inputPath, output: folder + "/sluice-in-process.wav")
        let registry = BuiltinNodes.registry()
        let sluice = locateSluice()
        let graphFile = folder + "/speech-render.yaml"
        writeGraphFile(input: inputPath, output: folder + "/sluice.wav", to: graphFile)
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
        add("sluice render", "sluice.wav") { _ in runChild([sluice, "render", graphFile]) }
        add("sox -l", "sox-l.wav") { runChild(soxArguments($0, ["-l"])) }
        add("sox", "sox-h.wav") { runChild(soxArguments($0, [])) }
        add("gst", "gst.wav") { runChild(gstArguments($0)) }
        add("sluice in-process", "sluice-in-process.wav") { _ in sluicePass(description, registry: registry) }
        add("libsoxr", "libsoxr.wav") { libsoxrPass(input: inputPath, output: $0) }
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

        // The yardstick for quality, made once: sox's very-high-quality rate.
        let yardstickPath = folder + "/sox-v.wav"
        runChild(soxArguments(yardstickPath, ["-v"]))
        let yardstick = checkOutput("sox -v", path: yardstickPath)

        // One untimed pass each: warm-up, proof that every side wrote the file it should, and
        // each output's quality.
        var quality: [Double] = []
        var outputs: [[Float]] = []
        for side in sides {
            side.pass()
            let samples = checkOutput(side.name, path: side.output)
            quality.append(snr(samples, against: yardstick))
            note("\(side.name): \(samples.count) frames at \(outputRate) Hz, RMS \(String(format: "%.4f", rootMeanSquare(samples))), SNR against sox -v \(String(format: "%.1f", quality.last!)) dB")
            outputs.append(samples)
        }
        compare(outputs[0], "sluice render", with: outputs[4], "sluice in-process")
        compare(outputs[4], "sluice in-process", with: outputs[5], "libsoxr")
        compare(outputs[7], sides[7].name, with: outputs[4], "sluice in-process")
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
            ("render.sox-l", 0, 1, "sox rate -l (low quality, 80 % band), child process; sluice render at the default quality, child process", "<= 1.0"),
            ("render.sox", 0, 2, "sox rate (default -h: high quality), child process", nil),
            ("render.gst", 0, 3, "gst-launch-1.0 audioresample (default quality 4), child process", "<= 0.8"),
            ("render.libsoxr", 4, 5,
             "raw libsoxr SOXR_HQ + libsndfile, in-process, same blocks (sluice side: the graph in-process)", "<= 1.10"),
            ("render.breakdown.no-fades", 6, 5,
             "raw libsoxr (sluice side: graph without crossfader and fader, in-process)", nil),
            ("render.breakdown.block-1024", 7, 5,
             "raw libsoxr (sluice side: whole graph, playback block 1024, in-process)", nil),
        ]
        for (bench, sluice, reference, name, goal) in figures {
            // Milliseconds per audio second: the harness prints small numbers to three decimals,
            // which would leave a factor of 0.004 one significant digit. Lower is faster, so the
            // goal is met when the ratio is at most the bound.
            let sluiceFactor = median(factors[sluice]) * 1_000
            let referenceFactor = median(factors[reference]) * 1_000
            let bound = goal.flatMap { Double($0.dropFirst(3)) }
            Figure(
                bench: bench, metric: "realtime_factor", sluice: sluiceFactor,
                reference: referenceFactor, unit: "ms/s", referenceName: name,
                runs: runs, goal: goal, goalMet: bound.map { sluiceFactor / referenceFactor <= $0 },
                extras: [("audio_seconds", Double(audioSeconds)), ("sluice_snr_db", quality[sluice]),
                         ("reference_snr_db", quality[reference])]
            ).emit()
        }
    }

    /// SNR of `samples` against `yardstick`, in dB, over the frames both have, away from the
    /// first and last 50 ms where the converters' edges differ.
    static func snr(_ samples: [Float], against yardstick: [Float]) -> Double {
        let common = min(samples.count, yardstick.count)
        let margin = outputRate / 20
        var signal = 0.0
        var noise = 0.0
        for index in margin..<(common - margin) {
            let reference = Double(yardstick[index])
            let difference = Double(samples[index]) - reference
            signal += reference * reference
            noise += difference * difference
        }
        return noise == 0 ? .infinity : 10 * log10(signal / noise)
    }

    /// graphs/speech-render.yaml with its paths pointed at `input` and `output`, written to
    /// `path`: the file `sluice render` is given.
    static func writeGraphFile(input: String, output: String, to path: String) {
        guard let text = try? String(contentsOfFile: graphPath, encoding: .utf8) else { fail("cannot read \(graphPath)") }
        let rewritten = text
            .replacingOccurrences(of: "path: audio/hello-24k.s16", with: "path: \"\(input)\"")
            .replacingOccurrences(of: "path: speech.wav", with: "path: \"\(output)\"")
        guard rewritten.contains(input), rewritten.contains(output) else {
            fail("\(graphPath) no longer names audio/hello-24k.s16 and speech.wav: update RenderSuite.writeGraphFile")
        }
        guard FileManager.default.createFile(atPath: path, contents: Data(rewritten.utf8)) else { fail("cannot write \(path)") }
    }

    /// `sluice` built beside this executable (scripts/bench render builds it).
    static func locateSluice() -> String {
        programBesideHarness("sluice", builtBy: "render")
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
    /// `soxr_process` (SOXR_HQ, one thread, as the node makes it) in 128-frame blocks, each
    /// block's output appended to the WAV at once, then libsoxr's flush.
    static func libsoxrPass(input: String, output: String) {
        let descriptor = open(input, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { fail("libsoxr: cannot open \(input): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        var info = SF_INFO()
        info.samplerate = Int32(outputRate)
        info.channels = 1
        info.format = Int32(SF_FORMAT_WAV) | Int32(SF_FORMAT_FLOAT)
        guard let file = sf_open(output, Int32(SFM_WRITE), &info) else {
            fail("libsoxr: cannot write \(output): \(String(cString: sf_strerror(nil)))")
        }
        var error: soxr_error_t? = nil
        var spec = soxr_quality_spec(UInt(SOXR_HQ), 0)
        var io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I)
        var runtime = soxr_runtime_spec(1)
        guard let state = soxr_create(Double(inputRate), Double(outputRate), 1, &error, &io, &spec, &runtime), error == nil else {
            fail("soxr_create failed")
        }
        defer { soxr_delete(state) }

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
        func append(_ frames: Int) {
            guard frames > 0 else { return }
            if sf_writef_float(file, out, sf_count_t(frames)) != frames {
                fail("libsoxr: cannot write \(output): \(String(cString: sf_strerror(file)))")
            }
        }
        while true {
            // SAFETY: at most readChunkBytes bytes into a buffer of chunkFrames Int16s.
            let count = read(descriptor, shorts, readChunkBytes)
            if count < 0 { fail("libsoxr: cannot read \(input): \(String(cString: strerror(errno)))") }
            if count == 0 { break }
            if count % 2 != 0 { fail("libsoxr: a read ended inside a sample") }
            let frames = count / 2
            for index in 0..<frames { floats[index] = Float(shorts[index]) / 32_768 }
            var offset = 0
            while offset < frames {
                var used = 0
                var generated = 0
                // SAFETY: offset < frames ≤ chunkFrames, and the output room offered is `out`'s.
                let failure = soxr_process(
                    state, floats + offset, min(referenceBlockFrames, frames - offset), &used, out, outputCapacity, &generated)
                if failure != nil { fail("soxr_process failed") }
                if used == 0 && generated == 0 { fail("soxr_process stalled") }
                offset += used
                append(generated)
            }
        }
        var generated = 0
        repeat {
            // SAFETY: no input (the flush); the output room offered is `out`'s.
            let failure = soxr_process(state, nil, 0, nil, out, outputCapacity, &generated)
            if failure != nil { fail("soxr_process (flush) failed") }
            append(generated)
        } while generated > 0
        let closed = sf_close(file)
        if closed != 0 { fail("libsoxr: cannot finish \(output): \(String(cString: sf_error_number(closed)))") }
    }

    /// Runs a tool and waits for it; its output goes to stderr, so stdout stays JSON lines.
    /// The time measured around this is the child's whole life: exec, start-up, work, exit.
    static func runChild(_ arguments: [String]) {
        ChildProcess.start(arguments).expectExit()
    }

    // MARK: Input and checks

    /// Reads an output back and stops the suite unless it is a mono 48 kHz float WAV of
    /// `audioSeconds` ± `frameTolerance` frames with sound in it.
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
