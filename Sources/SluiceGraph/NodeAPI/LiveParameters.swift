/// A change to one of a node's live parameters (`ParameterDescriptor.isLive`), as it reaches
/// the node on the thread that runs it.
public struct ParameterChange: Sendable, Hashable, BitwiseCopyable {
    /// The parameter's index in the node type's `NodeDescriptor.parameters`.
    public var parameter: Int
    /// The new value, checked against the parameter's range before it was queued.
    public var value: Double
    /// Numbers the changes sent to one node, from 1, so an acknowledgement names its change.
    public var sequence: UInt64
    /// The node's output frame (counted since its stream began) the change is timed for: it
    /// applies when the node's output reaches it, or at once when it has passed. 0: at once.
    public var frame: Int

    public init(parameter: Int, value: Double, sequence: UInt64 = 0, frame: Int = 0) {
        self.parameter = parameter
        self.value = value
        self.sequence = sequence
        self.frame = frame
    }
}

/// A processor with parameters that may change while the graph plays.
///
/// A change travels from the control thread on a lock-free queue of the node's slot and is
/// applied between two `process` calls, before the call that writes the node's next output
/// frame; the slot reports that frame back to whoever sent it. A parameter whose jump would
/// click (a gain) moves there by a ramp.
public protocol LiveParameterNode: ProcessorNode, LiveParameterTaking {
    /// [audio-thread] Applies `change` from the next output frame on. Never allocates, locks or
    /// blocks.
    func apply(_ change: ParameterChange)
}

/// A source with parameters that may change while the graph plays (the tone's frequency and
/// amplitude), applied between two `produce` calls, before the one that writes the frame the
/// change applies at. Frame sources only: a change is timed in output frames.
public protocol LiveParameterSource: SourceNode, LiveParameterTaking {
    /// [source-thread] Applies `change` from the next output frame on. Never allocates, locks
    /// or blocks.
    func apply(_ change: ParameterChange)
}

/// What a slot hands live changes to: a `LiveParameterNode` or a `LiveParameterSource`.
public protocol LiveParameterTaking: AnyObject {
    func apply(_ change: ParameterChange)
}
