import Foundation

/// Runs the built `sluice` tool (or another product) as a child process, with a deadline so a
/// hang fails the test instead of stalling the suite.
public enum CommandRunner {
    public struct Outcome: Sendable {
        public var status: Int32
        public var standardOutput: String
        public var standardError: String
    }

    public struct TimedOut: Error, CustomStringConvertible {
        public let command: String
        public var description: String { "'\(command)' did not finish in time and was killed" }
    }

    /// The folder holding the package's built products (next to the test bundle).
    public static var productsFolder: URL {
        // The test runner itself (`<Package>PackageTests.xctest`) sits among the products.
        URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
    }

    /// Runs product `name` with `arguments`, killing it after `timeout` seconds.
    public static func run(_ name: String, _ arguments: [String], timeout: Double = 60) throws -> Outcome {
        let process = Process()
        process.executableURL = productsFolder.appendingPathComponent(name)
        process.arguments = arguments
        let output = Pipe()
        let error = Pipe()
        process.standardOutput = output
        process.standardError = error
        let finished = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in finished.signal() }
        try process.run()
        // Read while it runs so a full pipe cannot block the child.
        let outputData = LockedData()
        let errorData = LockedData()
        let readers = DispatchGroup()
        for (pipe, sink) in [(output, outputData), (error, errorData)] {
            DispatchQueue.global().async(group: readers) { sink.set(pipe.fileHandleForReading.readDataToEndOfFile()) }
        }
        if finished.wait(timeout: .now() + timeout) == .timedOut {
            process.terminate()
            throw TimedOut(command: ([name] + arguments).joined(separator: " "))
        }
        readers.wait()
        return Outcome(
            status: process.terminationStatus,
            standardOutput: String(decoding: outputData.get(), as: UTF8.self),
            standardError: String(decoding: errorData.get(), as: UTF8.self))
    }
}

private final class LockedData: @unchecked Sendable {
    // SAFETY (@unchecked Sendable): every access goes through `lock`.
    private let lock = NSLock()
    private var data = Data()
    func set(_ value: Data) { lock.withLock { data = value } }
    func get() -> Data { lock.withLock { data } }
}
