import ArgumentParser
import Foundation

@main
struct SluiceCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sluice",
        abstract: "A real-time audio node graph for Linux: streaming speech into JACK.",
        discussion: ExitStatus.help,
        subcommands: [RunCommand.self, LaunchCommand.self, ServeCommand.self, CtlCommand.self, CheckCommand.self, RenderCommand.self, DotCommand.self, NodesCommand.self, ConvertCommand.self,
                      PluginsCommand.self, SpeakCommand.self]
    )

    /// ArgumentParser's own entry, but a usage error exits 2 (the shell's and GNU tools'
    /// convention) instead of EX_USAGE's 64; every other status is the command's.
    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch {
            guard exitCode(for: error) == .validationFailure else { exit(withError: error) }
            FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
            Foundation.exit(ExitStatus.usage)
        }
    }
}
