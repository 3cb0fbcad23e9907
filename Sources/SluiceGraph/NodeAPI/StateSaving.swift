/// A node whose whole state can be written to files while the graph plays and given back to a
/// graph file (an `lv2` node's `state:`): what `sluice ctl save-state` asks of it.
public protocol StateSavingNode: Node {
    /// [control-thread] Writes the node's state, as it is now, into `folder` (an absolute
    /// path; made when absent, never followed when it is a link) and returns the file a graph
    /// names to restore it. Throws a `NodeStateError` saying why nothing was written. May run
    /// while the node processes on another thread: it never waits for the node's thread.
    func saveState(into folder: String) throws(NodeStateError) -> String
}

/// Why a node's state was not saved.
public struct NodeStateError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
