import SluiceAudio

/// What flows on one edge, decided before the graph runs.
public enum StreamFormat: Sendable, Hashable, CustomStringConvertible {
    /// Raw PCM bytes in this format (before the aligner).
    case bytes(PCMFormat)
    /// Interleaved Float32 frames.
    case frames(rate: Int, channels: Int)

    public var medium: PortMedium {
        switch self {
        case .bytes: .bytes
        case .frames: .frames
        }
    }

    public var sampleRate: Int {
        switch self {
        case .bytes(let format): format.sampleRate
        case .frames(let rate, _): rate
        }
    }

    public var channels: Int {
        switch self {
        case .bytes(let format): format.channels
        case .frames(_, let channels): channels
        }
    }

    /// Bytes in one unit of the edge: one byte on byte edges, one frame on frame edges.
    public var bytesPerUnit: Int {
        switch self {
        case .bytes: 1
        case .frames(_, let channels): channels * MemoryLayout<Float>.size
        }
    }

    /// Units in one second of audio: bytes per second on byte edges, frames per second on
    /// frame edges.
    public var unitsPerSecond: Int {
        switch self {
        case .bytes(let format): format.bytesPerFrame * format.sampleRate
        case .frames(let rate, _): rate
        }
    }

    /// "S16LE 24000 Hz mono" or "F32 48000 Hz stereo".
    public var description: String {
        switch self {
        case .bytes(let format): format.description
        case .frames(let rate, let channels): "F32 \(rate) Hz \(channelWord(channels))"
        }
    }
}

func channelWord(_ channels: Int) -> String {
    switch channels {
    case 1: "mono"
    case 2: "stereo"
    default: "\(channels) ch"
    }
}

/// What a node needed on an input and did not get. The graph turns it into an error that
/// names the link and the node to insert.
public enum FormatRequirement: Sendable, Hashable {
    /// Wanted bytes, got frames, or the other way round.
    case medium(PortMedium)
    case sampleRate(Int)
    case channels(Int)
    /// Anything else, said in a sentence ("a byte format the aligner can read").
    case other(String)
    /// The node's own parameter rules this input out: the error points at the parameter.
    case parameter(name: String, problem: String, fix: String)
}

public struct FormatMismatch: Error, Sendable, Hashable {
    /// The input port index that got the wrong format.
    public var input: Int
    public var required: FormatRequirement

    public init(input: Int, required: FormatRequirement) {
        self.input = input
        self.required = required
    }
}

/// What a node knows while it decides its formats.
public struct FormatContext: Sendable {
    /// The rate decided by the sink downstream of this node (its own rate, for a sink that
    /// decides one), or nil when no sink decides. Nodes whose rate parameter is `auto` take it.
    public var downstreamRate: Int?
    /// The block size the graph runs with, in frames at the sink's rate.
    public var blockFrames: Int
    /// Whether the graph is driven by a live device (JACK), not an offline driver. Nodes that
    /// are not real-time safe refuse to run live.
    public var isLive: Bool
    /// Checked offline with a stand-in for the server (`GraphCompiler.Options.deviceRate`):
    /// the rate a device source records at. Nil otherwise.
    public var deviceRate: Int?

    public init(downstreamRate: Int?, blockFrames: Int, isLive: Bool, deviceRate: Int? = nil) {
        self.downstreamRate = downstreamRate
        self.blockFrames = blockFrames
        self.isLive = isLive
        self.deviceRate = deviceRate
    }
}
