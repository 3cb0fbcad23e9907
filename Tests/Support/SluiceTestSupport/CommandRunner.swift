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

    /// A child that exits without reading all its input must not kill the test runner with
    /// SIGPIPE: the write fails with EPIPE instead.
    private static let ignoreBrokenPipes: Void = { _ = signal(SIGPIPE, SIG_IGN) }()

    /// Runs product `name` with `arguments`, killing it after `timeout` seconds.
    ///
    /// - Parameters:
    ///   - standardInput: bytes the child reads on standard input, which is then closed; nil
    ///     leaves the test runner's standard input to the child.
    ///   - currentDirectory: the child's working directory; nil keeps the test runner's.
    ///   - environment: variables to set or replace in the child's environment.
    public static func run(
        _ name: String, _ arguments: [String], timeout: Double = 60,
        standardInput: Data? = nil, currentDirectory: URL? = nil, environment: [String: String] = [:]
    ) throws -> Outcome {
        try run(
            executable: productsFolder.appendingPathComponent(name), arguments, timeout: timeout,
            standardInput: standardInput, currentDirectory: currentDirectory, environment: environment)
    }

    /// The XDG cache folder children get when a test names none: one per test process,
    /// removed when it exits.
    public static let scratchCache: String = {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("sluice-test-cache-\(getpid())").path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(atPath: CommandRunner.scratchCache) }
        return path
    }()

    /// Runs the program at `executable` (a compiler, a script, an installed tool) likewise.
    ///
    /// - Parameter environment: variables to set or replace in the child's environment.
    public static func run(
        executable: URL, _ arguments: [String], timeout: Double = 60,
        standardInput: Data? = nil, currentDirectory: URL? = nil, environment: [String: String] = [:]
    ) throws -> Outcome {
        let name = executable.lastPathComponent
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let currentDirectory { process.currentDirectoryURL = currentDirectory }
        // A cache folder of this test process's unless the test names one: nothing a test
        // runs writes to the user's ~/.cache (synthesis cache, plugin index).
        var variables = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        if environment["XDG_CACHE_HOME"] == nil { variables["XDG_CACHE_HOME"] = scratchCache }
        process.environment = variables
        let output = Pipe()
        let error = Pipe()
        process.standardOutput = output
        process.standardError = error
        let input = standardInput.map { _ in Pipe() }
        if let input { process.standardInput = input }
        let finished = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in finished.signal() }
        try process.run()
        if let input, let standardInput {
            _ = ignoreBrokenPipes
            // Write from another thread so a child that does not read cannot block the test;
            // closing the pipe is the end of its input.
            let writer = input.fileHandleForWriting
            DispatchQueue.global().async {
                try? writer.write(contentsOf: standardInput)
                try? writer.close()
            }
        }
        // Read while it runs so a full pipe cannot block the child.
        let outputData = LockedData()
        let errorData = LockedData()
        let readers = DispatchGroup()
        for (pipe, sink) in [(output, outputData), (error, errorData)] {
            DispatchQueue.global().async(group: readers) { sink.set(pipe.fileHandleForReading.readDataToEndOfFile()) }
        }
        if finished.wait(timeout: .now() + timeout) == .timedOut {
            // SIGKILL, not terminate()'s SIGTERM: a child inherits the signal mask of the
            // thread that spawned it, and a test that blocked SIGTERM would leave it running.
            kill(process.processIdentifier, SIGKILL)
            _ = finished.wait(timeout: .now() + 5)
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
