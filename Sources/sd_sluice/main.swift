import Foundation

// sd_sluice: a speech-dispatcher output module (the module protocol on standard input and
// output, as speech-dispatcher's own modules speak it) that speaks through a graph that
// `sluice serve` runs. docs/speech-dispatcher.md shows the set-up.
//
// speech-dispatcher starts it as `sd_sluice CONFIG`; the configuration file names the served
// graph's control socket (`SluiceSocket "…"`).

let configuration = ModuleConfiguration(file: CommandLine.arguments.dropFirst().first)
let module = SpeechdModule(configuration: configuration)
exit(module.run())
