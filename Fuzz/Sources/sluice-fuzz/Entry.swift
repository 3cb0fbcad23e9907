// libFuzzer's entry: one executable for every target, picked by SLUICE_FUZZ_TARGET
// (scripts/fuzz sets it). libFuzzer supplies `main`; a crash, a hang over -timeout or memory
// over -rss_limit_mb is a failure it reports with the input that caused it.
import Glibc

/// The targets, by the name scripts/fuzz and Fuzz/corpus/ use.
let targets: [String: @Sendable (UnsafeBufferPointer<UInt8>) -> Void] = [
    "yaml": FuzzTargets.yamlGraph,
    "one-line": FuzzTargets.oneLineGraph,
    "compile": FuzzTargets.compile,
    "descriptor": FuzzTargets.descriptor,
    "aligner": FuzzTargets.aligner,
    "control-json": ControlTargets.controlJSON,
    "osc": ControlTargets.osc,
    "speechd": ControlTargets.speechd,
]

let selected: @Sendable (UnsafeBufferPointer<UInt8>) -> Void = {
    let name = getenv("SLUICE_FUZZ_TARGET").map { String(cString: $0) } ?? ""
    guard let target = targets[name] else {
        let message = "set SLUICE_FUZZ_TARGET to one of: \(targets.keys.sorted().joined(separator: ", "))\n"
        _ = message.withCString { write(2, $0, strlen($0)) }
        exit(2)
    }
    return target
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    selected(UnsafeBufferPointer(start: data, count: data == nil ? 0 : size))
    return 0
}

/// libFuzzer's driver, which parses its flags and runs the inputs through `callback`.
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

/// The executable's entry, under the name SwiftPM links as `main`: it hands over to
/// libFuzzer's driver (libFuzzer's own `main` is then never linked in).
@_cdecl("sluice_fuzz_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    var count = argc
    var arguments = argv
    return LLVMFuzzerRunDriver(&count, &arguments) { data, size in fuzzOneInput(data, size) }
}
