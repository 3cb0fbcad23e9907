import SluiceAudio

/// What happened during one run, over graph time: the first sink's buffer fill against its
/// watermark, its playback events (first audio, underruns, the end), the devices' xruns and
/// where each utterance played. A driver records it when asked (`GraphDriver.recordsTimeline`)
/// and hands it back in `RunReport.timeline`; `sluice … --timeline FILE.svg` draws it.
///
/// Times are seconds on the graph clock (the sink device's time; virtual time offline), the
/// clock every other figure of the run's report uses. A served graph keeps a rolling one
/// (`window`), which its page draws while it runs (`LiveRun.currentTimeline()`).
public struct RunTimeline: Sendable, Hashable {
    /// The buffer over one stretch of graph time: its fullest and emptiest look, so a drawing
    /// keeps the peaks however much it thins the samples out.
    public struct Sample: Sendable, Hashable {
        public var time: Double
        /// The least and the most audio the first sink held in this stretch, in seconds.
        public var minBuffered: Double
        public var maxBuffered: Double
        /// The watermark playback starts (and restarts after an underrun) from, in seconds;
        /// nil while `auto` is still sizing it or `generate-first` waits for the end.
        public var watermark: Double?
    }

    /// Something that happened at one moment.
    public struct Mark: Sendable, Hashable {
        public enum Kind: String, Sendable, Hashable, CaseIterable {
            /// Playback started: the first audio the listener hears (less the output latency).
            case firstAudio = "first-audio"
            /// The buffer ran dry while playing: silence from here.
            case underrunStart = "underrun"
            /// Audio came back after an underrun.
            case underrunEnd = "underrun-end"
            /// The device missed a cycle (JACK's xrun callback), noticed at this time.
            case xrun
            /// A link whose policy drops (`when-full`) let audio go since the last look.
            case dropped
            case finished
            case cancelled
        }

        public var kind: Kind
        public var time: Double
    }

    /// Where one utterance played.
    public struct Utterance: Sendable, Hashable {
        public var id: UInt32
        public var start: Double
        /// Nil when the run ended before the utterance did (a cancel, a failure).
        public var end: Double?
        /// The UTF-8 bytes of the text the stream was given that it speaks, from its text
        /// spans; nil for sources that mark no spans.
        public var textRange: Range<Int>?
    }

    /// Samples at most this far apart in graph time; the looks in between fold into them.
    public static let sampleSeconds = 0.005

    public internal(set) var samples: [Sample] = []
    public internal(set) var marks: [Mark] = []
    public internal(set) var utterances: [Utterance] = []
    /// The most audio the first sink can hold, in seconds (the top of the picture).
    public internal(set) var capacitySeconds = 0.0
    /// Graph seconds the run took (so far, for a timeline taken while it runs).
    public internal(set) var duration = 0.0
    /// Where the timeline begins: 0, or for one that keeps only its last `window` seconds,
    /// the oldest moment it still holds.
    public internal(set) var start = 0.0
    /// When set, only about the last this many seconds are kept: older samples, marks and
    /// utterances are let go (a served graph's timeline, over a run of days). Nil: all of it.
    public var window: Double?

    public init(window: Double? = nil) {
        self.window = window
    }

    /// Folds one look at the buffer into the samples.
    mutating func sample(at time: Double, buffered: Double, watermark: Double?) {
        if var last = samples.last, time - last.time < Self.sampleSeconds, last.watermark == watermark {
            last.minBuffered = min(last.minBuffered, buffered)
            last.maxBuffered = max(last.maxBuffered, buffered)
            samples[samples.count - 1] = last
        } else {
            samples.append(Sample(time: time, minBuffered: buffered, maxBuffered: buffered, watermark: watermark))
        }
        // Let go of what fell out of the window in steps of a quarter of it, so each look
        // costs the same on average however long the run.
        if let window, time - start > window * 1.25 { forget(before: time - window) }
    }

    /// Drops what happened before `time`; an utterance that was still playing then stays.
    mutating func forget(before time: Double) {
        guard time > start else { return }
        start = time
        samples.removeAll { $0.time < time }
        marks.removeAll { $0.time < time }
        utterances.removeAll { ($0.end ?? .infinity) < time }
    }

    mutating func mark(_ kind: Mark.Kind, at time: Double) {
        marks.append(Mark(kind: kind, time: time))
    }

    /// Follows the utterance markers a sink played.
    mutating func played(_ marker: Marker, at time: Double) {
        switch marker.event {
        case .utteranceStart(let id):
            utterances.append(Utterance(id: id.rawValue, start: time))
        case .utteranceEnd(let id):
            if let index = utterances.lastIndex(where: { $0.id == id.rawValue && $0.end == nil }) {
                utterances[index].end = time
            }
        case .textSpan(let span):
            guard let index = utterances.lastIndex(where: { $0.id == span.utterance.rawValue }) else { return }
            let range = Int(span.start)..<Int(span.end)
            utterances[index].textRange = utterances[index].textRange.map {
                min($0.lowerBound, range.lowerBound)..<max($0.upperBound, range.upperBound)
            } ?? range
        case .word, .discontinuity, .endOfStream:
            break
        }
    }
}
