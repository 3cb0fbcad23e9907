@_exported import SluiceControlProtocol
import Foundation
import SluiceGraph
import SluiceSpeech
import Synchronization

/// A running graph as the control clients see it: each request checked and carried out,
/// each answer a reply's fields or a `ControlError`. Any number of clients call `handle` at
/// once, from their own threads; a refused request changes nothing and the graph plays on.
public final class ServedGraph: Sendable {
    private let graphName: String
    private let run: LiveRun
    /// The text-driven sources, by node name.
    // SAFETY: a source's `receive(text:)` is thread-safe against its own `produce`; callers
    // hold `utterances`' lock, which keeps two clients' texts whole and in order.
    private nonisolated(unsafe) let speakers: [String: any TextDrivenSource]
    /// What each text-driven node was given and what of it was heard, by node name.
    private let spoken = SpokenBook()

    /// The texts and what was heard, shared with the run's event observer.
    final class SpokenBook: Sendable {
        private let state = Mutex<[String: ReplyLedger]>([:])
        func withLock<R>(_ body: (inout [String: ReplyLedger]) -> R) -> R { state.withLock { body(&$0) } }
    }

    /// The text of the utterances the timeline still shows, by utterance id (as heard when it
    /// ended, as given while it plays), shared with the run's event observer.
    final class UtteranceTexts: Sendable {
        private let state = Mutex<(texts: [UInt32: String], order: [UInt32])>(([:], []))
        /// The most utterances remembered.
        static let limit = 1000

        func record(_ id: UInt32, _ text: String) {
            state.withLock { state in
                if state.texts.updateValue(text, forKey: id) == nil { state.order.append(id) }
                if state.order.count > Self.limit {
                    let gone = state.order.count - Self.limit / 2
                    for old in state.order.prefix(gone) { state.texts[old] = nil }
                    state.order.removeFirst(gone)
                }
            }
        }

        var all: [UInt32: String] { state.withLock { $0.texts } }
    }
    private let utteranceTexts = UtteranceTexts()

    /// Seconds of the run a served graph's timeline keeps (`currentTimeline()`).
    public static let timelineWindow = 300.0

    private let speakerNames: [String]
    private let extraStatus: @Sendable () -> [String: any Sendable]
    private let xruns: @Sendable () -> Int
    /// The connections that watch, and what they are sent.
    public let events = EventStream()
    /// What was asked and how it went, for `/metrics`.
    public let counters = ServedCounters()
    /// The descriptors of the text-driven nodes, for `configure`.
    private let speakerDescriptors: [String: NodeDescriptor]
    /// The devices whose ports `connect` and `disconnect` join.
    private let devices: [any GraphDevice]
    private let quit: @Sendable () -> Void
    private let quitting = Atomic<Bool>(false)
    /// The graph's meters, by node name, whose readings become `meter` events.
    // SAFETY: `takeReadings` is called only from the run's control thread (`Watch.look`).
    private nonisolated(unsafe) let meters: [(name: String, node: any MeteringNode)]
    /// The graph's hosted plugins that report values (LV2 control outputs): `control-output` events.
    // SAFETY: `takeReports` is called only from the run's control thread (`Watch.look`).
    private nonisolated(unsafe) let reporters: [(name: String, node: any ReportingNode)]
    /// Changes replied to before their node ran them: their `parameter` event waits for the frame.
    private let unacknowledged = PendingChanges()

    /// Reads and checks the graph's file again, for `reload`; nil when the graph came from
    /// no file (a one-line graph).
    private let readGraph: (@Sendable () -> Result<CompiledGraph, ControlError>)?
    /// The graph as it runs, and the values of its live parameters set since it started.
    private let running: CompiledGraph
    private let liveValuesSet = Mutex<[String: [String: ParameterValue]]>([:])
    /// A reload under way: a second one at the same time is refused, not queued behind it.
    private let reloading = Atomic<Bool>(false)

    /// Changes waiting for their frame, shared with the run's event observer.
    final class PendingChanges: Sendable {
        private let state = Mutex<[ParameterControl.Applied]>([])
        func withLock<R>(_ body: (inout [ParameterControl.Applied]) -> R) -> R { state.withLock { body(&$0) } }
    }

    /// - Parameters:
    ///   - extraStatus: fields `status` adds (the JACK device's client name).
    ///   - xruns: the device's xruns so far (`status`, and `xrun` events).
    ///   - quit: what `quit` does: fade out and end the run (called once).
    ///   - readGraph: reads and checks the graph's file again (not live: no device is made),
    ///     for `reload`; the failure's message is the file's diagnostics. Nil: nothing to reload.
    ///
    /// Made before the run starts: a text-driven node that fails (a provider's typed error)
    /// does not end the served graph. What it made plays out with a fade, the rest of its text
    /// is dropped, watchers get a `provider-error` event, and the node, made anew, speaks the
    /// next `speak`.
    public init(
        graph: CompiledGraph, run: LiveRun, extraStatus: @escaping @Sendable () -> [String: any Sendable] = { [:] },
        xruns: @escaping @Sendable () -> Int = { 0 }, quit: @escaping @Sendable () -> Void,
        readGraph: (@Sendable () -> Result<CompiledGraph, ControlError>)? = nil
    ) {
        graphName = graph.description.name
        self.run = run
        running = graph
        self.readGraph = readGraph
        var speakers: [String: any TextDrivenSource] = [:]
        var descriptors: [String: NodeDescriptor] = [:]
        for node in graph.nodes {
            if let source = node.instance as? any TextDrivenSource {
                speakers[node.name] = source
                descriptors[node.name] = node.descriptor
            }
        }
        self.speakers = speakers
        meters = graph.nodes.compactMap { node in (node.instance as? any MeteringNode).map { (node.name, $0) } }
        reporters = graph.nodes.compactMap { node in (node.instance as? any ReportingNode).map { (node.name, $0) } }
        speakerDescriptors = descriptors
        devices = graph.devices
        speakerNames = speakers.keys.sorted()
        self.extraStatus = extraStatus
        self.xruns = xruns
        self.quit = quit
        let languages = Dictionary(uniqueKeysWithValues: graph.nodes.filter { speakers[$0.name] != nil }.map {
            ($0.name, SentenceChunker.language(ofParameters: $0.parameters.values))
        })
        spoken.withLock { spoken in for name in speakerNames { spoken[name] = ReplyLedger(language: languages[name] ?? nil) } }
        run.survivesSourceFailures()
        run.timelineWindow = Self.timelineWindow
        followRun()
    }

    /// The run's last `timelineWindow` seconds as a timeline (at most a second old), with the
    /// text of each utterance it shows that a text-driven node spoke; nil before the first look.
    /// Waits a few looks of the control loop at most (`LiveRun.currentTimeline()`).
    public func currentTimeline() -> (timeline: RunTimeline, texts: [UInt32: String])? {
        guard let timeline = run.currentTimeline() else { return nil }
        return (timeline, utteranceTexts.all)
    }

    /// Follows the run on its control thread: what was heard (from the markers the sinks
    /// reached; utterance ids are a node's own, so with one text-driven node, as the speech
    /// graphs have), and the events watchers are sent.
    private func followRun() {
        let speaker = speakerNames.count == 1 ? speakerNames[0] : nil
        let watch = Watch(
            run: run, events: events, xruns: xruns, meters: meters, reporters: reporters, unacknowledged: unacknowledged,
            recover: { [weak self] node in self?.recover(node) })
        run.eventObserver = { [spoken, events, counters, utteranceTexts] event in
            if let speaker, event.kind == .marker, let marker = event.marker {
                let text = spoken.withLock { $0[speaker]?.record(marker) }
                switch marker.event {
                case .utteranceStart(let id):
                    counters.utteranceStarted(Int(id.rawValue))
                    if let text { utteranceTexts.record(id.rawValue, text) }
                    events.emit("utterance-started", ["node": speaker, "utterance": Int(id.rawValue), "text": text ?? ""])
                case .utteranceEnd(let id):
                    counters.utteranceEnded()
                    if let text { utteranceTexts.record(id.rawValue, text) }
                    events.emit("utterance-ended", ["node": speaker, "utterance": Int(id.rawValue), "text": text ?? ""])
                case .word(let span):
                    if let text { events.emit("word", ["node": speaker, "utterance": Int(span.utterance.rawValue), "text": text]) }
                default:
                    break
                }
            }
            watch.look()
        }
        run.statusObserver = { _ in watch.look() }
    }

    /// What the event stream notices by looking: new underruns and xruns, and levels.
    private final class Watch: @unchecked Sendable {
        // SAFETY (@unchecked Sendable): used only on the run's control thread.
        let run: LiveRun
        let events: EventStream
        let xruns: @Sendable () -> Int
        let meters: [(name: String, node: any MeteringNode)]
        let reporters: [(name: String, node: any ReportingNode)]
        let unacknowledged: PendingChanges
        var underruns = 0
        var xrunCount = 0
        var lastLevel = 0.0
        var lastReports = 0.0
        /// Frames each dropping link had let go at the last look.
        var linkDrops: [String: Int] = [:]
        /// Makes a failed text-driven node anew and says so (`ServedGraph.recover`).
        let recover: (String) -> Void

        init(
            run: LiveRun, events: EventStream, xruns: @escaping @Sendable () -> Int,
            meters: [(name: String, node: any MeteringNode)], reporters: [(name: String, node: any ReportingNode)],
            unacknowledged: PendingChanges, recover: @escaping (String) -> Void
        ) {
            self.run = run
            self.events = events
            self.xruns = xruns
            self.meters = meters
            self.reporters = reporters
            self.unacknowledged = unacknowledged
            self.recover = recover
        }

        func look() {
            defer { events.lookEnded() }
            // Peaks are measured on the device thread only while a watcher wants levels.
            let levels = events.wantsLevels
            for playhead in run.playheads { playhead.meterPeaks(levels) }
            // Meters post whether or not anyone watches: their readings are taken (and their
            // queues emptied) always, and sent when someone wants levels.
            for meter in meters {
                for reading in meter.node.takeReadings() where levels {
                    events.emit("meter", MeterEvent.fields(of: reading, node: meter.name))
                }
            }
            // Plugins' own outputs (meters, gain reduction), as levels are: the latest values ten
            // times a second, sent when someone wants levels.
            let now = monotonicSeconds()
            if now - lastReports >= 0.1 {
                lastReports = now
                for reporter in reporters {
                    for report in reporter.node.takeReports() where levels {
                        events.emit("control-output", ["node": reporter.name, "output": report.name, "value": report.value, "frame": report.frame])
                    }
                }
                // Links that dropped audio since the last look (`when-full`), at most ten
                // times a second each.
                for (link, frames) in run.linkDrops where frames > linkDrops[link, default: 0] {
                    events.emit("dropped", ["link": link, "frames": frames - linkDrops[link, default: 0], "total": frames])
                    linkDrops[link] = frames
                }
            }
            let acknowledged = unacknowledged.withLock { pending -> [ParameterControl.Applied] in
                var done: [ParameterControl.Applied] = []
                pending.removeAll { change in
                    guard let frame = run.parameters.appliedFrame(of: change) else { return false }
                    var applied = change
                    applied.frame = frame
                    done.append(applied)
                    return true
                }
                return done
            }
            for applied in acknowledged { events.emit("parameter", ServedGraph.fields(of: applied, in: run.parameters)) }
            // A provider's typed error: what it made still plays out, with a fade; the node is
            // made anew for the next reply, and watchers learn why at once.
            for node in run.failedSources { recover(node) }
            guard !events.isEmpty else { return }
            let underruns = run.playheads.map(\.underruns).reduce(0, +)
            if underruns > self.underruns {
                self.underruns = underruns
                events.emit("underrun", ["underruns": underruns])
            }
            let xruns = xruns()
            if xruns > xrunCount {
                xrunCount = xruns
                events.emit("xrun", ["xruns": xruns])
            }
            if levels && now - lastLevel >= 0.1 {
                lastLevel = now
                let peak = run.playheads.map { Double($0.takePeak()) }.max() ?? 0
                events.emit(ServedGraph.levelEvent(peak: peak, status: run.status, fills: run.linkFills))
            }
        }
    }

    /// The `level` event: the output's peak, the position, the sink's buffer and watermark,
    /// each buffered link's fill (seconds held, to the tenth of a millisecond). Written by
    /// hand, sorted keys as `ControlJSON` writes them: it goes out ten times a second.
    static func levelEvent(
        peak: Double, status: PlaybackStatus, fills: [(link: String, heldSeconds: Double, capacitySeconds: Double)]
    ) -> EncodedEvent {
        // A NaN reached the output (a plugin's fault): the meter reads it as nothing.
        let peak = peak.isFinite ? peak : 0
        let links = fills.map { ($0.link, ($0.heldSeconds * 10_000).rounded() / 10_000) }.sorted { $0.0 < $1.0 }
        var fields: [String: any Sendable] = ["peak": peak, "position": status.position, "buffered": status.bufferedSeconds]
        var json = JSONWriter()
        json.raw(#"{"buffered":"#)
        json.number(status.bufferedSeconds)
        json.raw(#","event":"level""#)
        if !links.isEmpty {
            fields["links"] = Dictionary(links, uniquingKeysWith: { $1 })
            json.raw(#","links":{"#)
            for (index, (link, held)) in links.enumerated() {
                if index > 0 { json.raw(",") }
                json.key(link)
                json.number(held)
            }
            json.raw("}")
        }
        json.raw(#","peak":"#)
        json.number(peak)
        json.raw(#","position":"#)
        json.number(status.position)
        if let watermark = status.watermarkSeconds {
            fields["watermark"] = watermark
            json.raw(#","watermark":"#)
            json.number(watermark)
        }
        json.raw("}")
        return EncodedEvent("level", fields, json: json.text)
    }

    /// A `parameter` event's fields.
    static func fields(of applied: ParameterControl.Applied, in parameters: ParameterControl) -> [String: any Sendable] {
        var fields: [String: any Sendable] = ["node": applied.node, "parameter": applied.parameter, "value": applied.value]
        if let frame = applied.frame { fields.merge(heardFields(node: applied.node, parameter: applied.parameter, frame: frame, in: parameters)) { $1 } }
        return fields
    }

    /// A change's `frame` (the node's output frame it holds from), with `heard-frame` (the
    /// sink's stream frame where that is heard) and `heard-in` (seconds from now until then).
    static func heardFields(node: String, parameter: String, frame: Int, in parameters: ParameterControl) -> [String: any Sendable] {
        var fields: [String: any Sendable] = ["frame": frame]
        if let heard = parameters.heard(node: node, parameter: parameter, frame: frame) {
            fields["heard-frame"] = heard.frame
            fields["heard-in"] = (heard.inSeconds * 1000).rounded() / 1000
        }
        return fields
    }

    /// `status`'s fields: the graph, its state and position, what its sinks hold, underruns,
    /// xruns, whether it is paused (not counted as a request: `/metrics` reads it).
    public var status: [String: any Sendable] {
        let status = run.status
        var fields: [String: any Sendable] = [
            "graph": graphName, "state": "\(status.state)", "position": status.position,
            "bufferedSeconds": status.bufferedSeconds,
            "capacitySeconds": status.capacitySeconds,
            "underruns": run.playheads.map(\.underruns).reduce(0, +),
            "xruns": xruns(),
            "paused": run.isPaused,
        ]
        if let watermark = status.watermarkSeconds { fields["watermarkSeconds"] = watermark }
        fields.merge(extraStatus()) { _, new in new }
        return fields
    }

    /// Frames each dropping link has let go so far, by link.
    public var linkDrops: [String: Int] {
        Dictionary(run.linkDrops.map { ($0.link, $0.frames) }, uniquingKeysWith: { $1 })
    }

    /// How many times each source failed so far, by node and the provider's error code.
    public var sourceFailures: [(node: String, code: String, count: Int)] { run.sourceFailureCounts }

    /// [run's control thread] A text-driven node failed: it is made anew (its text not yet
    /// spoken dropped, as a cancel drops it; what it made plays out, nothing is discarded, and
    /// the utterance events go on telling what is heard of it), the ledger numbers the next
    /// reply's utterances after the cut, and watchers get a `provider-error` event. A node
    /// that cannot be made anew ends, and with it the graph (`recovered: false`).
    private func recover(_ node: String) {
        guard let failure = run.sourceFailures.first(where: { $0.node == node })?.failure else { return }
        let restarted = spoken.withLock { spoken -> Bool in
            guard let next = speakers[node]?.interrupt() else { return false }
            var ledger = spoken[node] ?? ReplyLedger()
            _ = ledger.cut(resumingAt: next)
            spoken[node] = ledger
            return true
        }
        if restarted { run.restartSource(node) } else { run.endFailedSource(node) }
        events.emit("provider-error", ["node": node, "code": failure.code, "message": failure.message, "recovered": restarted])
    }

    /// Every buffered link's fill now, by name: seconds held and the most it holds.
    public var linkFills: [(link: String, heldSeconds: Double, capacitySeconds: Double)] { run.linkFills }

    /// The graph as it runs.
    public var graph: CompiledGraph { running }

    /// The live parameters set since the graph started (by `set` or a reload), by node and
    /// parameter; the others hold the graph file's values.
    public var liveValues: [String: [String: ParameterValue]] { liveValuesSet.withLock { $0 } }

    /// The graph's name.
    public var name: String { graphName }

    /// True once a client asked to quit.
    public var isQuitting: Bool { quitting.load(ordering: .acquiring) }

    /// Carries out `request`; returns the reply's fields or why it was refused.
    ///
    /// A `set` waits (up to a second) for the period that applies it, to reply with its
    /// `frame`, only when it is untimed and `waitForPeriod` is true: a timed change waits for
    /// its own frame, which may be hours away, and the OSC port, one thread for every sender,
    /// never waits (a sender of timed or blocked changes would hold up all the others).
    public func handle(_ request: ControlRequest, waitForPeriod: Bool = true) -> Result<[String: any Sendable], ControlError> {
        let outcome = carryOut(request, waitForPeriod: waitForPeriod)
        switch outcome {
        case .success: counters.count(request.name, result: "ok")
        case .failure(let error): counters.count(request.name, result: error.code)
        }
        return outcome
    }

    private func carryOut(_ request: ControlRequest, waitForPeriod: Bool) -> Result<[String: any Sendable], ControlError> {
        switch request {
        case .set(let node, let parameter, let value, let at):
            do {
                let applied = try run.parameters.set(
                    node: node, parameter: parameter, value: .number(value), atFrame: at,
                    timeout: waitForPeriod && at == nil ? 1 : 0)
                var fields: [String: any Sendable] = ["node": node, "parameter": parameter, "value": value]
                if let at { fields["at"] = at }
                // The output frame of the node from which the new value holds; absent when the
                // node ran no period within a second (it applies when it next runs).
                if let frame = applied.frame {
                    fields.merge(Self.heardFields(node: node, parameter: parameter, frame: frame, in: run.parameters)) { $1 }
                } else {
                    fields["queued"] = true
                }
                // Watchers hear of every change with the frame it took effect at: now, or once
                // the node has run it.
                if applied.frame != nil {
                    events.emit("parameter", ServedGraph.fields(of: applied, in: run.parameters))
                } else {
                    unacknowledged.withLock { $0.append(applied) }
                }
                liveValuesSet.withLock { $0[node, default: [:]][parameter] = .number(value) }
                return .success(fields)
            } catch {
                return .failure(ControlError(code: error.code, message: error.description))
            }
        case .speak(let text, let node, let interrupt, let more):
            if interrupt {
                if case .failure(let error) = cancel() { return .failure(error) }
            }
            return speak(text, node: node, more: more)
        case .cancel:
            return cancel()
        case .status:
            return .success(status)
        case .parameters:
            var nodes: [String: any Sendable] = [:]
            for (node, parameters) in run.parameters.liveParameters {
                nodes[node] = parameters.map { parameter -> [String: any Sendable] in
                    var entry: [String: any Sendable] = ["name": parameter.name, "type": parameter.type.description]
                    if let unit = parameter.unit { entry["unit"] = unit }
                    return entry
                }
            }
            // Each text-driven node's type, so a client can map its settings to that provider's
            // parameters (sd_sluice: words a minute for espeak, a speed factor for piper).
            var types: [String: any Sendable] = [:]
            for (name, descriptor) in speakerDescriptors { types[name] = descriptor.typeName }
            return .success(["nodes": nodes, "speakers": speakerNames, "speaker-types": types])
        case .pause:
            run.pause()
            events.emit("paused")
            return .success([:])
        case .resume:
            run.resume()
            events.emit("resumed")
            return .success([:])
        case .configure(let node, let parameters):
            return configure(node, parameters)
        case .route(let first, let second, let connected):
            guard !devices.isEmpty else {
                return .failure(ControlError(code: "no-ports", message: "graph '\(graphName)' has no JACK ports to connect"))
            }
            var refusals: [String] = []
            for device in devices {
                do {
                    let pair = try device.route(first, second, connected: connected)
                    return .success(["from": pair.from, "to": pair.to])
                } catch {
                    refusals.append("\(error)")
                }
            }
            return .failure(ControlError(code: "no-such-port", message: refusals.joined(separator: "; ")))
        case .watch:
            return .failure(ControlError(code: "watch-needs-socket", message: "watch works on the control socket, not over OSC"))
        case .subscribe, .unsubscribe:
            return .failure(ControlError(code: "subscribe-needs-osc", message: "subscribe works over OSC; on the control socket, use watch"))
        case .quit:
            if !quitting.exchange(true, ordering: .acquiringAndReleasing) { quit() }
            return .success([:])
        case .reload:
            return reload(waitForPeriod: waitForPeriod)
        case .saveState(let node, let path):
            return saveState(node, into: path)
        }
    }

    /// `save-state`: the node's state written into `folder` while it plays.
    private func saveState(_ name: String, into folder: String) -> Result<[String: any Sendable], ControlError> {
        guard let node = running.nodes.first(where: { $0.name == name }) else {
            let close = closestNames(to: name, among: running.nodes.map(\.name), limit: 1)
            return .failure(ControlError(
                code: "unknown-node", message: "the graph has no node '\(name)'" + (close.isEmpty ? "" : "; did you mean '\(close[0])'?")))
        }
        guard let saving = node.instance as? any StateSavingNode else {
            let savers = running.nodes.filter { $0.instance is any StateSavingNode }.map(\.name)
            return .failure(ControlError(
                code: "no-state",
                message: "node '\(name)' (\(node.descriptor.typeName)) has no state to save; nodes that have: "
                    + (savers.isEmpty ? "none" : savers.map { "'\($0)'" }.joined(separator: ", "))))
        }
        do {
            let file = try saving.saveState(into: folder)
            return .success(["node": name, "path": folder, "file": file])
        } catch {
            return .failure(ControlError(code: "save-failed", message: "node '\(name)': \(error.message)"))
        }
    }

    /// `reload`: the file read and checked again, and each live parameter whose value in it
    /// differs from the one in force set as a `set` would (ramped, answered with its frames).
    /// Anything that would change the graph's shape is refused and nothing is applied.
    ///
    /// Without `waitForPeriod` (the OSC port, one thread for every sender) the reply says only
    /// that the reload began; it runs on a thread of its own and its outcome is an event
    /// (`reloaded` or `reload-refused`): reading and checking a file takes milliseconds that
    /// every other sender would wait.
    private func reload(waitForPeriod: Bool) -> Result<[String: any Sendable], ControlError> {
        guard let readGraph else {
            return .failure(ControlError(code: "nothing-to-reload", message: "graph '\(graphName)' was not read from a file; there is nothing to read again"))
        }
        guard !reloading.exchange(true, ordering: .acquiringAndReleasing) else {
            return .failure(ControlError(code: "reload-busy", message: "a reload is under way; send it again when it has answered"))
        }
        guard waitForPeriod else {
            Thread.detachNewThread { [self] in
                _ = reloadNow(reading: readGraph, waitForPeriod: false)
                reloading.store(false, ordering: .releasing)
            }
            return .success(["started": true])
        }
        defer { reloading.store(false, ordering: .releasing) }
        return reloadNow(reading: readGraph, waitForPeriod: true)
    }

    /// `reload`'s work, once it holds `reloading`.
    private func reloadNow(
        reading readGraph: @Sendable () -> Result<CompiledGraph, ControlError>, waitForPeriod: Bool
    ) -> Result<[String: any Sendable], ControlError> {
        // Read and checked with no lock held: the file's reading and the nodes' making take time.
        let file: CompiledGraph
        switch readGraph() {
        case .success(let graph): file = graph
        case .failure(let error):
            events.emit("reload-refused", ["code": error.code, "message": error.message])
            return .failure(error)
        }
        let current = liveValuesSet.withLock { $0 }
        let changes: [GraphReload.Change]
        switch GraphReload.changes(from: running, current: current, to: file, speakers: Set(speakerNames)) {
        case .success(let found): changes = found
        case .failure(let error):
            events.emit("reload-refused", ["code": error.code, "message": error.message])
            return .failure(error)
        }
        var applied: [[String: any Sendable]] = []
        for change in changes {
            do {
                let done = try run.parameters.set(node: change.node, parameter: change.parameter, value: change.value, timeout: waitForPeriod ? 1 : 0)
                liveValuesSet.withLock { $0[change.node, default: [:]][change.parameter] = change.value }
                var fields: [String: any Sendable] = ["node": change.node, "parameter": change.parameter, "value": done.value]
                if let frame = done.frame {
                    fields.merge(Self.heardFields(node: change.node, parameter: change.parameter, frame: frame, in: run.parameters)) { $1 }
                    events.emit("parameter", ServedGraph.fields(of: done, in: run.parameters))
                } else {
                    fields["queued"] = true
                    unacknowledged.withLock { $0.append(done) }
                }
                applied.append(fields)
            } catch {
                // Those before it stand: each was a change the file asks for.
                let message = "node '\(change.node)', parameter '\(change.parameter)': \(error.description)"
                    + (applied.isEmpty ? "" : " (\(applied.count) change\(applied.count == 1 ? "" : "s") before it applied)")
                events.emit("reload-refused", ["code": error.code, "message": message])
                return .failure(ControlError(code: error.code, message: message))
            }
        }
        events.emit("reloaded", ["changes": applied])
        return .success(["changes": applied])
    }

    private func speak(_ text: String, node: String?, more: Bool) -> Result<[String: any Sendable], ControlError> {
        let name: String
        if let node {
            guard speakers[node] != nil else {
                let close = closestNames(to: node, among: speakerNames)
                let hint = close.isEmpty
                    ? "text-driven nodes: " + (speakerNames.isEmpty ? "none" : speakerNames.joined(separator: ", "))
                    : "did you mean '\(close[0])'?"
                return .failure(ControlError(code: "unknown-node", message: "no text-driven node '\(node)'; \(hint)"))
            }
            name = node
        } else {
            switch onlySpeaker(for: "speak", fix: "name one in \"node\"") {
            case .success(let only): name = only
            case .failure(let error): return .failure(error)
            }
        }
        guard !isQuitting else {
            return .failure(ControlError(code: "quitting", message: "the graph is ending; nothing more is spoken"))
        }
        let source = speakers[name]!
        let given = spoken.withLock { spoken -> ReplyLedger.Given in
            var ledger = spoken[name] ?? ReplyLedger()
            defer { spoken[name] = ledger }
            return ledger.give(text, more: more, to: source)
        }
        if given.count > 0 { counters.spoke(firstUtterance: given.first) }
        // `first` and `count`: the ids of the utterances this text became (events name them);
        // `pending`: characters of an unfinished sentence waiting for the next piece.
        return .success([
            "node": name, "queued": given.first + given.count, "first": given.first, "count": given.count,
            "pending": given.pending,
        ])
    }

    /// The graph's one text-driven node, or why there is none to `action` with.
    private func onlySpeaker(for action: String, fix: String) -> Result<String, ControlError> {
        if speakerNames.count == 1 { return .success(speakerNames[0]) }
        return .failure(ControlError(
            code: speakerNames.isEmpty ? "no-speaker" : "which-speaker",
            message: speakerNames.isEmpty
                ? "graph '\(graphName)' has no text-driven node to \(action) (a speech provider, or morse)"
                : "the graph has several text-driven nodes (\(speakerNames.joined(separator: ", "))); \(fix)"))
    }

    /// Barge-in on the graph's text-driven node: its text still queued is dropped, the sinks
    /// fade out and drop the audio of that text, and the reply says what was heard since the
    /// last cancel, to the utterance: `heard` (utterances heard to their end), `partial` (the
    /// one cut off), `unheard` (how many were dropped before they began).
    private func cancel() -> Result<[String: any Sendable], ControlError> {
        interrupt(changing: [:])
    }

    /// Carries out `request` for a socket client: `watch` keeps `connection` for events.
    public func handle(_ request: ControlRequest, on connection: ControlConnection) -> Result<[String: any Sendable], ControlError> {
        guard case .watch(let levels) = request else { return handle(request) }
        events.add(connection, levels: levels)
        return .success(["graph": graphName])
    }

    /// `configure`: the node's parameters checked against its descriptor, then an interrupt
    /// that makes the provider again with them.
    private func configure(_ node: String, _ given: [String: String]) -> Result<[String: any Sendable], ControlError> {
        guard let descriptor = speakerDescriptors[node] else {
            let close = closestNames(to: node, among: speakerNames, limit: 1)
            return .failure(ControlError(
                code: "unknown-node",
                message: "no text-driven node '\(node)'; " + (close.isEmpty ? "text-driven nodes: \(speakerNames.joined(separator: ", "))" : "did you mean '\(close[0])'?")))
        }
        var values: [String: ParameterValue] = [:]
        for (name, text) in given.sorted(by: { $0.key < $1.key }) {
            guard let parameter = descriptor.parameter(named: name) else {
                let close = closestNames(to: name, among: descriptor.parameters.map(\.name), limit: 1)
                return .failure(ControlError(
                    code: "unknown-parameter",
                    message: "node '\(node)' (\(descriptor.typeName)) has no parameter '\(name)'" + (close.isEmpty ? "" : "; did you mean '\(close[0])'?")))
            }
            switch parameter.check(text) {
            case .success(let value): values[name] = value
            case .failure(let refusal): return .failure(ControlError(code: "out-of-range", message: refusal.message))
            }
        }
        return interrupt(changing: values)
    }

    private func interrupt(changing values: [String: ParameterValue]) -> Result<[String: any Sendable], ControlError> {
        let name: String
        switch onlySpeaker(for: "cancel", fix: "cancel works on a graph with one") {
        case .success(let only): name = only
        case .failure(let error): return .failure(error)
        }
        // Hold the texts' lock: no speak slips in between the interrupt and the accounting. The
        // event goes out after it is let go.
        let outcome = spoken.withLock { spoken -> Result<[String: any Sendable], ControlError> in
            guard let next = speakers[name]!.interrupt(changing: values) else {
                return .failure(values.isEmpty
                    ? ControlError(code: "cannot-interrupt", message: "node '\(name)' cannot drop what it was given; wait for it, or quit")
                    : ControlError(
                        code: "cannot-configure",
                        message: "node '\(name)' could not be made again with \(values.keys.sorted().joined(separator: ", ")) changed (its plugin refused the values, or they would change its output format)"))
            }
            for playhead in run.playheads { playhead.discard(untilUtterance: next) }
            var ledger = spoken[name] ?? ReplyLedger()
            let cut = ledger.cut(resumingAt: next)
            // A new voice may speak another language: its sentences end by its rules.
            if case .string(let voice)? = values["voice"] { ledger.language = SentenceChunker.language(ofVoice: voice) }
            spoken[name] = ledger
            var fields: [String: any Sendable] = [
                "node": name, "heard": cut.heard.joined(separator: " "), "unheard": cut.unheard, "granularity": cut.granularity,
            ]
            if let partial = cut.partial { fields["partial"] = partial }
            if let partialHeard = cut.partialHeard { fields["partial-heard"] = partialHeard }
            if let partialWord = cut.partialWord { fields["partial-word"] = partialWord }
            return .success(fields)
        }
        if case .success(let fields) = outcome {
            counters.cancelled()
            events.emit("cancelled", fields)
        }
        return outcome
    }
}
