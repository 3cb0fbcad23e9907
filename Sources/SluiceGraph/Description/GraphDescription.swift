/// A graph as a file declares it, before any checking: nodes with their raw parameter text,
/// links, playback settings, and where each came from. `SluiceConfig` builds these from YAML
/// or the one-line form; programs may build them directly. `GraphCompiler` checks them.
public struct GraphDescription: Sendable, Hashable {
    public var name: String
    /// The file it came from (for messages), or nil.
    public var file: String?
    /// The folder relative paths and plugins resolve against.
    public var baseDirectory: String?
    public var nodes: [NodeDeclaration]
    /// Links one hop each; a chain `a -> b -> c` is two links.
    public var links: [LinkDeclaration]
    public var playback: PlaybackSettings

    public init(
        name: String, file: String? = nil, baseDirectory: String? = nil,
        nodes: [NodeDeclaration] = [], links: [LinkDeclaration] = [],
        playback: PlaybackSettings = PlaybackSettings()
    ) {
        self.name = name
        self.file = file
        self.baseDirectory = baseDirectory
        self.nodes = nodes
        self.links = links
        self.playback = playback
    }
}

/// One `nodes:` entry.
public struct NodeDeclaration: Sendable, Hashable {
    public var name: String
    public var type: String
    public var parameters: [ParameterDeclaration]
    /// Where the node's name is.
    public var location: SourceLocation?
    /// Where its `type:` value is.
    public var typeLocation: SourceLocation?

    public init(
        name: String, type: String, parameters: [ParameterDeclaration] = [],
        location: SourceLocation? = nil, typeLocation: SourceLocation? = nil
    ) {
        self.name = name
        self.type = type
        self.parameters = parameters
        self.location = location
        self.typeLocation = typeLocation
    }
}

/// One parameter as written: its name and its value's text.
public struct ParameterDeclaration: Sendable, Hashable {
    public var name: String
    public var value: RawValue
    /// Where the parameter's name is.
    public var location: SourceLocation?
    /// Where its value is.
    public var valueLocation: SourceLocation?

    public init(name: String, value: RawValue, location: SourceLocation? = nil, valueLocation: SourceLocation? = nil) {
        self.name = name
        self.value = value
        self.location = location
        self.valueLocation = valueLocation
    }
}

/// A parameter value before it is checked against its type.
public enum RawValue: Sendable, Hashable, CustomStringConvertible {
    /// A scalar's text. `quoted` is true when the file quoted it (so `"440"` stays a string
    /// where a string is wanted, but still reads as a number where a number is wanted).
    case scalar(String, quoted: Bool)
    case list([String])
    /// A mapping where a scalar was expected; kept to report it.
    case mapping

    public var description: String {
        switch self {
        case .scalar(let text, _): text
        case .list(let items): "[" + items.joined(separator: ", ") + "]"
        case .mapping: "{…}"
        }
    }
}

/// `node` or `node.port` in a link.
public struct PortReference: Sendable, Hashable, CustomStringConvertible {
    public var node: String
    /// nil: the node's first port on that side.
    public var port: String?
    public var location: SourceLocation?

    public init(node: String, port: String? = nil, location: SourceLocation? = nil) {
        self.node = node
        self.port = port
        self.location = location
    }

    public var description: String { port.map { "\(node).\($0)" } ?? node }
}

/// One hop of a link: an output to an input.
public struct LinkDeclaration: Sendable, Hashable {
    public var from: PortReference
    public var to: PortReference
    /// How much the link holds; nil: as much as the runtime gives an inner link.
    public var capacity: LinkCapacity?
    /// What the link does when it is full.
    public var whenFull: LinkPolicy
    /// Where the link's `capacity` or `when-full` is written, for messages.
    public var optionsLocation: SourceLocation?

    public init(
        from: PortReference, to: PortReference, capacity: LinkCapacity? = nil, whenFull: LinkPolicy = .block,
        optionsLocation: SourceLocation? = nil
    ) {
        self.from = from
        self.to = to
        self.capacity = capacity
        self.whenFull = whenFull
        self.optionsLocation = optionsLocation
    }
}

/// What a link does when what it feeds falls behind and it is full (`when-full:`).
public enum LinkPolicy: String, Sendable, Hashable, CaseIterable {
    /// The writer waits for room: nothing is lost, and a slow reader holds up the writer (and,
    /// through a `tee`, every branch).
    case block
    /// The link keeps the newest audio: the reader skips what is older than the capacity.
    case dropOldest = "drop-oldest"
    /// The link keeps what it holds: what the writer makes while it is full is dropped.
    case dropNewest = "drop-newest"
}

/// How much a link holds (`capacity:` in seconds, or `capacity-frames:`).
public enum LinkCapacity: Sendable, Hashable {
    case seconds(Double)
    case frames(Int)

    /// In frames at `rate`.
    public func frames(at rate: Int) -> Int {
        switch self {
        case .seconds(let seconds): max(1, Int((seconds * Double(rate)).rounded(.up)))
        case .frames(let frames): frames
        }
    }
}

/// How playback starts and how much it buffers (`playback:` in a graph file).
public struct PlaybackSettings: Sendable, Hashable {
    public var strategy: PlaybackStrategy
    /// Seconds buffered before playback starts (the `buffered` strategy; the floor of `auto`).
    public var watermark: Double
    /// Seconds the sink may hold at most; upstream stops when it is full.
    public var maxBuffered: Double
    /// Frames per sink period (the offline driver's block, a clocked sink's period).
    public var blockFrames: Int
    /// The name of the graph's JACK client (one per graph, holding every `jack.sink` and
    /// `jack.source` port); nil takes the endpoints' `client` parameter, then the graph's name.
    public var client: String?
    /// Where a live graph fed by non-real-time sources (a provider, a file) crosses into the
    /// JACK cycle (docs/architecture.md, "Where the boundary sits").
    public var boundary: CycleBoundary
    /// Where the `playback:` section is, for messages.
    public var location: SourceLocation?

    public static let defaultWatermark = 0.5
    public static let defaultMaxBuffered = 3.0
    public static let defaultBlockFrames = 256

    public init(
        strategy: PlaybackStrategy = .buffered, watermark: Double = defaultWatermark,
        maxBuffered: Double = defaultMaxBuffered, blockFrames: Int = defaultBlockFrames,
        client: String? = nil, boundary: CycleBoundary = .sink, location: SourceLocation? = nil
    ) {
        self.client = client
        self.boundary = boundary
        self.strategy = strategy
        self.watermark = watermark
        self.maxBuffered = maxBuffered
        self.blockFrames = blockFrames
        self.location = location
    }
}

/// Where the ring between a graph's non-real-time part (sources that may block) and the JACK
/// cycle sits.
public enum CycleBoundary: String, Sendable, Hashable, CaseIterable {
    /// Before each sink: the processors run on the graph's worker thread as soon as audio
    /// arrives, and the cycle only plays what they made (the default: the least work in the
    /// cycle per stream, and no added latency; docs/architecture.md has the figures).
    case sink
    /// Right after each source: the processors run inside the JACK cycle, on its real-time
    /// thread, taking what the source made since the last period.
    case source
}

/// When the sink starts playing.
public enum PlaybackStrategy: String, Sendable, Hashable, CaseIterable {
    /// As soon as any audio is there (watermark 0).
    case stream
    /// Once `watermark` seconds are buffered (or the stream has ended).
    case buffered
    /// Once enough is buffered that, at the source's measured production rate, the rest of
    /// the stream will not run dry (see docs/flow-control.md for the formula).
    case auto
    /// Once the whole stream is generated.
    case generateFirst = "generate-first"
}
