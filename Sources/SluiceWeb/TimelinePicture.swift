import Dispatch
import SluiceControl
import SluiceGraph
import SluiceTimeline
import Synchronization

/// `/timeline.svg`: the served graph's timeline so far (its last `ServedGraph.timelineWindow`
/// seconds), drawn as `--timeline` draws a run. Drawn on its own queue, never on the event
/// loop every page shares, and once per new copy of the timeline however many pages ask.
///
/// Threading: [thread-safe].
final class TimelinePicture: Sendable {
    private let served: ServedGraph
    private let queue = DispatchQueue(label: "sluice-web-timeline")
    /// The last picture, and the graph second its timeline ended at.
    private let drawn = Mutex<(until: Double, svg: [UInt8])?>(nil)

    init(served: ServedGraph) { self.served = served }

    /// Calls `done` on the picture's queue with the SVG, or nil before the graph has started.
    func draw(_ done: @escaping @Sendable ([UInt8]?) -> Void) {
        queue.async { [self] in
            guard let (timeline, texts) = served.currentTimeline() else { return done(nil) }
            if let cached = drawn.withLock({ $0 }), cached.until == timeline.duration { return done(cached.svg) }
            let drawing = TimelineDrawing(
                timeline: timeline, title: "sluice serve: \(served.name)", spans: TimelineDrawing.spans(of: timeline, texts: texts))
            let svg = Array(drawing.svg().utf8)
            drawn.withLock { $0 = (timeline.duration, svg) }
            done(svg)
        }
    }
}
