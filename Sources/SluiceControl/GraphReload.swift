import SluiceGraph

/// What a reload of a served graph's file changes: the live parameters whose values differ
/// from those in force, or why the file cannot be applied to the running graph.
///
/// A reload changes only what can change while the graph plays without rebuilding it: live
/// parameters, each applied as a `set` (so it ramps as a `set` does). Anything else that
/// differs — a node, its type, a link, a parameter that is not live, the `playback:` section,
/// the graph's name — is refused, naming the first such difference; nothing is applied then.
struct GraphReload {
    /// A live parameter to set.
    struct Change: Equatable {
        var node: String
        var parameter: String
        var value: ParameterValue
    }

    /// The live parameters that differ between `running` (with the values of its live
    /// parameters now in force, `current`) and `file`, in node and parameter order; or the
    /// refusal naming what cannot change while the graph plays. `speakers`: the text-driven
    /// nodes, whose other parameters `configure` changes (the refusal says so).
    static func changes(
        from running: CompiledGraph, current: [String: [String: ParameterValue]], to file: CompiledGraph,
        speakers: Set<String> = []
    ) -> Result<[Change], ControlError> {
        if let difference = shapeDifference(running, file) {
            return .failure(ControlError(
                code: "cannot-reload",
                message: "\(difference): only live parameters change on a reload while the graph plays; restart `sluice serve` for this change"))
        }
        var changes: [Change] = []
        let newNodes = Dictionary(file.nodes.map { ($0.name, $0) }) { first, _ in first }
        for old in running.nodes {
            guard let new = newNodes[old.name] else { continue }
            for parameter in old.descriptor.parameters {
                let name = parameter.name
                guard let value = new.parameters[name] else { continue }
                if parameter.isLive {
                    let inForce = current[old.name]?[name] ?? old.parameters[name]
                    if let inForce, sameValue(inForce, value) { continue }
                    guard let number = number(value) else {
                        return .failure(ControlError(
                            code: "cannot-reload",
                            message: "node '\(old.name)': parameter '\(name)' changed to \(value), which a live change cannot carry (it takes numbers); restart `sluice serve` for this change"))
                    }
                    changes.append(Change(node: old.name, parameter: name, value: .number(number)))
                } else if let was = old.parameters[name], !sameValue(was, value) {
                    let fix = speakers.contains(old.name)
                        ? "`sluice ctl configure \(old.name) \(name)=\(value)` changes it for what is said next (dropping what is queued), or restart `sluice serve`"
                        : "restart `sluice serve` for this change"
                    return .failure(ControlError(
                        code: "cannot-reload",
                        message: "node '\(old.name)': parameter '\(name)' changed from \(was) to \(value) and is not live: only live parameters change on a reload while the graph plays; \(fix)"))
                }
            }
        }
        return .success(changes)
    }

    /// The first difference of shape, as a phrase, or nil when both are the same graph but
    /// for parameter values.
    private static func shapeDifference(_ running: CompiledGraph, _ file: CompiledGraph) -> String? {
        if running.description.name != file.description.name {
            return "the graph's name changed from '\(running.description.name)' to '\(file.description.name)'"
        }
        let oldNames = running.nodes.map(\.name)
        let newNames = file.nodes.map(\.name)
        if let added = newNames.first(where: { !oldNames.contains($0) }) { return "node '\(added)' was added" }
        if let removed = oldNames.first(where: { !newNames.contains($0) }) { return "node '\(removed)' was removed" }
        let newNodes = Dictionary(file.nodes.map { ($0.name, $0) }) { first, _ in first }
        for old in running.nodes {
            guard let new = newNodes[old.name], old.descriptor.typeName != new.descriptor.typeName else { continue }
            return "node '\(old.name)' changed type from \(old.descriptor.typeName) to \(new.descriptor.typeName)"
        }
        func links(_ graph: CompiledGraph) -> [String] {
            graph.edges.map { edge in
                "\(graph.nodes[edge.fromNode].name).\(graph.nodes[edge.fromNode].outputPorts[edge.fromPort].name) -> "
                    + "\(graph.nodes[edge.toNode].name).\(graph.nodes[edge.toNode].inputPorts[edge.toPort].name)"
                    + (edge.whenFull == .block ? "" : " (when-full: \(edge.whenFull.rawValue))")
                    + (edge.capacity.map { capacity in
                        switch capacity {
                        case .seconds(let seconds): " (capacity: \(seconds))"
                        case .frames(let frames): " (capacity-frames: \(frames))"
                        }
                    } ?? "")
            }
        }
        let oldLinks = links(running)
        let newLinks = links(file)
        if let added = newLinks.first(where: { !oldLinks.contains($0) }) { return "link \(added) was added" }
        if let removed = oldLinks.first(where: { !newLinks.contains($0) }) { return "link \(removed) was removed" }
        var oldPlayback = running.playback
        var newPlayback = file.playback
        oldPlayback.location = nil
        newPlayback.location = nil
        if oldPlayback != newPlayback { return "the playback: section changed" }
        return nil
    }

    /// Whether two values are the same setting: numbers compare by value whatever their case
    /// (a `set` stores a number where the file gave an integer).
    static func sameValue(_ a: ParameterValue, _ b: ParameterValue) -> Bool {
        if let x = number(a), let y = number(b) { return x == y }
        return a == b
    }

    private static func number(_ value: ParameterValue) -> Double? {
        switch value {
        case .number(let number): number
        case .integer(let integer): Double(integer)
        case .boolean(let flag): flag ? 1 : 0
        default: nil
        }
    }
}
