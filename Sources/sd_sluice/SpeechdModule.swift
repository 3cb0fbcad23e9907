import Foundation
import SluiceControl
import SluiceSpeechd
import Synchronization

/// The module side of speech-dispatcher's output-module protocol: commands on standard input
/// (INIT, AUDIO, SET, SPEAK, CHAR, KEY, SOUND_ICON, STOP, PAUSE, LIST VOICES, LOGLEVEL, DEBUG,
/// QUIT), numbered replies on standard output, and the events 701 BEGIN, 702 END, 703 STOP
/// and 704 PAUSE when the served graph's listener hears a message begin and end or it is cut.
///
/// Each message is spoken through `sluice serve`'s control socket; a `watch` connection tells
/// when its first utterance is heard and its last has ended.
final class SpeechdModule: @unchecked Sendable {
    // SAFETY (@unchecked Sendable): `settings`, `applied` and the configuration are the main
    // thread's; what the event thread shares with it is behind `state`'s mutex, and standard
    // output behind `output`'s.
    private let configuration: ModuleConfiguration
    private var settings = SpeechdSettings()
    private var applied: SpeechdSettings?
    /// The provider parameters last sent, and to which node of which type.
    private var appliedProvider: (node: String, type: String, parameters: [String: String])?
    private let output = Mutex<Void>(())
    private let state = Mutex(MessageState())

    /// The message being spoken: its utterance ids once the graph has queued them, and what
    /// the listener has heard of every utterance so far.
    private struct MessageState {
        var active = false
        var range: ClosedRange<Int>?
        var begun = false
        var started: Set<Int> = []
        var ended: Set<Int> = []
        /// The event thread follows the graph now (its `watch` was answered).
        var watching = false
    }

    init(configuration: ModuleConfiguration) {
        self.configuration = configuration
        settings.voice = configuration.defaultVoice
    }

    /// Runs the protocol until QUIT or the end of standard input; the exit status.
    func run() -> Int32 {
        guard readLine() == "INIT" else {
            FileHandle.standardError.write(Data("sd_sluice: speech-dispatcher did not start with INIT\n".utf8))
            return 1
        }
        do {
            let status = try request(["command": "status"])
            send("299-Sluice: graph '\(status["graph"] as? String ?? "?")' at \(configuration.socket)", "299 OK LOADED SUCCESSFULLY")
        } catch {
            send("399-\(error)", "399 ERR CANT INIT MODULE")
            return 1
        }
        startWatching()
        while let line = readLine() {
            switch line {
            case "SPEAK": speak(kind: .text)
            case "CHAR": speak(kind: .character)
            case "KEY": speak(kind: .key)
            case "SOUND_ICON": speak(kind: .soundIcon)
            case "STOP": stop(reporting: "703 STOP")
            case "PAUSE": stop(reporting: "704 PAUSE")
            case "SET": settingsBlock(ack: "203 OK RECEIVING SETTINGS", done: "203 OK SETTINGS RECEIVED") { self.settings.set($0, $1) }
            case "AUDIO": settingsBlock(ack: "207 OK RECEIVING AUDIO SETTINGS", done: "203 OK AUDIO INITIALIZED") { _, _ in true }
            case "LOGLEVEL": settingsBlock(ack: "207 OK RECEIVING LOGLEVEL SETTINGS", done: "203 OK LOGLEVEL SET") { _, _ in true }
            case "QUIT":
                send("210 OK QUIT")
                return 0
            default:
                if line.hasPrefix("LIST VOICES") {
                    listVoices()
                } else if line.hasPrefix("DEBUG") {
                    send("200 OK DEBUGGING \(line.contains("ON") ? "ON" : "OFF")")
                } else {
                    send("300 ERR UNKNOWN COMMAND")
                }
            }
        }
        return 0
    }

    // MARK: Commands

    enum MessageKind { case text, character, key, soundIcon }

    /// SPEAK and its kin: the message's lines up to ".", then 200 and the speech.
    private func speak(kind: MessageKind) {
        send("202 OK RECEIVING MESSAGE")
        var lines: [String] = []
        while let line = readLine(), line != "." {
            // A line starting with "." has it doubled, as in SMTP.
            lines.append(line.hasPrefix("..") ? String(line.dropFirst()) : line)
        }
        var text = SpeechdText.plain(lines.joined(separator: "\n")).trimmingCharacters(in: .whitespacesAndNewlines)
        switch kind {
        case .text: break
        case .character, .key: text = text == "space" ? "space" : text.replacingOccurrences(of: "_", with: " ")
        case .soundIcon: text = ""
        }
        guard !text.isEmpty else {
            // Nothing to say (an icon, white space): begun and ended at once.
            state.withLock { $0.active = false }
            send("200 OK SPEAKING", "701 BEGIN", "702 END")
            return
        }
        var speak: [String: Any] = ["command": "speak", "text": text]
        if let speaker = configuration.speaker { speak["node"] = speaker }
        // A message the control socket would refuse as one line is refused here, with
        // speechd's own code: never BEGIN and END for text that was not spoken.
        guard ControlJSON.encode(speak).utf8.count <= ControlJSON.maximumLineBytes else {
            FileHandle.standardError.write(Data("sd_sluice: a message of \(text.utf8.count) bytes is over the control socket's line limit; not spoken\n".utf8))
            send("301 ERROR CANT SPEAK")
            return
        }
        // Events of utterances queued before the watch follows the graph again (just after a
        // restart) would be lost, and the message never end: wait for it, briefly.
        for _ in 0..<40 where !state.withLock({ $0.watching }) { usleep(50_000) }
        guard state.withLock({ $0.watching }) else {
            FileHandle.standardError.write(Data("sd_sluice: no graph serves at \(configuration.socket); not spoken\n".utf8))
            send("301 ERROR CANT SPEAK")
            return
        }
        applySettings()
        state.withLock { $0 = MessageState(active: true, started: $0.started, ended: $0.ended, watching: $0.watching) }
        let reply: [String: Any]
        do {
            reply = try request(speak)
        } catch {
            FileHandle.standardError.write(Data("sd_sluice: \(error)\n".utf8))
            state.withLock { $0.active = false }
            send("301 ERROR CANT SPEAK")
            return
        }
        send("200 OK SPEAKING")
        let count = reply["count"] as? Int ?? 0
        let first = reply["first"] as? Int ?? 0
        guard count > 0 else {
            // Queued, but nothing in it to hear (punctuation alone): begun and ended at once.
            state.withLock { $0.active = false }
            send("701 BEGIN", "702 END")
            return
        }
        state.withLock { $0.range = first...(first + count - 1) }
        report()
    }

    /// STOP and PAUSE: the served graph barges in (a 5 ms fade); the message ends with `event`.
    private func stop(reporting event: String) {
        let active = state.withLock { state -> Bool in
            defer { state.active = false }
            return state.active
        }
        guard active else { return }
        _ = try? request(["command": "cancel"])
        send(event)
    }

    /// SET, AUDIO, LOGLEVEL: `name=value` lines up to "."; any refused value fails the block.
    private func settingsBlock(ack: String, done: String, _ set: (String, String) -> Bool) {
        send(ack)
        var accepted = true
        while let line = readLine(), line != "." {
            guard let equals = line.firstIndex(of: "=") else {
                accepted = false
                continue
            }
            if !set(String(line[..<equals]), String(line[line.index(after: equals)...])) { accepted = false }
        }
        send(accepted ? done : "303 ERROR INVALID PARAMETER OR VALUE")
    }

    /// The voices: espeak-ng's, by their language (as its own speech-dispatcher module does).
    private func listVoices() {
        var lines = EspeakVoices.list().map { "200-\($0.name)\t\($0.language)\tnone" }
        if lines.isEmpty { lines = ["200-\(configuration.defaultVoice)\t\(configuration.defaultVoice)\tnone"] }
        send(lines + ["200 OK VOICE LIST SENT"])
    }

    // MARK: The served graph

    /// The provider's parameters and the volume node's gain, when they changed since the last
    /// message: `configure` between messages (it would drop speech under way), `set` for gain.
    /// The settings are mapped to the speaking node's type (`SpeechdSettings.provider(for:)`),
    /// asked of the graph when a setting changed (not before every message: a screen reader's
    /// messages come one after another and each waits for this).
    private func applySettings() {
        if applied != settings || appliedProvider == nil {
            let graph = try? request(["command": "parameters"])
            let speakers = graph?["speakers"] as? [String] ?? []
            let node = configuration.speaker ?? speakers.first ?? "voice"
            // A graph that does not say its speakers' types is taken as espeak's.
            let type = (graph?["speaker-types"] as? [String: Any])?[node] as? String ?? "espeak"
            let parameters = settings.provider(for: type)
            if appliedProvider?.node != node || appliedProvider?.type != type || appliedProvider?.parameters != parameters {
                if !parameters.isEmpty { _ = try? request(["command": "configure", "node": node, "parameters": parameters]) }
                appliedProvider = (node, type, parameters)
            }
        }
        if let node = configuration.volumeNode, applied?.volume != settings.volume {
            _ = try? request(["command": "set", "node": node, "parameter": "gain", "value": settings.gain])
        }
        applied = settings
    }

    /// One request on a connection of its own; the reply's fields, or the refusal as an error.
    private func request(_ object: [String: Any]) throws -> [String: Any] {
        let line = ControlJSON.encode(object)
        let reply = try ControlClient.send(line, to: configuration.socket)
        let fields = try JSONSerialization.jsonObject(with: Data(reply.utf8)) as? [String: Any] ?? [:]
        if fields["ok"] as? Bool != true {
            let error = fields["error"] as? [String: Any]
            throw ControlError(code: error?["code"] as? String ?? "refused", message: error?["message"] as? String ?? reply)
        }
        return fields
    }

    /// Follows the graph's events on a thread of its own: utterances heard begin and end.
    /// When the served graph goes away (a restart, a crash) the message being spoken is
    /// stopped, and the thread connects again as soon as a graph serves at the socket, with
    /// its utterance numbers starting afresh.
    private func startWatching() {
        let socket = configuration.socket
        let thread = Thread { [self] in
            while true {
                var watching = false
                try? ControlClient.stream(ControlJSON.encode(["command": "watch"]), to: socket) { line in
                    guard let event = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return true }
                    if event["ok"] as? Bool == true, !watching {
                        // A new graph (or the first): what an earlier one heard means nothing now.
                        watching = true
                        state.withLock { $0.started = []; $0.ended = []; $0.watching = true }
                        return true
                    }
                    guard let name = event["event"] as? String, let id = event["utterance"] as? Int else { return true }
                    state.withLock { state in
                        if name == "utterance-started" { state.started.insert(id) }
                        if name == "utterance-ended" { state.ended.insert(id) }
                    }
                    report()
                    return true
                }
                // The graph went away: nothing more of the message will be heard; it was cut.
                let active = state.withLock { state -> Bool in
                    defer { state.active = false; state.watching = false }
                    return state.active
                }
                if active { send("703 STOP") }
                usleep(watching ? 50_000 : 250_000)
            }
        }
        thread.name = "sd_sluice-events"
        thread.start()
    }

    /// BEGIN once the message's first utterance is heard, END once its last has ended.
    private func report() {
        let (begin, end) = state.withLock { state -> (Bool, Bool) in
            guard state.active, let range = state.range else { return (false, false) }
            var begin = false
            if !state.begun && (state.started.contains(range.lowerBound) || state.ended.contains(range.upperBound)) {
                state.begun = true
                begin = true
            }
            let end = state.ended.contains(range.upperBound)
            if end {
                state.active = false
                state.started = state.started.filter { $0 > range.upperBound }
                state.ended = state.ended.filter { $0 > range.upperBound }
            }
            return (begin, end)
        }
        if begin { send("701 BEGIN") }
        if end { send("702 END") }
    }

    // MARK: Standard input and output

    private func readLine() -> String? {
        Swift.readLine(strippingNewline: true)
    }

    private func send(_ lines: String...) {
        send(lines)
    }

    private func send(_ lines: [String]) {
        output.withLock { _ in
            for line in lines { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
        }
    }
}
