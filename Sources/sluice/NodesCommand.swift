import ArgumentParser
import SluiceGraph

struct NodesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "nodes",
        abstract: "List every node type with its ports and parameters."
    )

    @Argument(help: "Show only these node types.")
    var types: [String] = []

    func run() throws {
        let registry = GraphLoading.registry()
        var selected = registry.all
        if !types.isEmpty {
            for name in types where registry.type(named: name) == nil {
                let close = registry.suggestions(for: name)
                printError("error: unknown node type '\(name)'" + (close.isEmpty ? "" : "; did you mean '\(close[0])'?"))
                throw ExitCode(1)
            }
            selected = selected.filter { types.contains($0.descriptor.typeName) }
        }
        print(selected.map { NodeListing.text(of: $0.descriptor) }.joined(separator: "\n"), terminator: "")
    }
}

/// A node type as `sluice nodes` prints it.
enum NodeListing {
    static func text(of descriptor: NodeDescriptor) -> String {
        var lines = ["\(descriptor.typeName) (\(descriptor.kind.rawValue)): \(descriptor.summary)"]
        let inputs = descriptor.inputCountParameter.map { _ in descriptor.inputs.prefix(2) + [] } ?? descriptor.inputs[...]
        for port in inputs {
            lines.append("  in   \(port.name) [\(port.medium.rawValue)]" + (port.summary.isEmpty ? "" : "  \(port.summary)"))
        }
        if let count = descriptor.inputCountParameter, descriptor.inputs.count > 2 {
            lines.append("  in   … up to \(descriptor.inputs.last!.name), as many as `\(count)` says")
        }
        for port in descriptor.outputs {
            lines.append("  out  \(port.name) [\(port.medium.rawValue)]" + (port.summary.isEmpty ? "" : "  \(port.summary)"))
        }
        for parameter in descriptor.parameters {
            var line = "  \(parameter.name): \(parameter.type)"
            if let unit = parameter.unit { line += " (\(unit))" }
            if parameter.isRequired {
                line += ", required"
            } else if let value = parameter.defaultValue {
                line += ", default \(value)"
            } else {
                line += ", optional"
            }
            lines.append(line + " — \(parameter.summary)")
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
