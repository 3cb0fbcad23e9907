import Foundation

/// `scripts/bench plugins`: hosted LV2 plugins against LV2's reference hosts, in the same run
/// (method, goals and current figures: docs/benchmarks.md, "plugins").
///
/// - live: `jack.source -> lv2 -> jack.sink` (`sluice run`) and `jalv` hosting the same plugin
///   with the same controls, both at once on one private server, both preloaded with
///   `jack-callback-timer` (Benchmarks/JackCallbackTimer), which times each one's process
///   callback from outside, the same way; the callback's tail and each process's CPU.
/// - offline: a 120 s mono file through the same plugin with `sluice render` and with
///   `lv2file`, whole processes, CPU seconds.
/// - check: `sluice check graphs/morse.yaml` (no plugin) with LV2_PATH on every installed
///   bundle against LV2_PATH on an empty folder. Beside it, the check of graphs/lv2-eq.yaml,
///   which reads the bundles, for scale.
///
/// The plugin: x42's parametric equaliser (fil4, mono) with graphs/lv2-eq.yaml's settings.
enum PluginsSuite {
    static let uri = "http://gareus.org/oss/lv2/fil4#mono"
    static let controls: [(String, String)] = [("HighPass", "1"), ("HPfreq", "150"), ("freq3", "3000"), ("gain3", "4")]
    static let liveSeconds: Double = {
        ProcessInfo.processInfo.environment["SLUICE_BENCH_PLUGINS_SECONDS"].flatMap(Double.init) ?? 20
    }()

    static func run(runs: Int) {
        let sluice = "\(harnessFolder)/sluice"
        guard FileManager.default.isExecutableFile(atPath: sluice) else { fail("\(sluice) is missing: scripts/bench plugins builds it") }
        let folder = makeBenchFolder("plugins")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let timer = "\(harnessFolder)/libjack-callback-timer.so"
        guard FileManager.default.fileExists(atPath: timer) else { fail("\(timer) is missing: scripts/bench plugins builds it") }
        for program in ["/usr/bin/jalv", "/usr/bin/lv2file"] where !FileManager.default.isExecutableFile(atPath: program) {
            fail("\(program) is missing: scripts/bench plugins installs jalv and lv2file")
        }
        let server = BenchServer.start(logPath: "\(folder)/jackd.log")
        defer { server.stop() }
        note("server '\(server.name)': \(server.realtime ? "real-time scheduling" : "no real-time scheduling"), \(JackSuite.sampleRate) Hz, \(JackSuite.periodFrames)-frame periods")
        live(sluicePath: sluice, timer: timer, server: server, folder: folder, runs: runs)
        offline(sluicePath: sluice, folder: folder, runs: runs)
        check(sluicePath: sluice, folder: folder, runs: runs)
    }

    static var nodeYAML: String {
        "{ type: lv2, uri: \"\(uri)\", " + controls.map { "\($0.0): \($0.1)" }.joined(separator: ", ") + " }"
    }

    static func live(sluicePath: String, timer: String, server: BenchServer, folder: String, runs: Int) {
        let graph = "\(folder)/live.yaml"
        FileManager.default.createFile(atPath: graph, contents: Data("""
            nodes:
              in:  { type: jack.source, channels: 1, connect: none }
              eq:  \(nodeYAML)
              out: { type: jack.sink, channels: 1, connect: none }
            links: [in -> eq -> out]
            playback: { strategy: stream, client: bench-lv2 }
            """.utf8))
        var sluiceP99: [Double] = [], jalvP99: [Double] = [], sluiceCPU: [Double] = [], jalvCPU: [Double] = []
        let runs = JackSuite.evenRuns(runs)
        for run in 1...runs {
            let sluiceStats = "\(folder)/sluice-\(run).json", jalvStats = "\(folder)/jalv-\(run).json"
            // jalv reads commands from its standard input and ends at its end: a pipe kept open.
            var pipeEnds: [Int32] = [0, 0]
            guard pipe(&pipeEnds) == 0 else { fail("pipe: \(String(cString: strerror(errno)))") }
            func startSluice() -> ChildProcess {
                ChildProcess.start(
                    [sluicePath, "run", graph, "--server", server.name], streams: .init(outputPath: "/dev/null"),
                    environment: ["LD_PRELOAD": timer, "JACK_CALLBACK_TIMER_OUTPUT": sluiceStats])
            }
            func startJalv() -> ChildProcess {
                ChildProcess.start(
                    ["/usr/bin/jalv", "-x", "-n", "bench-jalv"] + controls.flatMap { ["-c", "\($0.0)=\($0.1)"] } + [uri],
                    streams: .init(input: pipeEnds[0], outputPath: "/dev/null"),
                    environment: ["LD_PRELOAD": timer, "JACK_CALLBACK_TIMER_OUTPUT": jalvStats, "JACK_DEFAULT_SERVER": server.name])
            }
            let (sluice, jalv) = JackSuite.startInTurn(run: run, sluice: startSluice, reference: startJalv)
            close(pipeEnds[0])
            usleep(UInt32(liveSeconds * 1_000_000))
            sluice.signal(SIGINT)
            jalv.signal(SIGINT)
            sluiceCPU.append(sluice.wait().cpuSeconds)
            jalvCPU.append(jalv.wait().cpuSeconds)
            close(pipeEnds[1])
            let sluiceFigures = CallbackStats(jsonFile: sluiceStats), jalvFigures = CallbackStats(jsonFile: jalvStats)
            guard sluiceFigures.count > 100, jalvFigures.count > 100 else {
                fail("run \(run): callbacks timed: sluice \(sluiceFigures.count), jalv \(jalvFigures.count) (see \(folder))")
            }
            sluiceP99.append(sluiceFigures.p99)
            jalvP99.append(jalvFigures.p99)
        }
        note("lv2 live callback p99 (µs): sluice \(JackSuite.formattedList(sluiceP99)), jalv \(JackSuite.formattedList(jalvP99)); CPU seconds for \(Int(liveSeconds)) s: sluice \(JackSuite.formattedList(sluiceCPU)), jalv \(JackSuite.formattedList(jalvCPU))")
        Figure(
            bench: "plugins", metric: "lv2-live-callback p99", sluice: median(sluiceP99), reference: median(jalvP99),
            unit: "µs (lower is better)", referenceName: "jalv (LV2's reference JACK host), same plugin and controls", runs: runs,
            goal: "<= 1.0", goalMet: median(sluiceP99) <= median(jalvP99),
            extras: JackSuite.ratiosByOrder(zip(sluiceP99, jalvP99).map { $0 / $1 })
        ).emit()
        Figure(
            bench: "plugins", metric: "lv2-live-cpu", sluice: median(sluiceCPU), reference: median(jalvCPU),
            unit: "CPU seconds (lower is better)", referenceName: "jalv", runs: runs, goal: "<= 1.0",
            goalMet: median(sluiceCPU) <= median(jalvCPU)
        ).emit()
    }

    static func offline(sluicePath: String, folder: String, runs: Int) {
        let input = "\(folder)/in.wav"
        writeNoiseWAV(path: input, seconds: 120)
        let graph = "\(folder)/offline.yaml"
        FileManager.default.createFile(atPath: graph, contents: Data("""
            nodes:
              in:  { type: wav.source, path: "\(input)" }
              eq:  \(nodeYAML)
              out: { type: wav.sink, path: "\(folder)/sluice.wav" }
            links: [in -> eq -> out]
            playback: { strategy: stream }
            """.utf8))
        var sluiceCPU: [Double] = [], referenceCPU: [Double] = []
        for run in 1...runs {
            func sluice() { sluiceCPU.append(ChildProcess.start([sluicePath, "render", graph], streams: .init(outputPath: "/dev/null")).expectExit().cpuSeconds) }
            func reference() {
                let arguments = ["/usr/bin/lv2file", "-i", input, "-o", "\(folder)/lv2file.wav", "--ignore-clipping"]
                    + controls.flatMap { ["-p", "\($0.0):\($0.1)"] } + [uri]
                referenceCPU.append(ChildProcess.start(arguments, streams: .init(outputPath: "/dev/null")).expectExit().cpuSeconds)
            }
            if JackSuite.sluiceStartsFirst(run: run) { sluice(); reference() } else { reference(); sluice() }
        }
        note("lv2 offline, 120 s mono: CPU seconds sluice \(JackSuite.formattedList(sluiceCPU)), lv2file \(JackSuite.formattedList(referenceCPU))")
        Figure(
            bench: "plugins", metric: "lv2-offline-cpu", sluice: median(sluiceCPU), reference: median(referenceCPU),
            unit: "CPU seconds for 120 s of audio (lower is better)", referenceName: "lv2file, same plugin and controls", runs: runs,
            goal: "<= 1.0", goalMet: median(sluiceCPU) <= median(referenceCPU)
        ).emit()
    }

    static func check(sluicePath: String, folder: String, runs: Int) {
        let empty = "\(folder)/no-plugins"
        try? FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        func seconds(_ graph: String, lv2Path: String) -> Double {
            secondsTaken {
                _ = ChildProcess.start(
                    [sluicePath, "check", graph], streams: .init(outputPath: "/dev/null", errorPath: "/dev/null"),
                    environment: ["LV2_PATH": lv2Path]
                ).expectExit()
            }
        }
        let installed = ["/usr/lib/lv2", "/usr/local/lib/lv2", NSHomeDirectory() + "/.lv2"].joined(separator: ":")
        var with: [Double] = [], without: [Double] = [], reading: [Double] = []
        for run in 1...max(runs, 15) {
            if run % 2 == 1 {
                with.append(seconds("graphs/morse.yaml", lv2Path: installed))
                without.append(seconds("graphs/morse.yaml", lv2Path: empty))
            } else {
                without.append(seconds("graphs/morse.yaml", lv2Path: empty))
                with.append(seconds("graphs/morse.yaml", lv2Path: installed))
            }
            reading.append(seconds("graphs/lv2-eq.yaml", lv2Path: installed))
        }
        let difference = (median(with) - median(without)) * 1_000
        note("check of a graph without plugins (ms): every bundle on LV2_PATH \(JackSuite.formattedList(with.map { $0 * 1_000 })), none \(JackSuite.formattedList(without.map { $0 * 1_000 })); of graphs/lv2-eq.yaml (reads the bundles) \(JackSuite.formattedList(reading.map { $0 * 1_000 }))")
        Figure(
            bench: "plugins", metric: "check-with-plugins-installed", sluice: median(with) * 1_000, reference: median(without) * 1_000,
            unit: "ms for `sluice check graphs/morse.yaml` (lower is better)", referenceName: "the same with LV2_PATH on an empty folder",
            runs: with.count, goal: "within 20 ms", goalMet: abs(difference) <= 20,
            extras: [("lv2_eq_check_ms", median(reading) * 1_000)]
        ).emit()
    }

    /// `seconds` of 48 kHz mono float noise as a WAV file (the format lv2file and sluice read alike).
    static func writeNoiseWAV(path: String, seconds: Int) {
        let frames = 48_000 * seconds
        var data = Data(capacity: 44 + frames * 4)
        func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) } }
        data.append(contentsOf: Array("RIFF".utf8)); append(UInt32(36 + frames * 4))
        data.append(contentsOf: Array("WAVEfmt ".utf8)); append(UInt32(16)); append(UInt16(3)); append(UInt16(1))
        append(UInt32(48_000)); append(UInt32(48_000 * 4)); append(UInt16(4)); append(UInt16(32))
        data.append(contentsOf: Array("data".utf8)); append(UInt32(frames * 4))
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for _ in 0..<frames {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let sample = Float(Int32(truncatingIfNeeded: state >> 32)) / Float(Int32.max) * 0.3
            append(sample.bitPattern)
        }
        FileManager.default.createFile(atPath: path, contents: data)
    }
}
