import Foundation

/// `scripts/bench soak [--minutes N]`: a long run, as a voice assistant or a live rig would
/// have one. On a private server (`BenchServer`), for N minutes (1 by default; `all` runs 1):
///
/// - `sluice speak - --stats json`, fed a sentence every `sentenceSeconds` (a little faster
///   than espeak-ng speaks them, so the buffer never runs dry and backpressure holds the
///   provider), then standard input is closed and the speech plays out;
/// - `sluice run 'jack.source ! fader ! jack.sink'`, the live chain, for the same time, then
///   Ctrl-C.
///
/// For each process: resident memory (VmRSS), open descriptors and threads a settling period
/// after the start and just before the end, and xruns and underruns from its `--stats json`.
/// Goal: 0 xruns; RSS, descriptors and threads flat (the end within `rssToleranceKB` and equal
/// counts). The reference of each end figure is the same figure at the start.
enum SoakSuite {
    /// Set by `--minutes`.
    nonisolated(unsafe) static var minutes = 1.0
    static let settleSeconds = 5.0
    static let sentenceSeconds = 2.0
    /// RSS may move by this much without counting as growth: allocator and page-cache noise.
    static let rssToleranceKB = 2_048

    static let sentences = [
        "The quick brown fox jumps over the lazy dog.",
        "Sluice keeps one voice on the bus all day.",
        "A long run shows what a short one hides.",
        "Memory stays flat when every ring is bounded.",
    ]

    struct Sample {
        var rssKB: Int
        var descriptors: Int
        var threads: Int

        init(pid: pid_t) {
            let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
            func field(_ name: String) -> Int {
                for line in status.split(separator: "\n") where line.hasPrefix(name + ":") {
                    let words = line.dropFirst(name.count + 1).split(whereSeparator: { $0 == " " || $0 == "\t" })
                    if let value = words.first.flatMap({ Int($0) }) { return value }
                }
                fail("/proc/\(pid)/status has no \(name)")
            }
            rssKB = field("VmRSS")
            threads = field("Threads")
            guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd") else {
                fail("cannot list /proc/\(pid)/fd")
            }
            descriptors = entries.count
        }
    }

    static func run(runs _: Int) {
        let sluice = SpeechSuite.locateSluice()
        let folder = makeBenchFolder("soak")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let server = BenchServer.start(logPath: "\(folder)/jackd.log")
        defer { server.stop() }
        let seconds = minutes * 60
        note("soak: \(format(minutes)) min of speech and of a live chain on '\(server.name)'")

        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { fail("pipe: \(String(cString: strerror(errno)))") }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        let speech = ChildProcess.start(
            [sluice, "speak", "-", "--server", server.name, "--no-cache", "--stats", "json"],
            streams: .init(input: ends[0], outputPath: "\(folder)/speech.json"))
        close(ends[0])
        let live = ChildProcess.start(
            [sluice, "run", "jack.source channels=1 ! fader length=0 ! jack.sink channels=1 connect=none",
             "--server", server.name, "--stats", "json"],
            streams: .init(outputPath: "\(folder)/live.json"))

        let started = monotonicSeconds()
        var next = started
        var index = 0
        var first: (speech: Sample, live: Sample)?
        while monotonicSeconds() - started < seconds {
            if monotonicSeconds() >= next {
                let sentence = sentences[index % sentences.count] + " "
                index += 1
                SpeechSuite.writeAll(Array(sentence.utf8), to: ends[1], what: "sluice speak's stdin")
                next += sentenceSeconds
            }
            if first == nil && monotonicSeconds() - started >= settleSeconds {
                first = (Sample(pid: speech.pid), Sample(pid: live.pid))
            }
            for child in [speech, live] where child.poll() != nil { fail("\(child.command) ended during the soak") }
            usleep(50_000)
        }
        let last = (speech: Sample(pid: speech.pid), live: Sample(pid: live.pid))
        close(ends[1])
        live.signal(SIGINT)
        live.expectExit(130)
        speech.expectExit()
        guard let first else { fail("the soak ended before its settling period") }

        let speechStats = StatsFile("\(folder)/speech.json"), liveStats = StatsFile("\(folder)/live.json")
        let xruns = (speechStats.number("xruns") ?? -1) + (liveStats.number("xruns") ?? -1)
        let underruns = speechStats.number("underruns") ?? -1
        note("soak: \(index) sentences; speech played \(format(speechStats.number("audioSeconds") ?? 0)) s")
        var figures: [Figure] = [
            Figure(bench: "soak", metric: "xruns (speech + live chain)", sluice: xruns, reference: 0, unit: "count",
                   referenceName: "none", runs: 1, goal: "0", goalMet: xruns == 0),
            Figure(bench: "soak", metric: "speech underruns", sluice: underruns, reference: 0, unit: "count",
                   referenceName: "none", runs: 1, goal: nil),
        ]
        for (name, start, end) in [("speech", first.speech, last.speech), ("live chain", first.live, last.live)] {
            figures.append(Figure(
                bench: "soak", metric: "\(name) RSS end vs start", sluice: Double(end.rssKB), reference: Double(start.rssKB), unit: "KiB",
                referenceName: "the same process \(format(settleSeconds)) s after its start", runs: 1,
                goal: "flat (within \(rssToleranceKB) KiB)", goalMet: end.rssKB - start.rssKB <= rssToleranceKB))
            figures.append(Figure(
                bench: "soak", metric: "\(name) descriptors end vs start", sluice: Double(end.descriptors), reference: Double(start.descriptors),
                unit: "count", referenceName: "the same process at the start", runs: 1, goal: "equal", goalMet: end.descriptors == start.descriptors))
            figures.append(Figure(
                bench: "soak", metric: "\(name) threads end vs start", sluice: Double(end.threads), reference: Double(start.threads),
                unit: "count", referenceName: "the same process at the start", runs: 1, goal: "equal", goalMet: end.threads == start.threads))
        }
        for var figure in figures {
            figure.extras = [("minutes", minutes)]
            figure.emit()
        }
    }

    private static func format(_ value: Double) -> String { String(format: "%.1f", value) }
}
