import ArgumentParser
import Foundation

@main
struct SluiceCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sluice",
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
        do {
            var command = try parseAsRoot()
            Diagnostics.bootstrap(option: (command as? any LoggingCommand)?.logging.logLevel)
            try command.run()
        } catch {
            guard exitCode(for: error) == .validationFailure else { exit(withError: error) }
            FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
            Foundation.exit(ExitStatus.usage)
        }
    }
}
