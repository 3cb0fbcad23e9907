import SluiceGraph
import Synchronization

/// A running graph as the control clients see it: each request checked and carried out,
/// each answer a reply's fields or a `ControlError`. Any number of clients call `handle` at
/// once, from their own threads; a refused request changes nothing and the graph plays on.
public final class ServedGraph: Sendable {
    private let graphName: String
    private let run: LiveRun
    /// The text-driven sources, by node name.
    // SAFETY: a source's `receive(text:)` is thread-safe against its own `produce`; callers
    // hold `utterances`' lock, which keeps two clients' texts whole and in order.
    private nonisolated(unsafe) let speakers: [String: any TextDrivenSource]
    /// Utterances queued so far, by node name.
    private let utterances = Mutex<[String: Int]>([:])
    private let speakerNames: [String]
    private let extraStatus: @Sendable () -> [String: any Sendable]
    private let quit: @Sendable () -> Void
    private let quitting = Atomic<Bool>(false)

    /// - Parameters:
    ///   - extraStatus: fields `status` adds (the JACK device's xruns, its client name).
    ///   - quit: what `quit` does: fade out and end the run (called once).
    public init(
        graph: CompiledGraph, run: LiveRun, extraStatus: @escaping @Sendable () -> [String: any Sendable] = { [:] },
        quit: @escaping @Sendable () -> Void
    ) {
        graphName = graph.description.name
        self.run = run
        var speakers: [String: any TextDrivenSource] = [:]
        for node in graph.nodes {
            if let source = node.instance as? any TextDrivenSource { speakers[node.name] = source }
        }
        self.speakers = speakers
        speakerNames = speakers.keys.sorted()
        self.extraStatus = extraStatus
        self.quit = quit
    }

    /// True once a client asked to quit.
    public var isQuitting: Bool { quitting.load(ordering: .acquiring) }

    /// Carries out `request`; returns the reply's fields or why it was refused.
    public func handle(_ request: ControlRequest) -> Result<[String: any Sendable], ControlError> {
        switch request {
        case .set(let node, let parameter, let value):
            do {
                let applied = try run.parameters.set(node: node, parameter: parameter, value: .number(value))
                var fields: [String: any Sendable] = ["node": node, "parameter": parameter, "value": value]
                // The output frame of the node from which the new value holds; absent when the
                // node ran no period within a second (it applies when it next runs).
                if let frame = applied.frame { fields["frame"] = frame } else { fields["queued"] = true }
                return .success(fields)
            } catch {
                return .failure(ControlError(code: error.code, message: error.description))
            }
        case .speak(let text, let node):
            return speak(text, node: node)
        case .status:
            let status = run.status
            var fields: [String: any Sendable] = [
                "graph": graphName, "state": "\(status.state)", "position": status.position,
                "bufferedSeconds": status.bufferedSeconds,
                "underruns": run.playheads.map(\.underruns).reduce(0, +),
                "paused": run.isPaused,
            ]
            fields.merge(extraStatus()) { _, new in new }
            return .success(fields)
        case .parameters:
            var nodes: [String: any Sendable] = [:]
            for (node, parameters) in run.parameters.liveParameters {
                nodes[node] = parameters.map { parameter -> [String: any Sendable] in
                    var entry: [String: any Sendable] = ["name": parameter.name, "type": parameter.type.description]
                    if let unit = parameter.unit { entry["unit"] = unit }
                    return entry
                }
            }
            return .success(["nodes": nodes, "speakers": speakerNames])
        case .pause:
            run.pause()
            return .success([:])
        case .resume:
            run.resume()
            return .success([:])
        case .quit:
            if !quitting.exchange(true, ordering: .acquiringAndReleasing) { quit() }
            return .success([:])
        }
    }

    private func speak(_ text: String, node: String?) -> Result<[String: any Sendable], ControlError> {
        let name: String
        if let node {
            guard speakers[node] != nil else {
                let close = closestNames(to: node, among: speakerNames)
                let hint = close.isEmpty
                    ? "text-driven nodes: " + (speakerNames.isEmpty ? "none" : speakerNames.joined(separator: ", "))
                    : "did you mean '\(close[0])'?"
                return .failure(ControlError(code: "unknown-node", message: "no text-driven node '\(node)'; \(hint)"))
            }
            name = node
        } else {
            guard speakerNames.count == 1 else {
                return .failure(ControlError(
                    code: speakerNames.isEmpty ? "no-speaker" : "which-speaker",
                    message: speakerNames.isEmpty
                        ? "graph '\(graphName)' has no text-driven node to speak (a speech provider, or morse)"
                        : "the graph has several text-driven nodes; name one in \"node\": \(speakerNames.joined(separator: ", "))"))
            }
            name = speakerNames[0]
        }
        guard !isQuitting else {
            return .failure(ControlError(code: "quitting", message: "the graph is ending; nothing more is spoken"))
        }
        let source = speakers[name]!
        let utterance = utterances.withLock { utterances -> Int in
            for line in text.split(whereSeparator: \.isNewline) where !line.allSatisfy(\.isWhitespace) {
                source.receive(text: String(line))
                utterances[name, default: 0] += 1
            }
            return utterances[name, default: 0]
        }
        return .success(["node": name, "queued": utterance])
    }
}
