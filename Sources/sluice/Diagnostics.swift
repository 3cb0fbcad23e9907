import ArgumentParser
import Foundation
import Logging

/// `--log-level`, on every command: how much of what Sluice (and libjack) says on the way
/// goes to standard error. The option wins over `SLUICE_LOG_LEVEL`; without either, warnings
/// and worse. The command's data (standard output), its summary line and its error message
/// are not log lines and show at every level.
struct LoggingOptions: ParsableArguments {
    @Option(
        name: .customLong("log-level"),
        help: ArgumentHelp(
            "Diagnostics on standard error from this level up: trace, debug, info, notice, warning, error, critical (default: $\(Diagnostics.environmentName), else warning; debug adds libjack's own messages).",
            valueName: "level"))
    var logLevel: LogLevel?
}

/// swift-log's levels as the command line spells them.
enum LogLevel: String, CaseIterable, ExpressibleByArgument {
    case trace, debug, info, notice, warning, error, critical

    var level: Logger.Level {
        switch self {
        case .trace: .trace
        case .debug: .debug
        case .info: .info
        case .notice: .notice
        case .warning: .warning
        case .error: .error
        case .critical: .critical
        }
    }
}

/// A command that takes `--log-level`; `SluiceCommand.main` sets logging up from it before
/// the command runs.
protocol LoggingCommand {
    var logging: LoggingOptions { get }
}

/// Where the tool's diagnostics go: one swift-log handler writing a line each to standard
/// error, set up once per process before anything logs.
enum Diagnostics {
    static let environmentName = "SLUICE_LOG_LEVEL"
    static let defaultLevel = Logger.Level.warning

    /// [control-thread] The level from the option, else the environment, else the default;
    /// an environment value that is not a level is said once and ignored.
    static func bootstrap(option: LogLevel?, environment: [String: String] = ProcessInfo.processInfo.environment) {
        var level = defaultLevel
        var unknown: String?
        if let option {
            level = option.level
        } else if let text = environment[environmentName], !text.isEmpty {
            if let named = LogLevel(rawValue: text.lowercased()) { level = named.level } else { unknown = text }
        }
        let chosen = level
        LoggingSystem.bootstrap { label in StandardErrorLogHandler(label: label, logLevel: chosen) }
        if let unknown {
            log.warning("\(environmentName)='\(unknown)' is not a level (\(LogLevel.allCases.map(\.rawValue).joined(separator: ", "))); using \(level)")
        }
    }
}

/// The tool's own logger. Made on first use, after `Diagnostics.bootstrap`.
let log = Logger(label: Diagnostics.rootLabel)

extension Diagnostics {
    /// The tool's own label, left out of its lines (`warning: …`); other labels (`libjack`,
    /// `sluice.jack`) are shown after the level.
    static let rootLabel = "sluice"
}

/// One line per message on standard error: `LEVEL: MESSAGE`, or `LEVEL: LABEL: MESSAGE` for
/// another logger than the tool's own (libjack's messages are `debug: libjack: …`), then any
/// metadata as ` [key=value, …]`. A line is one `write(2)`, so lines from several threads never
/// interleave inside a line.
struct StandardErrorLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]

    init(label: String, logLevel: Logger.Level) {
        self.label = label
        self.logLevel = logLevel
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let line = Self.line(level: event.level, label: label, message: event.message.description, metadata: metadata.merging(event.metadata ?? [:]) { _, new in new })
        line.utf8CString.withUnsafeBufferPointer { buffer in
            // SAFETY: the buffer holds the line and its terminating NUL, which is not written.
            _ = Glibc.write(STDERR_FILENO, buffer.baseAddress, buffer.count - 1)
        }
    }

    static func line(level: Logger.Level, label: String, message: String, metadata: Logger.Metadata) -> String {
        var line = "\(level): "
        if label != Diagnostics.rootLabel { line += "\(label): " }
        line += message
        if !metadata.isEmpty {
            line += " [" + metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ", ") + "]"
        }
        return line + "\n"
    }
}
