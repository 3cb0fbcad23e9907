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

extension NodeReference {
    /// One node type as data, for programs (`sluice nodes --json`): its name, kind, summary,
    /// ports (with the parameter that counts variable ones) and parameters, each with its
    /// type, range or choices, default, unit, whether it is required and whether it is live.
    public static func json(of descriptor: NodeDescriptor) -> JSONValue {
        func port(_ port: PortDescriptor) -> JSONValue {
            ["name": .string(port.name), "medium": .string(port.medium.rawValue), "required": .bool(port.isRequired),
             "summary": .string(port.summary)]
        }
        return .object([
            ("type", .string(descriptor.typeName)),
            ("kind", .string(descriptor.kind.rawValue)),
            ("summary", .string(descriptor.summary)),
            ("inputs", .array(descriptor.inputs.map(port))),
            ("inputCountParameter", descriptor.inputCountParameter.map(JSONValue.string)),
            ("outputs", .array(descriptor.outputs.map(port))),
            ("outputCountParameter", descriptor.outputCountParameter.map(JSONValue.string)),
            ("parameters", .array(descriptor.parameters.map(json(of:)))),
        ])
    }

    /// One parameter as data: `type` is number, integer, boolean, string, path, choice, rate
    /// or list; `minimum`/`maximum` for the ranged ones, `choices` for a choice, `auto: true`
    /// for a rate (which also takes `auto`), `values` (each a `label` and a `value`) for a
    /// number that picks one of a set.
    public static func json(of parameter: ParameterDescriptor) -> JSONValue {
        var members: [(String, JSONValue?)] = [("name", .string(parameter.name))]
        switch parameter.type {
        case .number(let range):
            members += [("type", "number"), ("minimum", .number(range.lowerBound)), ("maximum", .number(range.upperBound))]
        case .integer(let range):
            members += [("type", "integer"), ("minimum", .integer(range.lowerBound)), ("maximum", .integer(range.upperBound))]
        case .boolean: members.append(("type", "boolean"))
        case .string: members.append(("type", "string"))
        case .path: members.append(("type", "path"))
        case .choice(let names): members += [("type", "choice"), ("choices", .array(names.map(JSONValue.string)))]
        case .rate(let range):
            members += [("type", "rate"), ("minimum", .integer(range.lowerBound)), ("maximum", .integer(range.upperBound)), ("auto", true)]
        case .list: members.append(("type", "list"))
        }
        members += [
            ("default", parameter.defaultValue.map(\.json)),
            ("required", .bool(parameter.isRequired)),
            ("unit", parameter.unit.map(JSONValue.string)),
            ("live", .bool(parameter.isLive)),
            ("summary", .string(parameter.summary)),
        ]
        if !parameter.namedValues.isEmpty {
            members.append(("values", .array(parameter.namedValues.map { named in
                .object([("label", .string(named.label)), ("value", .number(named.value))])
            })))
        }
        return .object(members)
    }
}

extension ParameterValue {
    /// The value as JSON: numbers as numbers, `auto` as the string "auto", a list as an array
    /// of strings.
    public var json: JSONValue {
        switch self {
        case .number(let value): .number(value)
        case .integer(let value): .integer(value)
        case .boolean(let value): .bool(value)
        case .string(let value): .string(value)
        case .list(let values): .array(values.map(JSONValue.string))
        case .auto: .string("auto")
        }
    }
}
