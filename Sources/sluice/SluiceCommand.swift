import ArgumentParser
import Foundation
import SluiceGraph

@main
struct SluiceCommand: ParsableCommand {
    /// The tool's name, which each subcommand's configuration also gives as its
    /// `_superCommandName` (see `parseSubcommandDirectly`).
    static let name = "sluice"

    static let configuration = CommandConfiguration(
        commandName: name,
        abstract: "A real-time audio node graph for Linux: streaming speech into JACK.",
        discussion: ExitStatus.help + "\n\n" + Self.streams,
        subcommands: [RunCommand.self, LaunchCommand.self, ServeCommand.self, CtlCommand.self, CheckCommand.self, RenderCommand.self, DotCommand.self, NodesCommand.self, SchemaCommand.self, ConvertCommand.self,
                      PluginsCommand.self, SpeakCommand.self]
    )

    static let streams = """
        Output: a command's data (DOT, JSON, a schema, listings, --stats json) goes to standard \
        output; its summary line, errors and diagnostics (--log-level) go to standard error. \
        Every command that writes a sound file takes it as -o/--output (.wav, or .flac).
        """

    @Flag(name: .long, help: "Print the version, the plugin ABI version and the libraries found, with theirs.")
    var version = false

    // Only --version here: an option of the root command is also read after a subcommand's
    // name (`sluice ctl --json …` would reach it), so each command declares its own.

    func run() throws {
        guard version else { throw CleanExit.helpRequest(self) }
        print(VersionReport.current().text, terminator: "")
    }

    /// ArgumentParser's own entry, but a usage error exits 2 (the shell's and GNU tools'
    /// convention) instead of EX_USAGE's 64; every other status is the command's. Logging is
    /// set up from the command's --log-level before it runs.
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if let refusal = unknownCommand(arguments) {
            FileHandle.standardError.write(Data((refusal + "\n").utf8))
            Foundation.exit(ExitStatus.usage)
        }
        do {
            var command = try parseSubcommandDirectly(arguments) ?? parseAsRoot()
            Diagnostics.bootstrap(option: (command as? any LoggingCommand)?.logging.logLevel)
            try command.run()
        } catch {
            // One error style for every message: ArgumentParser's "Error: " as ours, "error: ".
            let code = exitCode(for: error)
            var message = fullMessage(for: error)
            if message.hasPrefix("Error: ") { message = "error: " + message.dropFirst("Error: ".count) }
            if code == .validationFailure {
                FileHandle.standardError.write(Data((message + "\n").utf8))
                Foundation.exit(ExitStatus.usage)
            }
            // An error a command threw (not an exit it chose): said in our style, exit 1.
            guard code == .failure, !(error is ExitCode), !message.isEmpty else { exit(withError: error) }
            FileHandle.standardError.write(Data((message + "\n").utf8))
            Foundation.exit(ExitStatus.failure)
        }
    }

    /// The subcommand that `arguments` name, parsed as a root of its own, or nil when they
    /// name none or do not parse so. Parsing from the root reflects over the root's and every
    /// subcommand's arguments, and probes them twice for `--generate-completion-script`: about
    /// 2.5 ms of each start, most of it the runtime's protocol-conformance scans, before the
    /// JACK client can open. Each subcommand names `sluice` as its `_superCommandName`, which
    /// ArgumentParser skips the probe for (a command of a super-command generates no script)
    /// and which keeps `sluice <command>` in its help and usage. Any error here (a usage error,
    /// `--help`, a completion request) comes back as nil, and the caller parses again from the
    /// root, so messages and scripts are the root's: the direct parse only ever takes arguments
    /// the root parse would also have given to the same subcommand, since the root's only
    /// option (`--version`) is no subcommand's.
    /// The message for a first word that names no command (`sluice speek hi`, `sluice help
    /// nosuch`), with the closest command's name; nil when it names one, or is an option.
    static func unknownCommand(_ arguments: [String]) -> String? {
        let names = configuration.subcommands.map { $0._commandName }
        var word = arguments.first
        var asHelp = false
        if word == "help" {
            guard arguments.count > 1 else { return nil }
            word = arguments[1]
            asHelp = true
        }
        guard let word, !word.hasPrefix("-"), !names.contains(word) else { return nil }
        let closest = closestNames(to: word, among: names, limit: 1)
        let hint = closest.first.map { "did you mean '\($0)'?" } ?? "the commands: \(names.joined(separator: ", "))"
        return "error: '\(word)' is not a sluice command\(asHelp ? " to show help for" : ""); \(hint)\n"
            + "Usage: sluice [--version] <subcommand>\n  See 'sluice --help' for more information."
    }

    static func parseSubcommandDirectly(_ arguments: [String]) -> ParsableCommand? {
        guard let name = arguments.first, !name.hasPrefix("-") else { return nil }
        for subcommand in configuration.subcommands where subcommand._commandName == name || subcommand.configuration.aliases.contains(name) {
            return try? subcommand.parseAsRoot(Array(arguments.dropFirst()))
        }
        return nil
    }
}
