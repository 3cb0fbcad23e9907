import Foundation
import Glibc

/// The jack suite's `instructions` part: the live chain's callback and `jack-passthrough`'s,
/// each run under callgrind on the suite's server for a few seconds, counted per period —
/// the instructions it executes (its calls into libjack and libc included) and the 64-byte
/// lines of its own code they lie on. Counts, not times: the shared machine's noise, which
/// moves the p99 from run to run, does not move them, so a change to the period shows in
/// them even where the p99 cannot tell it from the noise (docs/benchmarks.md).
extension JackSuite {
    static func callbackInstructions(tools: Tools, server: BenchServer, folder: String) {
        let graph = writeLiveChain("\(folder)/instructions-chain.yaml", client: "bench-counted-chain")
        // valgrind 3.19 (Debian 12) gives up on the DWARF the toolchain writes: it counts
        // copies without debug sections, whose symbol tables still name every function.
        let sluice = "\(folder)/sluice-counted", passThrough = "\(folder)/jack-passthrough-counted"
        for (program, copy) in [(tools.sluicePath, sluice), (tools.passThrough, passThrough)] {
            ChildProcess.start(["objcopy", "--strip-debug", program, copy]).expectExit()
        }
        let seconds = 10.0
        let ours = countPeriods(
            [sluice, "run", graph, "--server", server.name], stopBySignal: seconds,
            callback: "$s10SluiceJACK17sluiceJackProcessys5Int32Vs6UInt32V_SvSgtFTo", output: "\(folder)/callgrind-sluice")
        let reference = countPeriods(
            [passThrough, "--server", server.name, "--client", "bench-counted-pass", "--seconds", String(seconds)],
            stopBySignal: nil, callback: "process", output: "\(folder)/callgrind-pass")
        note("instructions a period: sluice \(Int(ours.instructions)) over \(ours.periods) periods, its code on \(ours.codeLines) lines; C \(Int(reference.instructions)) over \(reference.periods), \(reference.codeLines) lines")
        Figure(
            bench: "jack", metric: "live-chain-instructions", sluice: ours.instructions, reference: reference.instructions,
            unit: "instructions per period, libjack and libc calls included (lower is better)",
            referenceName: "jack-passthrough (C)", runs: 1, goal: nil,
            extras: [
                ("sluice_code_lines", Double(ours.codeLines)), ("reference_code_lines", Double(reference.codeLines)),
                ("sluice_periods", Double(ours.periods)), ("reference_periods", Double(reference.periods)),
            ]
        ).emit()
    }

    /// What callgrind counted of one client's process callback.
    struct CountedCallback {
        /// Instructions per call, inclusive.
        var instructions: Double
        var periods: Int
        /// 64-byte lines of the program's own code executed in at least 80 % of the calls.
        var codeLines: Int
    }

    /// Runs `arguments` (a program and its arguments) under callgrind (stopped with SIGINT
    /// after `stopBySignal` seconds, or left to end), then reads the thread that ran `callback`.
    static func countPeriods(
        _ arguments: [String], stopBySignal seconds: Double?, callback: String, output: String
    ) -> CountedCallback {
        let process = ChildProcess.start(
            ["valgrind", "--tool=callgrind", "--callgrind-out-file=\(output)", "--dump-instr=yes", "--separate-threads=yes"]
                + arguments,
            streams: .init(outputPath: "/dev/null", errorPath: "\(output).log"))
        if let seconds {
            usleep(UInt32(seconds * 1_000_000))
            process.signal(SIGINT)
        }
        _ = process.wait()
        let folder = (output as NSString).deletingLastPathComponent
        let prefix = (output as NSString).lastPathComponent + "-"
        let files = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { $0.hasPrefix(prefix) }
        for file in files.sorted() {
            guard let text = try? String(contentsOfFile: "\(folder)/\(file)", encoding: .utf8),
                let counted = CallgrindProfile(text).callback(named: callback, program: arguments[0])
            else { continue }
            return counted
        }
        fail("\(output): no thread of \(arguments[0]) ran \(callback) (see \(output).log)")
    }
}

/// A callgrind profile written with `--dump-instr=yes`: the cost of every instruction, by
/// object and function, and the calls between functions.
struct CallgrindProfile {
    /// Executions of each instruction, by object and address.
    private var executions: [String: [UInt64: Int]] = [:]
    /// Each function's object and its instructions' addresses.
    private var functions: [String: (object: String, addresses: Set<UInt64>)] = [:]
    /// Inclusive instructions of the calls made from each function, summed.
    private var calledCost: [String: Int] = [:]

    init(_ text: String) {
        var objects: [String: String] = [:], names: [String: String] = [:]
        var object = "", function = ""
        var address: UInt64 = 0
        var inCall = false
        // Names are compressed: "(12) name" the first time, "(12)" after.
        func resolve(_ field: Substring, in table: inout [String: String]) -> String {
            guard field.hasPrefix("("), let close = field.firstIndex(of: ")") else { return String(field) }
            let id = String(field[field.index(after: field.startIndex)..<close])
            let rest = field[field.index(after: close)...].trimmingCharacters(in: .whitespaces)
            if !rest.isEmpty { table[id] = rest }
            return table[id] ?? id
        }
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            if line.hasPrefix("ob=") { object = resolve(line.dropFirst(3), in: &objects); continue }
            if line.hasPrefix("fn=") { function = resolve(line.dropFirst(3), in: &names); continue }
            if line.hasPrefix("cob=") { _ = resolve(line.dropFirst(4), in: &objects); continue }
            if line.hasPrefix("cfn=") { _ = resolve(line.dropFirst(4), in: &names); continue }
            if line.hasPrefix("calls=") { inCall = true; continue }
            guard let first = line.first, first == "+" || first == "-" || first == "*" || first == "0" else { continue }
            let fields = line.split(separator: " ")
            // Positions are "instr line": an address (absolute, or relative to the last one),
            // a line number, then the instruction count.
            let position = fields[0]
            if position.hasPrefix("0x") {
                address = UInt64(position.dropFirst(2), radix: 16) ?? address
            } else if position.hasPrefix("+") {
                address &+= UInt64(position.dropFirst(), radix: 10) ?? 0
            } else if position.hasPrefix("-") {
                address &-= UInt64(position.dropFirst(), radix: 10) ?? 0
            }
            let cost = fields.count > 2 ? Int(fields[2]) ?? 0 : 0
            if inCall {
                // The inclusive cost of a call made from this instruction.
                calledCost[function, default: 0] += cost
                inCall = false
                continue
            }
            executions[object, default: [:]][address, default: 0] += cost
            functions[function, default: (object, [])].addresses.insert(address)
        }
    }

    /// `name`'s calls: how many (its first instruction's executions), its inclusive
    /// instructions per call, and the lines of `program`'s code executed in most calls.
    func callback(named name: String, program: String) -> JackSuite.CountedCallback? {
        guard let function = functions[name], let entry = function.addresses.min(),
            let calls = executions[function.object]?[entry], calls > 0
        else { return nil }
        let own = function.addresses.reduce(0) { $0 + (executions[function.object]?[$1] ?? 0) }
        let inclusive = own + (calledCost[name] ?? 0)
        // The program's object: callgrind names it by the path it was started from.
        let code = executions.first { $0.key.hasSuffix("/" + (program as NSString).lastPathComponent) }?.value ?? [:]
        let lines = Set(code.filter { $0.value >= calls * 8 / 10 }.keys.map { $0 >> 6 })
        return .init(instructions: Double(inclusive) / Double(calls), periods: calls, codeLines: lines.count)
    }
}
