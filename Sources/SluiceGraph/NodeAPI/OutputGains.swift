/// A processor whose live parameters only scale its output channels (the fader's `gain`, the
/// channel map's `gain` and `pan`): the same multiplication gives the same audio anywhere
/// between the node and a sink, when what lies between is linear. A live run uses that to make
/// such a change heard within a period wherever the node is: when the node feeds a sink's
/// buffer (a speech or file graph, whose processors run ahead of playback by seconds), the
/// sink's playhead applies the gains to what it plays, and the node leaves them at 1
/// (docs/control.md, "When is a change heard").
public protocol OutputGainNode: LiveParameterNode {
    /// Whether the gains are the same on every output channel (a fader's), so that they pass
    /// through nodes that mix channels (a channel map); per-channel gains (a balance) pass
    /// only through nodes that keep the channels apart.
    var outputGainsAreUniform: Bool { get }

    /// The indices of the live parameters the gains take.
    /// Changes of the node's other live parameters (a fader's fade lengths) still reach the
    /// node itself.
    var outputGainParameters: [Int] { get }

    /// [control-thread] Called after `prepare`, before the graph runs: from now on the node
    /// leaves its output at gain 1, and every change of its `outputGainParameters` goes to the
    /// returned gains instead, on the thread of the playhead that applies them. `sampleRate`
    /// is the rate of the frames they will scale (the sink's: a resampler may lie between),
    /// for ramps given in seconds.
    func handOverOutputGains(sampleRate: Int) -> any OutputGains
}

/// A node's output gains as a sink's playhead applies them.
///
/// Threading: `apply` and `gain(channel:)` [audio-thread] (the playhead's), never allocating,
/// locking or blocking.
public protocol OutputGains: LiveParameterTaking {
    /// [audio-thread] Output channel `channel`'s gain for the current parameters (the target
    /// of a ramp under way). Uniform gains answer the same for every channel.
    func gain(channel: Int) -> Float
    /// [audio-thread] Frames a change of the gains takes, in a straight line so it never
    /// clicks (the fader's `ramp`).
    var rampFrames: Int { get }
}

/// A processor through which output gains may pass unchanged: scaling its input scales its
/// output alike, frame for frame (it is linear: a resampler, a crossfader, a fader's fades).
/// A node that is not declared so (a compressor, a plugin, a meter that would then read
/// another level) stops the gains of the nodes before it: those apply where they are.
public protocol GainTransparentNode: ProcessorNode {
    /// Whether each output channel comes from the same input channel alone (so per-channel
    /// gains pass too), rather than from a mix of channels.
    var keepsChannelsApart: Bool { get }
}
