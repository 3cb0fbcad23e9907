import Prometheus
import SluiceControl
import Synchronization

/// A served graph's figures in Prometheus' text format, for `/metrics`: read from the graph
/// when a scraper asks (never pushed from the real-time thread), kept in swift-prometheus'
/// registry, which writes the format.
///
/// The counters are the same figures `--stats json` prints at the end of the run (xruns,
/// underruns) and `status` reports while it runs, plus what the control surfaces counted
/// (`ServedCounters`): requests by command and result, utterances, cancels, and the time from
/// each `speak` to its first utterance heard; and the providers' typed errors by code. Callback durations are the device's own record
/// of every period since the last scrape (it keeps the latest 65 536: scrape at least every
/// few minutes, or the histogram misses periods).
///
/// Threading: [thread-safe]; scrapes are serialised.
public final class ServedMetrics: Sendable {
    /// What the metrics read from the running graph.
    public struct Sources: Sendable {
        public var status: @Sendable () -> [String: any Sendable]
        /// The device's callback durations (nanoseconds) since the last call.
        public var callbackDurations: @Sendable () -> [UInt32]
        /// Frames each dropping link has let go, by link.
        public var linkDrops: @Sendable () -> [String: Int]
        /// The sources (providers) that failed, with their error's code.
        public var providerErrors: @Sendable () -> [(node: String, code: String, count: Int)]

        public init(
            status: @escaping @Sendable () -> [String: any Sendable],
            callbackDurations: @escaping @Sendable () -> [UInt32] = { [] },
            linkDrops: @escaping @Sendable () -> [String: Int] = { [:] },
            providerErrors: @escaping @Sendable () -> [(node: String, code: String, count: Int)] = { [] }
        ) {
            self.status = status
            self.callbackDurations = callbackDurations
            self.linkDrops = linkDrops
            self.providerErrors = providerErrors
        }
    }

    private struct State {
        /// The counters as last published, to add only what grew.
        var published: [String: Int] = [:]
    }

    private let registry = PrometheusCollectorRegistry()
    private let sources: Sources
    private let counters: ServedCounters
    private let state = Mutex(State())
    private let callbackSeconds: DurationHistogram
    private let firstAudioSeconds: ValueHistogram
    private let bufferedSeconds: Gauge
    private let positionSeconds: Gauge
    private let paused: Gauge

    public init(counters: ServedCounters, sources: Sources) {
        self.counters = counters
        self.sources = sources
        callbackSeconds = registry.makeDurationHistogram(
            descriptor: Self.name("callback", "seconds", "Time the audio device's process callback took, per period"),
            buckets: [5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000].map { Duration.microseconds($0) })
        firstAudioSeconds = registry.makeValueHistogram(
            descriptor: Self.name("speak_to_audio", "seconds", "Time from a speak request to its first utterance heard at the sink"),
            buckets: [0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10])
        bufferedSeconds = registry.makeGauge(descriptor: Self.name("buffered", "seconds", "Audio waiting in the sink's buffer"))
        positionSeconds = registry.makeGauge(descriptor: Self.name("position", "seconds", "Audio played since the graph started"))
        paused = registry.makeGauge(descriptor: Self.name("paused", "", "1 while playback is paused, else 0"))
    }

    /// The current figures in Prometheus' text exposition format (version 0.0.4).
    public func scrape() -> [UInt8] {
        state.withLock { state in
            let status = sources.status()
            bufferedSeconds.set(to: status["bufferedSeconds"] as? Double ?? 0)
            positionSeconds.set(to: status["position"] as? Double ?? 0)
            paused.set(to: (status["paused"] as? Bool ?? false) ? 1 : 0)
            for duration in sources.callbackDurations() {
                callbackSeconds.recordNanoseconds(Int64(duration))
            }
            for seconds in counters.takeFirstAudio() {
                firstAudioSeconds.record(seconds)
            }
            publish("xruns", [], status["xruns"] as? Int ?? 0, help: "Periods the audio device missed (JACK xruns)", in: &state)
            publish("underruns", [], status["underruns"] as? Int ?? 0, help: "Times a sink's buffer ran dry while it played", in: &state)
            publish("utterances_started", [], counters.utterancesStarted, help: "Utterances whose first frame was heard", in: &state)
            publish("utterances_ended", [], counters.utterancesEnded, help: "Utterances heard to their end", in: &state)
            publish("cancels", [], counters.cancels, help: "Replies cancelled (barge-in)", in: &state)
            for request in counters.requests {
                publish(
                    "control_requests", [("command", request.command), ("result", request.result)], request.count,
                    help: "Control requests by command and outcome (ok, or the error's code)", in: &state)
            }
            for failure in sources.providerErrors() {
                publish(
                    "provider_errors", [("node", failure.node), ("code", failure.code)], failure.count,
                    help: "A provider's typed errors, by node and code (a served graph's provider is made anew after each)", in: &state)
            }
            for (link, frames) in sources.linkDrops() {
                publish("dropped_frames", [("link", link)], frames, help: "Frames a dropping link let go", in: &state)
            }
            return registry.emitToBuffer()
        }
    }

    /// `sluice_NAME_UNIT`.
    private static func name(_ metric: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "sluice", metricName: metric, unitName: unit, helpText: help)
    }

    /// Brings a counter up to `value`: Prometheus' counters only grow, so what is added is
    /// the growth since the last scrape.
    private func publish(_ name: String, _ labels: [(String, String)], _ value: Int, help: String, in state: inout State) {
        let key = name + labels.map { "|\($0.0)=\($0.1)" }.joined()
        let counter = registry.makeCounter(descriptor: Self.name(name, "total", help), labels: labels)
        let growth = value - state.published[key, default: 0]
        if growth > 0 { counter.increment(by: Int64(growth)) }
        state.published[key] = max(value, state.published[key, default: 0])
    }
}
