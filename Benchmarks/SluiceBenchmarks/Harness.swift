import Foundation

// The measuring machinery every suite shares: a monotonic clock, interleaved runs of the two
// sides, medians, and the one-JSON-object-per-line report.

// MARK: - Programs

/// The folder this harness runs from: scripts/bench builds every program and plugin a suite
/// runs (`sluice`, the C reference clients, the release plugins) into it.
var harnessFolder: String {
    URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent().path
}

/// `name` built beside the harness; fails naming the `scripts/bench` suite that builds it.
func programBesideHarness(_ name: String, builtBy suite: String) -> String {
    let path = "\(harnessFolder)/\(name)"
    guard FileManager.default.isExecutableFile(atPath: path) else {
        fail("\(path) is missing: scripts/bench \(suite) builds it (swift build -c release --product \(name))")
    }
    return path
}

// MARK: - Clock

/// Seconds on CLOCK_MONOTONIC: never jumps with wall-clock changes.
func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) * 1e-9
}

/// Nanoseconds on CLOCK_MONOTONIC, for timestamps compared across threads.
func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

/// Wall time `body` takes, in seconds.
func secondsTaken(_ body: () -> Void) -> Double {
    let start = monotonicSeconds()
    body()
    return monotonicSeconds() - start
}

// MARK: - Statistics

func median(_ values: [Double]) -> Double {
    precondition(!values.isEmpty, "the median of no values")
    let sorted = values.sorted()
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

// MARK: - Running the two sides

/// The shortest a measured run may be; shorter runs drown in scheduler noise.
let minimumRunSeconds = 0.35

/// How many passes over a workload make one run last at least `minimumRunSeconds`.
///
/// `body(passes)` runs the workload `passes` times. The first calls double as warm-up (caches,
/// page faults, lazy runtime metadata), so they are never measured.
func calibratePasses(_ body: (Int) -> Void) -> Int {
    var passes = 1
    while true {
        let seconds = secondsTaken { body(passes) }
        if seconds >= minimumRunSeconds { return passes }
        if seconds >= minimumRunSeconds / 8 {
            return Int((Double(passes) * minimumRunSeconds * 1.05 / seconds).rounded(.up))
        }
        // Far too short to extrapolate from: grow quickly, but not by a wild guess.
        let factor = seconds > 0 ? Int(minimumRunSeconds / 8 / seconds) : 64
        passes *= min(max(factor, 2), 64)
    }
}

/// Medians of `runs` interleaved runs: sluice, reference, sluice, reference, …, so drift in
/// the machine's load hits both sides alike. Each closure returns its run's rate.
func interleavedMedians(
    runs: Int, label: String, sluice: () -> Double, reference: () -> Double
) -> (sluice: Double, reference: Double) {
    var sluiceRates: [Double] = []
    var referenceRates: [Double] = []
    for _ in 0..<runs {
        sluiceRates.append(sluice())
        referenceRates.append(reference())
    }
    note("\(label): sluice runs \(formatted(sluiceRates)), reference runs \(formatted(referenceRates))")
    return (median(sluiceRates), median(referenceRates))
}

/// Rates (work units per second) of two sides that each repeat a fixed workload, a "pass".
///
/// Each side is calibrated on its own to the passes that make a run last at least
/// `minimumRunSeconds`, so a fast side is not timed over a few milliseconds just because the
/// other is slow; then the runs are interleaved and their medians returned.
func comparePasses(
    label: String, runs: Int, unitsPerPass: Int, sluicePass: () -> Void, referencePass: () -> Void
) -> (sluice: Double, reference: Double) {
    let sluicePasses = calibratePasses { passes in for _ in 0..<passes { sluicePass() } }
    let referencePasses = calibratePasses { passes in for _ in 0..<passes { referencePass() } }
    note("\(label): \(sluicePasses) passes per sluice run, \(referencePasses) per reference run")
    return interleavedMedians(
        runs: runs, label: label,
        sluice: {
            let seconds = secondsTaken { for _ in 0..<sluicePasses { sluicePass() } }
            return Double(unitsPerPass * sluicePasses) / seconds
        },
        reference: {
            let seconds = secondsTaken { for _ in 0..<referencePasses { referencePass() } }
            return Double(unitsPerPass * referencePasses) / seconds
        })
}

// MARK: - Inputs

/// "Hello from Sluice." (espeak-ng, S16LE, 24 kHz, mono, 1.27 s), relative to the repository root.
let speechFixturePath = "graphs/audio/hello-24k.s16"

/// The fixture utterance repeated and cut to exactly `frames` frames: same bytes every run.
func speechFixture(frames: Int) -> Data {
    guard let utterance = FileManager.default.contents(atPath: speechFixturePath), utterance.count >= 2 else {
        fail("cannot read \(speechFixturePath) (run from the repository root)")
    }
    let wanted = frames * 2
    var bytes = Data(capacity: wanted + utterance.count)
    while bytes.count < wanted { bytes.append(utterance) }
    return bytes.prefix(wanted)
}

/// A fresh folder under $TMPDIR for one suite's files (`sluice-bench-SUITE-XXXXXX`).
func makeBenchFolder(_ suite: String) -> String {
    var template = Array((NSTemporaryDirectory() + "/sluice-bench-\(suite)-XXXXXX").utf8CString)
    guard let made = mkdtemp(&template) else { fail("mkdtemp: \(String(cString: strerror(errno)))") }
    return String(cString: made)
}

// MARK: - Output

/// Progress and notes: stderr only, so stdout stays pure JSON lines.
func note(_ message: String) {
    FileHandle.standardError.write(Data(("  " + message + "\n").utf8))
}

/// Stops the whole program: a benchmark whose work went wrong must not report a speed. Every
/// child the harness started (jackd last) is ended first.
func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data(("SluiceBenchmarks: error: " + message + "\n").utf8))
    ChildRegistry.endAll()
    exit(1)
}

private func formatted(_ rates: [Double]) -> String {
    "[" + rates.map { jsonNumber($0) }.joined(separator: ", ") + "]"
}

/// One measured figure, printed as one JSON object on one line.
struct Figure {
    var bench: String
    var metric: String
    var sluice: Double
    var reference: Double
    var unit: String
    var referenceName: String
    var runs: Int
    /// The target ratio from the issue, such as ">= 1.0"; nil when there is none.
    var goal: String?
    /// Whether the goal was met, where the suite decides it (printed as `goal_met`).
    var goalMet: Bool? = nil
    /// Extra keys appended after the standard ones, in this order.
    var extras: [(key: String, value: Double)] = []
    /// Extra true/false keys, printed after `extras`.
    var flags: [(key: String, value: Bool)] = []

    /// sluice / reference: above 1 means Sluice is faster. Two zeros (no frames added by
    /// either) are equal: 1.
    var ratio: Double { reference == 0 && sluice == 0 ? 1 : sluice / reference }

    /// Hand-written so the keys keep a stable order (JSONSerialization does not promise one).
    var jsonLine: String {
        var fields: [(String, String)] = [
            ("bench", jsonString(bench)),
            ("metric", jsonString(metric)),
            ("sluice", jsonNumber(sluice)),
            ("reference", jsonNumber(reference)),
            ("ratio", ratio.isFinite ? String(format: "%.3f", ratio) : "null"),
            ("unit", jsonString(unit)),
            ("reference_name", jsonString(referenceName)),
            ("runs", String(runs)),
        ]
        if let goal { fields.append(("goal", jsonString(goal))) }
        if let goalMet { fields.append(("goal_met", goalMet ? "true" : "false")) }
        for extra in extras { fields.append((extra.key, jsonNumber(extra.value))) }
        for flag in flags { fields.append((flag.key, flag.value ? "true" : "false")) }
        return "{" + fields.map { "\(jsonString($0.0)): \($0.1)" }.joined(separator: ", ") + "}"
    }

    /// Prints the line at once, so a reader piping stdout sees each figure as it is measured.
    func emit() {
        FileHandle.standardOutput.write(Data((jsonLine + "\n").utf8))
    }
}

/// Large rates as whole numbers, small ones to three decimals; never exponent notation.
func jsonNumber(_ value: Double) -> String {
    guard value.isFinite else { return "null" }
    return abs(value) >= 1_000 ? String(format: "%.0f", value) : String(format: "%.3f", value)
}

func jsonString(_ text: String) -> String {
    var escaped = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": escaped += "\\\""
        case "\\": escaped += "\\\\"
        case "\n": escaped += "\\n"
        case "\t": escaped += "\\t"
        case _ where scalar.value < 0x20: escaped += String(format: "\\u%04x", scalar.value)
        default: escaped.unicodeScalars.append(scalar)
        }
    }
    return escaped + "\""
}

// MARK: - Threads

/// Hands a value — including a `~Copyable` one such as a ring half — to another thread.
///
/// The receiving thread moves the value out with `take()` into a local, so its hot loop works
/// on a local variable instead of a class property (class properties pay a dynamic
/// exclusivity check on every access).
final class Box<Value: ~Copyable>: @unchecked Sendable {
    // SAFETY (@unchecked Sendable): the value is put in before the thread starts and taken out
    // exactly once by that thread; nobody else touches it.
    private var value: Value?

    init(_ value: consuming Value) {
        self.value = consume value
    }

    func take() -> Value {
        guard let value = value.take() else { preconditionFailure("a Box's value was taken twice") }
        return value
    }
}

/// A started POSIX thread, to be joined.
struct JoinableThread {
    private let handle: pthread_t

    /// Starts `body` on a new thread.
    init(_ body: @escaping @Sendable () -> Void) {
        final class Context {
            let body: @Sendable () -> Void
            init(_ body: @escaping @Sendable () -> Void) { self.body = body }
        }
        let context = Unmanaged.passRetained(Context(body)).toOpaque()
        var handle = pthread_t()
        let status = pthread_create(
            &handle, nil,
            { raw in
                // SAFETY: `raw` is the retained Context passed below; this thread takes that
                // retain over and releases it.
                let context = Unmanaged<Context>.fromOpaque(raw!).takeRetainedValue()
                context.body()
                return nil
            }, context)
        guard status == 0 else { fail("pthread_create failed with status \(status)") }
        self.handle = handle
    }

    func join() {
        pthread_join(handle, nil)
    }
}

// MARK: - CPU placement

// glibc declares the affinity calls only under _GNU_SOURCE, which Swift's Glibc module does not
// set, so they are looked up at run time instead.
private typealias GetAffinity = @convention(c) (pid_t, Int, UnsafeMutableRawPointer) -> Int32
private typealias SetThreadAffinity = @convention(c) (pthread_t, Int, UnsafeRawPointer) -> Int32

private func libcFunction<Function>(_ name: String, as _: Function.Type) -> Function? {
    guard let symbol = dlsym(dlopen(nil, RTLD_NOW), name) else { return nil }
    // SAFETY: `Function` matches the symbol's C declaration in <sched.h> / <pthread.h>.
    return unsafeBitCast(symbol, to: Function.self)
}

/// The CPUs this process may run on, lowest first; empty when that cannot be found out.
func allowedCPUs() -> [Int] {
    guard let getAffinity = libcFunction("sched_getaffinity", as: GetAffinity.self) else { return [] }
    var set = cpu_set_t()
    // SAFETY: the call writes at most MemoryLayout<cpu_set_t>.size bytes into `set`, and
    // cpu_set_t is a plain bit array, so reading its bytes is always valid.
    return withUnsafeMutableBytes(of: &set) { bytes in
        guard getAffinity(0, bytes.count, bytes.baseAddress!) == 0 else { return [] }
        return (0..<(bytes.count * 8)).filter { cpu in bytes[cpu / 8] & (1 << (cpu % 8)) != 0 }
    }
}

/// Keeps the calling thread on one CPU. Returns false when the system refuses.
@discardableResult
func pinCurrentThread(toCPU cpu: Int) -> Bool {
    guard let setAffinity = libcFunction("pthread_setaffinity_np", as: SetThreadAffinity.self) else {
        return false
    }
    var set = cpu_set_t()
    // SAFETY: cpu < the set's bit count (it came from allowedCPUs); CPU_SET is a macro Swift
    // cannot call, so the bit is set by hand.
    return withUnsafeMutableBytes(of: &set) { bytes in
        bytes[cpu / 8] |= UInt8(1 << (cpu % 8))
        return setAffinity(pthread_self(), bytes.count, bytes.baseAddress!) == 0
    }
}
