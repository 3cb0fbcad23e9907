/// Node descriptors as people read them: the text `sluice nodes` prints, and the Markdown
/// reference in docs/graph-files.md (a test keeps that page equal to `markdown(of:)`).
public enum NodeReference {
    /// One node type, as `sluice nodes` lists it.
    public static func text(of descriptor: NodeDescriptor) -> String {
        var lines = ["\(descriptor.typeName) (\(descriptor.kind.rawValue)): \(descriptor.summary)"]
        for port in ports(descriptor.inputs, countedBy: descriptor.inputCountParameter) {
            lines.append("  in   " + port)
        }
        for port in ports(descriptor.outputs, countedBy: descriptor.outputCountParameter) {
            lines.append("  out  " + port)
        }
        for parameter in descriptor.parameters {
            lines.append("  \(parameter.name): \(parameter.type)\(unit(parameter)), \(defaultText(parameter))\(live(parameter)) — \(parameter.summary)")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Every node type as a Markdown section: a heading, the summary, ports, a parameter table.
    public static func markdown(of descriptors: [NodeDescriptor]) -> String {
        var text = ""
        for descriptor in descriptors.sorted(by: { $0.typeName < $1.typeName }) {
            text += "### `\(descriptor.typeName)` (\(descriptor.kind.rawValue))\n\n\(descriptor.summary)\n\n"
            let inputs = ports(descriptor.inputs, countedBy: descriptor.inputCountParameter)
            let outputs = ports(descriptor.outputs, countedBy: descriptor.outputCountParameter)
            if !inputs.isEmpty { text += "- inputs: " + inputs.map(code).joined(separator: "; ") + "\n" }
            if !outputs.isEmpty { text += "- outputs: " + outputs.map(code).joined(separator: "; ") + "\n" }
            text += "\n"
            guard !descriptor.parameters.isEmpty else {
                text += "No parameters.\n\n"
                continue
            }
            text += "| parameter | accepts | default | what it does |\n| --- | --- | --- | --- |\n"
            for parameter in descriptor.parameters {
                let accepts = escaped("\(parameter.type)\(unit(parameter))\(live(parameter))")
                text += "| `\(parameter.name)` | \(accepts) | \(parameter.isRequired ? "required" : parameter.defaultValue.map { "`\($0)`" } ?? "—") | \(escaped(parameter.summary)) |\n"
            }
            text += "\n"
        }
        return text
    }

    /// Port lines; for a variable count, the first two and where it ends.
    private static func ports(_ ports: [PortDescriptor], countedBy parameter: String?) -> [String] {
        func line(_ port: PortDescriptor) -> String {
            "\(port.name) [\(port.medium.rawValue)]" + (port.summary.isEmpty ? "" : "  \(port.summary)")
        }
        guard let parameter, ports.count > 2 else { return ports.map(line) }
        return ports.prefix(2).map(line) + ["… up to \(ports.last!.name), as many as `\(parameter)` says"]
    }

    private static func code(_ port: String) -> String {
        guard let space = port.firstIndex(of: " "), !port.hasPrefix("…") else { return port }
        return "`\(port[..<space])`" + port[space...]
    }

    /// A table cell: `|` would end it.
    private static func escaped(_ text: String) -> String {
        text.split(separator: "|", omittingEmptySubsequences: false).joined(separator: "\\|")
    }

    private static func unit(_ parameter: ParameterDescriptor) -> String {
        parameter.unit.map { " (\($0))" } ?? ""
    }

    /// Marks a parameter that may change while the graph plays (`sluice ctl set`, OSC).
    private static func live(_ parameter: ParameterDescriptor) -> String {
        parameter.isLive ? ", live" : ""
    }

    private static func defaultText(_ parameter: ParameterDescriptor) -> String {
        if parameter.isRequired { return "required" }
        return parameter.defaultValue.map { "default \($0)" } ?? "optional"
    }
}
