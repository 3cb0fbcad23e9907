import SluiceAudio
import SluiceGraph
import Yams

/// Reads a composed YAML tree into a `GraphDescription`, checking only structure and syntax
/// and recording where everything is; the compiler checks the rest against those places.
/// Every problem becomes a diagnostic and reading goes on, so one run reports them all.
struct YAMLGraphReader {
    let file: String
    let source: YAMLSource
    /// Placeholder keys (from `DuplicateTolerantComposer`) to the keys as written.
    let originalKeys: [String: String]
    private(set) var diagnostics: [GraphDiagnostic] = []
    /// Whether every problem so far is a key the reader skipped (an unknown top-level key or
    /// playback setting), everything else read as written.
    private(set) var onlySkippedKeys = true

    static let topLevelKeys = ["name", "nodes", "links", "playback"]
    static let playbackKeys = ["strategy", "watermark", "max-buffered", "block", "client", "boundary"]
    static let blockRange = GraphLimits.blockFrames

    init(file: String, source: YAMLSource, originalKeys: [String: String]) {
        self.file = file
        self.source = source
        self.originalKeys = originalKeys
    }

    // MARK: Places and messages

    func location(_ node: Yams.Node) -> SourceLocation? {
        node.mark.map { SourceLocation(file: file, line: $0.line, column: $0.column) }
    }

    var startOfFile: SourceLocation { SourceLocation(file: file, line: 1, column: 1) }

    mutating func error(_ message: String, at location: SourceLocation?, fix: String?, skippedKey: Bool = false) {
        diagnostics.append(GraphDiagnostic(message, at: location, fix: fix))
        if !skippedKey { onlySkippedKeys = false }
    }

    /// A key's text as written, or nil (reported) when the key is not a scalar.
    mutating func keyName(_ key: Yams.Node) -> String? {
        guard case .scalar(let scalar) = key else {
            error("a key must be a name, not \(Self.describe(key))", at: location(key), fix: "write keys as plain names, like `nodes:`")
            return nil
        }
        return originalKeys[scalar.string] ?? scalar.string
    }

    /// "a list", "a mapping", "'text'": what a value is, for messages.
    static func describe(_ node: Yams.Node) -> String {
        switch node {
        case .scalar(let scalar): isNull(node) ? "nothing" : "'\(scalar.string)'"
        case .sequence: "a list"
        case .mapping: "a mapping"
        case .alias: "an alias"
        }
    }

    /// An empty value or YAML's plain null (`~`, `null`).
    static func isNull(_ node: Yams.Node) -> Bool {
        guard case .scalar(let scalar) = node, scalar.style == .plain || scalar.style == .any else { return false }
        return ["", "~", "null", "Null", "NULL"].contains(scalar.string)
    }

    static func line(_ node: Yams.Node) -> String {
        node.mark.map { "line \($0.line)" } ?? "an earlier entry"
    }

    // MARK: The document

    mutating func read(_ root: Yams.Node?, defaultName: String, baseDirectory: String?) -> GraphDescription {
        var description = GraphDescription(name: defaultName, file: file, baseDirectory: baseDirectory)
        let example = "`nodes: { out: { type: wav.sink, path: out.wav } }`"
        guard let root, !Self.isNull(root) else {
            error("the graph file is empty", at: startOfFile, fix: "declare the nodes, e.g. \(example)")
            return description
        }
        guard case .mapping(let top) = root else {
            error("a graph file must be a mapping with `nodes:` (and `name:`, `links:`, `playback:`), not \(Self.describe(root))",
                  at: location(root), fix: "start with the nodes, e.g. \(example)")
            return description
        }
        var seen: [String: Yams.Node] = [:]
        for (keyNode, value) in top {
            guard let key = keyName(keyNode) else { continue }
            if let first = seen[key] {
                error("duplicate key '\(key)' (first at \(Self.line(first)))", at: location(keyNode), fix: "keep one of them")
                continue
            }
            seen[key] = keyNode
            switch key {
            case "name": readName(value).map { description.name = $0 }
            case "nodes": description.nodes = readNodes(value, key: keyNode)
            case "links": description.links = readLinks(value)
            case "playback": description.playback = readPlayback(value, key: keyNode)
            default:
                error("unknown top-level key '\(key)'", at: location(keyNode),
                      fix: Names.suggestion(for: key, among: Self.topLevelKeys,
                                            otherwise: "the top-level keys are name, nodes, links and playback"),
                      skippedKey: true)
            }
        }
        if seen["nodes"] == nil {
            error("the graph has no `nodes:`", at: startOfFile, fix: "declare the nodes, e.g. \(example)")
        }
        return description
    }

    /// The graph's name; nil (keeping the default) when it is empty.
    mutating func readName(_ value: Yams.Node) -> String? {
        guard case .scalar(let scalar) = value else {
            error("the graph's `name:` must be text, not \(Self.describe(value))", at: location(value), fix: "name: my-graph")
            return nil
        }
        return Self.isNull(value) || scalar.string.isEmpty ? nil : scalar.string
    }

    // MARK: Nodes

    mutating func readNodes(_ value: Yams.Node, key: Yams.Node) -> [NodeDeclaration] {
        let form = "write each node as `name: { type: <a node type>, … }` under `nodes:`"
        if Self.isNull(value) {
            error("`nodes:` declares no nodes", at: location(key), fix: form)
            return []
        }
        guard case .mapping(let mapping) = value else {
            error("`nodes:` must be a mapping from node names to nodes, not \(Self.describe(value))", at: location(value), fix: form)
            return []
        }
        if mapping.isEmpty {
            error("`nodes:` declares no nodes", at: location(key), fix: form)
        }
        var nodes: [NodeDeclaration] = []
        for (nameNode, body) in mapping {
            guard let name = keyName(nameNode) else { continue }
            if !Names.isIdentifier(name) {
                error("invalid node name '\(name)'", at: location(nameNode), fix: Names.nodeNameFix)
            }
            if let node = readNode(name, nameNode: nameNode, body: body) { nodes.append(node) }
        }
        return nodes
    }

    mutating func readNode(_ name: String, nameNode: Yams.Node, body: Yams.Node) -> NodeDeclaration? {
        let noType = "add `type: <a node type>` (run `sluice nodes` to list them), e.g. `\(name): { type: tone }`"
        if Self.isNull(body) {
            error("node '\(name)' has no type", at: location(nameNode), fix: noType)
            return nil
        }
        guard case .mapping(let mapping) = body else {
            let example: String = if case .scalar(let scalar) = body { scalar.string } else { "<a node type>" }
            error("node '\(name)' must be a mapping with a `type:`, not \(Self.describe(body))", at: location(body),
                  fix: "write `\(name): { type: \(example) }`")
            return nil
        }
        var declaration = NodeDeclaration(name: name, type: "", location: location(nameNode))
        var typeKey: Yams.Node?
        for (keyNode, value) in mapping {
            guard let key = keyName(keyNode) else { continue }
            if key == "type" {
                if let typeKey {
                    error("node '\(name)' has two types (first at \(Self.line(typeKey)))", at: location(keyNode), fix: "keep one `type:`")
                    continue
                }
                typeKey = keyNode
                guard case .scalar(let scalar) = value, !Self.isNull(value), !scalar.string.isEmpty else {
                    error("node '\(name)' has an empty type", at: location(value), fix: noType)
                    continue
                }
                declaration.type = scalar.string
                declaration.typeLocation = location(value)
                continue
            }
            if let parameter = readParameter(key, keyNode: keyNode, value: value, node: name) {
                declaration.parameters.append(parameter)
            }
        }
        if typeKey == nil {
            error("node '\(name)' has no type", at: location(nameNode), fix: noType)
        }
        return declaration
    }

    mutating func readParameter(_ name: String, keyNode: Yams.Node, value: Yams.Node, node: String) -> ParameterDeclaration? {
        let raw: RawValue
        switch value {
        case .scalar(let scalar):
            raw = .scalar(scalar.string, quoted: scalar.style != .plain && scalar.style != .any)
        case .sequence(let sequence):
            var items: [String] = []
            for item in sequence {
                guard case .scalar(let scalar) = item else {
                    error("parameter '\(name)' of node '\(node)' lists \(Self.describe(item)); list items must be single values",
                          at: location(item), fix: "write a flat list, like `\(name): [a, b]`")
                    return nil
                }
                items.append(scalar.string)
            }
            raw = .list(items)
        case .mapping, .alias:
            raw = .mapping
        }
        return ParameterDeclaration(name: name, value: raw, location: location(keyNode), valueLocation: location(value))
    }

    // MARK: Links

    mutating func readLinks(_ value: Yams.Node) -> [LinkDeclaration] {
        if Self.isNull(value) { return [] }
        guard case .sequence(let sequence) = value else {
            error("`links:` must be a list of chains, not \(Self.describe(value))", at: location(value),
                  fix: "write each chain as a list item: `- voice -> mix.in1`")
            return []
        }
        var links: [LinkDeclaration] = []
        for item in sequence {
            if case .mapping(let mapping) = item {
                // Settings name at least one key of a link's; `- a: b` is a chain mistyped.
                guard mapping.contains(where: { Self.linkKeys.contains(($0.key.scalar?.string) ?? "") }) else {
                    error("a link must be a chain written as text, like `a -> b -> c`, or settings with their chain, not a mapping of other keys",
                          at: location(item), fix: LinkChain.form + "; " + Self.linkOptionsForm)
                    continue
                }
                links += readLinkWithOptions(mapping, at: item)
                continue
            }
            guard case .scalar(let scalar) = item else {
                error("a link must be a chain written as text, like `a -> b -> c`, not \(Self.describe(item))",
                      at: location(item), fix: LinkChain.form)
                continue
            }
            links += readChain(scalar)
        }
        return links
    }

    static let linkKeys = ["chain", "capacity", "capacity-frames", "when-full"]
    static let linkOptionsForm = "write e.g. `- { chain: split.out2 -> meter, capacity: 0.02, when-full: drop-oldest }`"

    /// A chain with options: `{ chain: a -> b, capacity: 0.02, when-full: drop-oldest }`; the
    /// options hold for every hop of the chain.
    mutating func readLinkWithOptions(_ mapping: Yams.Node.Mapping, at item: Yams.Node) -> [LinkDeclaration] {
        var chain: [LinkDeclaration]?
        var capacity: LinkCapacity?
        var capacityKey: Yams.Node?
        var whenFull = LinkPolicy.block
        var optionsLocation: SourceLocation?
        var seen: [String: Yams.Node] = [:]
        for (keyNode, value) in mapping {
            guard let key = keyName(keyNode) else { continue }
            if let first = seen[key] {
                error("duplicate link setting '\(key)' (first at \(Self.line(first)))", at: location(keyNode), fix: "keep one of them")
                continue
            }
            seen[key] = keyNode
            switch key {
            case "chain":
                guard case .scalar(let scalar) = value, !Self.isNull(value) else {
                    error("a link's chain must be text, like `a -> b -> c`, not \(Self.describe(value))", at: location(value), fix: LinkChain.form)
                    continue
                }
                chain = readChain(scalar)
            case "capacity", "capacity-frames":
                if let other = capacityKey {
                    error("a link takes capacity or capacity-frames, not both (the other at \(Self.line(other)))", at: location(keyNode),
                          fix: "keep one: `capacity: 0.02` (seconds) or `capacity-frames: 960`")
                    continue
                }
                capacityKey = keyNode
                optionsLocation = optionsLocation ?? location(keyNode)
                capacity = key == "capacity" ? readLinkSeconds(value) : readLinkFrames(value)
            case "when-full":
                optionsLocation = location(keyNode)
                let names = LinkPolicy.allCases.map(\.rawValue)
                guard case .scalar(let scalar) = value, let policy = LinkPolicy(rawValue: scalar.string) else {
                    let text = if case .scalar(let scalar) = value { scalar.string } else { "" }
                    error("a link's when-full must be one of \(names.joined(separator: ", ")), not \(Self.describe(value))", at: location(value),
                          fix: Names.suggestion(for: text, among: names, otherwise: "use one of \(names.joined(separator: ", "))"))
                    continue
                }
                whenFull = policy
            default:
                error("unknown link setting '\(key)'", at: location(keyNode),
                      fix: Names.suggestion(for: key, among: Self.linkKeys, otherwise: "a link's settings are chain, capacity, capacity-frames and when-full"),
                      skippedKey: true)
            }
        }
        guard let chain else {
            if seen["chain"] == nil {
                error("a link with settings needs its chain", at: location(item), fix: Self.linkOptionsForm)
            }
            return []
        }
        return chain.map { link in
            var link = link
            link.capacity = capacity
            link.whenFull = whenFull
            link.optionsLocation = optionsLocation
            return link
        }
    }

    mutating func readLinkSeconds(_ value: Yams.Node) -> LinkCapacity? {
        let range = GraphLimits.linkSeconds
        let fix = "capacity: 0.02 (the seconds the link holds, \(Self.format(range.lowerBound))…\(Self.format(range.upperBound)))"
        guard case .scalar(let scalar) = value, let seconds = Double(scalar.string), seconds.isFinite else {
            error("a link's capacity must be a number of seconds, not \(Self.describe(value))", at: location(value), fix: fix)
            return nil
        }
        guard range.contains(seconds) else {
            error("a link's capacity must be between \(Self.format(range.lowerBound)) and \(Self.format(range.upperBound)) seconds, not \(scalar.string)",
                  at: location(value), fix: fix)
            return nil
        }
        return .seconds(seconds)
    }

    mutating func readLinkFrames(_ value: Yams.Node) -> LinkCapacity? {
        let range = GraphLimits.linkFrames
        let fix = "capacity-frames: 960 (the frames the link holds, \(range.lowerBound)…\(range.upperBound))"
        guard case .scalar(let scalar) = value, let frames = Int(scalar.string) else {
            error("a link's capacity-frames must be a whole number of frames, not \(Self.describe(value))", at: location(value), fix: fix)
            return nil
        }
        guard range.contains(frames) else {
            error("a link's capacity-frames must be between \(range.lowerBound) and \(range.upperBound), not \(frames)", at: location(value), fix: fix)
            return nil
        }
        return .frames(frames)
    }

    /// One hop per `->`; each reference placed at its own column when the chain is written
    /// on one line as it reads, else at the chain's start.
    mutating func readChain(_ scalar: Yams.Node.Scalar) -> [LinkDeclaration] {
        let content = source.contentColumn(of: scalar)
        let file = file
        func place(_ offset: Int) -> SourceLocation? {
            if let content { return SourceLocation(file: file, line: content.line, column: content.column + offset) }
            return scalar.mark.map { SourceLocation(file: file, line: $0.line, column: $0.column) }
        }
        switch LinkChain.parse(scalar.string) {
        case .failure(let problem):
            error(problem.message, at: place(problem.offset), fix: problem.fix)
            return []
        case .success(let references):
            let ports = references.map { PortReference(node: $0.node, port: $0.port, location: place($0.offset)) }
            return zip(ports, ports.dropFirst()).map { LinkDeclaration(from: $0, to: $1) }
        }
    }

    // MARK: Playback

    mutating func readPlayback(_ value: Yams.Node, key: Yams.Node) -> PlaybackSettings {
        var settings = PlaybackSettings(location: location(key))
        if Self.isNull(value) { return settings }
        guard case .mapping(let mapping) = value else {
            error("`playback:` must be a mapping of settings, not \(Self.describe(value))", at: location(value),
                  fix: "write e.g. `playback: { strategy: auto, watermark: 0.5, max-buffered: 3.0, block: 256 }`")
            return settings
        }
        var seen: [String: Yams.Node] = [:]
        var watermarkNode: Yams.Node?, maxBufferedNode: Yams.Node?
        var watermarkValid = true, maxBufferedValid = true
        for (keyNode, value) in mapping {
            guard let key = keyName(keyNode) else { continue }
            if let first = seen[key] {
                error("duplicate playback setting '\(key)' (first at \(Self.line(first)))", at: location(keyNode), fix: "keep one of them")
                continue
            }
            seen[key] = keyNode
            switch key {
            case "strategy":
                if let strategy = readStrategy(value) { settings.strategy = strategy }
            case "watermark":
                watermarkNode = value
                if let seconds = readSeconds(value, key: key, allowZero: true,
                                             meaning: "seconds buffered before playback starts", example: "0.5") {
                    settings.watermark = seconds
                } else {
                    watermarkValid = false
                }
            case "max-buffered":
                maxBufferedNode = value
                if let seconds = readSeconds(value, key: key, allowZero: false,
                                             meaning: "the most seconds the sink may hold", example: "3.0") {
                    settings.maxBuffered = seconds
                } else {
                    maxBufferedValid = false
                }
            case "block":
                if let frames = readBlock(value) { settings.blockFrames = frames }
            case "boundary":
                if case .scalar(let scalar) = value, let boundary = CycleBoundary(rawValue: scalar.string) {
                    settings.boundary = boundary
                } else {
                    error("playback boundary must be sink or source, not \(Self.describe(value))",
                          at: location(value), fix: "write `boundary: sink` (processors on the worker) or `boundary: source` (in the JACK cycle)")
                }
            case "client":
                if case .scalar(let scalar) = value, !scalar.string.isEmpty, !scalar.string.contains(":") {
                    settings.client = scalar.string
                } else {
                    error("playback client must be a JACK client name (no ':'), not \(Self.describe(value))",
                          at: location(value), fix: "write e.g. `client: my-graph`")
                }
            default:
                error("unknown playback setting '\(key)'", at: location(keyNode),
                      fix: Names.suggestion(for: key, among: Self.playbackKeys,
                                            otherwise: "the playback settings are strategy, watermark, max-buffered, block, client and boundary"),
                      skippedKey: true)
            }
        }
        if watermarkValid, maxBufferedValid, settings.watermark > settings.maxBuffered {
            let place = (watermarkNode ?? maxBufferedNode).flatMap(location) ?? settings.location
            error("playback watermark (\(Self.format(settings.watermark)) s) is more than max-buffered (\(Self.format(settings.maxBuffered)) s), so it could never be reached",
                  at: place,
                  fix: "raise max-buffered to at least \(Self.format(settings.watermark)) or lower watermark to at most \(Self.format(settings.maxBuffered))")
        }
        return settings
    }

    static func format(_ seconds: Double) -> String {
        ExternalNumber.text(seconds)
    }

    mutating func readStrategy(_ value: Yams.Node) -> PlaybackStrategy? {
        let names = PlaybackStrategy.allCases.map(\.rawValue)
        let all = "use one of " + names.joined(separator: ", ")
        guard case .scalar(let scalar) = value, !Self.isNull(value) else {
            error("playback strategy must be one of \(names.joined(separator: ", ")), not \(Self.describe(value))",
                  at: location(value), fix: all)
            return nil
        }
        guard let strategy = PlaybackStrategy(rawValue: scalar.string) else {
            error("unknown playback strategy '\(scalar.string)'", at: location(value),
                  fix: Names.suggestion(for: scalar.string, among: names, otherwise: all))
            return nil
        }
        return strategy
    }

    mutating func readSeconds(_ value: Yams.Node, key: String, allowZero: Bool, meaning: String, example: String) -> Double? {
        let fix = "\(key): \(example) (\(meaning))"
        guard case .scalar(let scalar) = value, let seconds = Double(scalar.string), seconds.isFinite else {
            error("playback \(key) must be a number of seconds, not \(Self.describe(value))", at: location(value), fix: fix)
            return nil
        }
        if allowZero ? seconds < 0 : seconds <= 0 {
            error("playback \(key) must be \(allowZero ? "0 or more" : "more than 0") seconds, not \(scalar.string)",
                  at: location(value), fix: fix)
            return nil
        }
        if seconds > GraphLimits.playbackSeconds {
            error("playback \(key) must be at most \(Self.format(GraphLimits.playbackSeconds)) seconds (the limit of a graph), not \(scalar.string)",
                  at: location(value), fix: fix)
            return nil
        }
        return seconds
    }

    mutating func readBlock(_ value: Yams.Node) -> Int? {
        let range = Self.blockRange
        let fix = "block: 256 (frames per period, \(range.lowerBound)…\(range.upperBound))"
        guard case .scalar(let scalar) = value, let frames = Int(scalar.string) else {
            error("playback block must be a whole number of frames, not \(Self.describe(value))", at: location(value), fix: fix)
            return nil
        }
        guard range.contains(frames) else {
            error("playback block must be between \(range.lowerBound) and \(range.upperBound) frames, not \(frames)",
                  at: location(value), fix: fix)
            return nil
        }
        return frames
    }
}
