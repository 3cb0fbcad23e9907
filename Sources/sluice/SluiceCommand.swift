import ArgumentParser

@main
struct SluiceCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sluice",
        abstract: "A real-time audio node graph for Linux: streaming speech into JACK.",
        subcommands: [RunCommand.self, LaunchCommand.self, CheckCommand.self, RenderCommand.self, DotCommand.self, NodesCommand.self, ConvertCommand.self,
                      PluginsCommand.self, SpeakCommand.self]
    )
}
