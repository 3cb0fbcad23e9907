/// The limits a graph keeps, whoever wrote it. A graph file is input a user may receive from
/// elsewhere: every stage from reading to compiling is linear (or n log n) in its size, and
/// these bounds make the size itself, and the memory a run may take, finite. Beyond one, the
/// graph is refused with an error naming the limit (docs/graph-files.md, "Limits").
public enum GraphLimits {
    /// The largest graph file read, in bytes (a 20 000-node chain is under 1 MB).
    public static let fileBytes = 8 << 20
    /// The deepest nesting of YAML collections (a graph file needs 4).
    public static let nesting = 64
    /// Nodes in one graph.
    public static let nodes = 100_000
    /// Links (port-to-port connections) in one graph.
    public static let links = 200_000
    /// `playback.watermark` and `playback.max-buffered`, in seconds: a sink's buffer is sized
    /// from max-buffered, so this bounds its memory too.
    public static let playbackSeconds = 600.0
    /// A link's `capacity`, in seconds, and `capacity-frames`: an edge is sized from it.
    public static let linkSeconds = 0.001...60.0
    public static let linkFrames = 1...2_880_000
    /// `playback.block` (and `sluice render --block`), in frames.
    public static let blockFrames = 16...8192
}
