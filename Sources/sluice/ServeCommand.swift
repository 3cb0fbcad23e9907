import ArgumentParser
import Foundation
import SluiceControl
import SluiceGraph
import SluiceJACK
import SluiceWeb
import Synchronization

struct ServeCommand: ParsableCommand, LoggingCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve", _superCommandName: SluiceCommand.name,
        abstract: "Keep a graph playing, its JACK client and ports up, and take commands while it plays.",
        discussion: """
            Commands come from any number of clients at once: `sluice ctl` or any program over \
            the JSON-lines socket ($XDG_RUNTIME_DIR/sluice/GRAPH.sock, mode 0600), and OSC tools \
            over UDP with --osc-port (on 127.0.0.1, where any local user can send to it; on \
            another address only with --osc-secret-file), and a browser with --http (a page that \
            shows and steers the graph, and /metrics; docs/web.md). Set a live \
            parameter, speak text through the graph's provider, pause and resume, ask for status, quit. A refused \
            command is answered with an error and the graph plays on. See docs/control.md.

            The graph runs until `quit`, Ctrl-C or its sources end (a text-driven source stays \
            open for more text until then). Exit status: 0 after quit or the end, 130 after Ctrl-C.
            """
    )


    @Argument(help: "A graph file, or a one-line graph in quotes.", completion: .file(extensions: ["yaml", "yml"]))
    var graph: String

    @Option(name: .long, help: "The control socket's path (default: $XDG_RUNTIME_DIR/sluice/<graph name>.sock).", completion: .file())
    var control: String?

    @Option(name: .customLong("osc-port"), help: "Also take OSC messages on this UDP port (0: any free port, printed).")
    var oscPort: Int?

    @Option(
        name: .customLong("osc-host"),
        help: "The address the OSC port listens on. On 127.0.0.1 any local user can send to it (UDP carries no sender); any other address needs --osc-secret-file.")
    var oscHost = "127.0.0.1"

    @Option(
        name: .customLong("osc-secret-file"), help: ArgumentHelp(
            "A file (yours, not readable by others) whose first line every OSC message must carry as its first argument; messages without it get no reply.",
            valueName: "file"),
        completion: .file())
    var oscSecretFile: String?

    @Option(
        name: .customLong("http"),
        help: ArgumentHelp(
            "Also serve a page that shows and steers the graph, and /metrics for Prometheus, at [ADDRESS:]PORT (127.0.0.1 unless given; port 0: any free port, printed). Any address but loopback needs --http-token-file.",
            valueName: "[address:]port"))
    var http: String?

    @Option(
        name: .customLong("http-token-file"), help: ArgumentHelp(
            "A file (yours, not readable by others) whose first line every HTTP request must carry (Authorization: Bearer, or ?token= in the address).",
            valueName: "file"),
        completion: .file())
    var httpTokenFile: String?

    @Option(
        name: .customLong("idle-timeout"),
        help: ArgumentHelp("Close a control connection that does not watch, or an HTTP connection that is no WebSocket, when it sends nothing for this long (0.1…3600 s).", valueName: "seconds"))
    var idleTimeout = ControlSocketServer.defaultIdleLimit

    @Option(name: .long, help: "The JACK server for jack.sink nodes that name none (default: $JACK_DEFAULT_SERVER, then \"default\").")
    var server: String?

    @Option(name: .long, help: "Print the run's timings and counters at the end: json.")
    var stats: StatsFormat?

    @Flag(name: .long, help: "Reload the graph file when it changes (as `sluice ctl reload` and SIGHUP do): changed live parameters apply, ramped; a file that does not check is refused and the graph plays on.")
    var watch = false

    @OptionGroup var failures: FailureOptions

    @OptionGroup var plugins: PluginOptions

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        guard (0.1...3_600).contains(idleTimeout) else { throw ValidationError("--idle-timeout takes 0.1…3600 seconds, not \(idleTimeout)") }
        if let oscPort, !(0...65_535).contains(oscPort) {
            throw ValidationError("--osc-port takes 0…65535, not \(oscPort)")
        }
        if let http { _ = try Self.httpAddress(http) }
        if httpTokenFile != nil && http == nil { throw ValidationError("--http-token-file needs --http") }
        if watch && !FileManager.default.fileExists(atPath: graph) {
            throw ValidationError("--watch needs a graph file; '\(graph)' is not one")
        }
    }

    /// `--http`'s address and port: `PORT`, `ADDRESS:PORT` or `[IPV6]:PORT`.
    static func httpAddress(_ given: String) throws(ValidationError) -> (host: String, port: Int) {
        var host = "127.0.0.1"
        var portText = Substring(given)
        if given.hasPrefix("["), let close = given.firstIndex(of: "]") {
            host = String(given[given.index(after: given.startIndex)..<close])
            portText = given[given.index(after: close)...].dropFirst()
            guard given[given.index(after: close)...].first == ":" else {
                throw ValidationError("--http takes [address:]port, like 8080 or 127.0.0.1:8080 or [::1]:8080; not '\(given)'")
            }
        } else if let colon = given.lastIndex(of: ":") {
            host = String(given[..<colon])
            portText = given[given.index(after: colon)...]
        }
        guard !host.isEmpty, portText.count <= 5, let port = Int(portText), (0...65_535).contains(port) else {
            throw ValidationError("--http takes [address:]port with a port in 0…65535, like 8080 or 127.0.0.1:8080; not '\(given)'")
        }
        return (host, port)
    }

    func run() throws {
        let compiled = try GraphLoading.compile(
            graph, options: .init(isLive: true), server: server, trustGraphFolder: plugins.trustGraphFolder)
        let live = try LiveRun(graph: compiled)
        live.marksGapsBetweenReplies()
        let devices = compiled.devices.compactMap { $0 as? JackDevice }
        let served = ServedGraph(
            graph: compiled, run: live,
            extraStatus: { ["jackClients": devices.compactMap(\.lastClientName)] },
            xruns: { devices.map(\.xruns).reduce(0, +) },
            quit: {
                for source in compiled.textSources { source.finishText() }
                live.cancel()
            },
            readGraph: readGraph(rate: live.playheads.first?.sampleRate))
        let interrupt = InterruptHandler { live.cancel() }
        defer { interrupt.stop() }
        // SIGHUP and --watch reload as `ctl reload` does; the outcome goes to standard error.
        let reloads = ReloadTriggers(watching: watch ? graph : nil) { why in
            switch served.handle(.reload) {
            case .success(let fields):
                let changes = (fields["changes"] as? [[String: any Sendable]]) ?? []
                let listed = changes.map { "\($0["node"] ?? "").\($0["parameter"] ?? "") = \($0["value"] ?? "")" }
                printError("reloaded (\(why)): " + (listed.isEmpty ? "nothing changed" : listed.joined(separator: ", ")))
            case .failure(let error):
                printError("reload refused (\(why)), the graph plays on: \(error.message)")
            }
        }
        defer { reloads.stop() }

        let report: RunReport
        do {
            let socketPath = try control ?? ControlSocketServer.defaultPath(graph: compiled.description.name)
            let socket = try ControlSocketServer(path: socketPath, idleLimit: idleTimeout) { line, connection in
                let (request, id) = ControlJSON.parse(line)
                let command = try? request.get().name
                return ControlJSON.reply(request.flatMap { served.handle($0, on: connection) }, command: command, id: id)
            }
            defer { socket.stop() }
            var osc: OSCServer?
            if let oscPort {
                let secret = try oscSecretFile.map { file throws(ControlError) in try SecretFile.read(file) }
                osc = try OSCServer(host: oscHost, port: oscPort, secret: secret) { served.handle($0, waitForPeriod: false) }
                if let osc { served.events.add(osc.subscriptions) }
            }
            defer { osc?.stop() }
            var web: WebServer?
            if let http {
                let (host, port) = try Self.httpAddress(http)
                let token = try httpTokenFile.map { file throws(ControlError) in try SecretFile.read(file) }
                // Per device, the callbacks already counted.
                let seen = Mutex([Int](repeating: 0, count: devices.count))
                let metrics = ServedMetrics(
                    counters: served.counters,
                    sources: .init(
                        status: { served.status },
                        callbackDurations: {
                            seen.withLock { seen in
                                devices.indices.flatMap { index in
                                    let (durations, count) = devices[index].callbackDurations(after: seen[index])
                                    seen[index] = count
                                    return durations
                                }
                            }
                        },
                        linkDrops: { served.linkDrops },
                        providerErrors: { served.sourceFailures }))
                web = try WebServer(host: host, port: port, token: token, idleLimit: idleTimeout, served: served, metrics: metrics)
            }
            defer { web?.stop() }

            try live.start()
            var ready = "serving '\(compiled.description.name)': control socket \(socket.path)"
            if let osc { ready += ", OSC udp://\(osc.host):\(osc.port)" }
            if let web { ready += ", page http://\(web.host.contains(":") ? "[\(web.host)]" : web.host):\(web.port)/" }
            printError(ready)
            report = try live.wait()
        } catch let error as ControlError {
            printError("error: \(error.message)")
            throw ExitCode(1)
        } catch {
            printError("error: \(error)")
            throw ExitCode(1)
        }
        if stats == .json { try StatsOutput.print(report, extra: LivePlayback.jackFigures(compiled)) }
        // A quit ends the run by cancelling it, as Ctrl-C does, but it is the way out asked for.
        var ended = report
        if served.isQuitting && !interrupt.interrupted { ended.cancelled = false }
        try failures.finish(ended)
    }

    /// How `reload` reads the graph file again: checked as `sluice check` checks it, at the
    /// running graph's rate, making no JACK client. Nil for a one-line graph.
    private func readGraph(rate: Int?) -> (@Sendable () -> Result<CompiledGraph, ControlError>)? {
        guard FileManager.default.fileExists(atPath: graph) else { return nil }
        let (graph, server, trust) = (graph, server, plugins.trustGraphFolder)
        return {
            do {
                return .success(try GraphLoading.checked(
                    graph, options: .init(isLive: false, deviceRate: rate), server: server, trustGraphFolder: trust))
            } catch let diagnostics as GraphDiagnostics {
                return .failure(ControlError(code: "does-not-check", message: diagnostics.description))
            } catch {
                return .failure(ControlError(code: "does-not-check", message: "\(error)"))
            }
        }
    }
}

struct CtlCommand: ParsableCommand, LoggingCommand {
    static let configuration = CommandConfiguration(
        commandName: "ctl", _superCommandName: SluiceCommand.name,
        abstract: "Send a command to a graph that `sluice serve` runs, and print its reply.",
        discussion: """
            sluice ctl set gain gain 0.5        # node, parameter, value
            sluice ctl speak "Hello." [--node voice] [--interrupt]
            sluice ctl cancel                   # barge-in: prints what was heard
            sluice ctl configure voice rate=220 voice=en-us
            sluice ctl watch [--levels]         # events, a line each, until the graph ends
            sluice ctl connect out_1 system:playback_1    # or disconnect
            sluice ctl reload                   # read the graph file again: changed live parameters apply
            sluice ctl save-state eq eq-state   # an lv2 node's state into a folder, for `state:`
            sluice ctl status | parameters | pause | resume | quit
            sluice ctl --json '{"command":"status"}'

            The reply is one line of JSON on standard output. Exit status 0 when the graph \
            accepted the command, 1 when it refused it (the reply says why), 2 on a usage error.
            """
    )


    @Option(name: .long, help: "The control socket (default: the one `sluice serve` uses for --graph).", completion: .file())
    var socket: String?

    @Option(name: .customLong("graph"), help: "The served graph's name, to find its default socket.")
    var graphName: String?

    @Option(name: .long, help: "For speak: the text-driven node to speak through.")
    var node: String?

    @Flag(name: .long, help: "For speak: speak instead of what plays and is queued (barge-in), not after it.")
    var interrupt = false

    @Option(name: .long, help: "For set: the node's output frame to apply the change at (a frame an earlier set replied with says where it is).")
    var at: Int?

    @Flag(name: .long, help: "For speak: a piece of a reply still coming; its unfinished sentence waits for the next piece.")
    var more = false

    @Flag(name: .long, help: "For watch: also the output's peak level, about ten times a second.")
    var levels = false

    @Option(name: .long, help: "Send this JSON request line as it is.")
    var json: String?

    @Argument(parsing: .allUnrecognized, help: "set NODE PARAMETER VALUE | speak TEXT | cancel | configure NODE NAME=VALUE… | watch | connect PORT PORT | disconnect PORT PORT | status | parameters | pause | resume | reload | save-state NODE FOLDER | quit")
    var words: [String] = []

    @OptionGroup var logging: LoggingOptions

    func run() throws {
        let line = try requestLine()
        // Nothing served (or a name that cannot be a socket) is a failure to reach the graph,
        // exit 1 as with --socket, not a usage error.
        let path: String
        do {
            path = try socket ?? ControlSocketServer.defaultPath(graph: servedGraphName())
        } catch let error as ControlError {
            printError("error: \(error.message)")
            throw ExitCode(1)
        } catch let error as NotServing {
            printError("error: \(error.message)")
            throw ExitCode(1)
        }
        if words.first == "watch" {
            // The reply, then every event, until the graph ends (or Ctrl-C).
            var accepted = true
            do {
                try ControlClient.stream(line, to: path) { text in
                    // Unbuffered: each event reaches a pipe as it happens.
                    FileHandle.standardOutput.write(Data((text + "\n").utf8))
                    if accepted, text.contains(#""ok":false"#) { accepted = false }
                    return accepted
                }
            } catch {
                printError("error: \(error.message)")
                throw ExitCode(1)
            }
            if !accepted { throw ExitCode(1) }
            return
        }
        let reply: String
        do {
            reply = try ControlClient.send(line, to: path)
        } catch {
            printError("error: \(error.message)")
            throw ExitCode(1)
        }
        print(reply)
        let ok = (try? JSONSerialization.jsonObject(with: Data(reply.utf8)) as? [String: Any])?["ok"] as? Bool
        if ok != true { throw ExitCode(1) }
    }

    private func requestLine() throws -> String {
        if let json {
            guard words.isEmpty else { throw ValidationError("give either --json or a command, not both") }
            return json
        }
        guard let command = words.first else {
            throw ValidationError("name a command: set, speak, cancel, configure, watch, connect, disconnect, status, parameters, pause, resume, reload, save-state or quit")
        }
        var object: [String: Any] = ["command": command]
        switch command {
        case "set":
            guard words.count == 4, let value = Double(words[3]) else {
                throw ValidationError("usage: sluice ctl set NODE PARAMETER VALUE (a number)")
            }
            object["node"] = words[1]
            object["parameter"] = words[2]
            object["value"] = value
            if let at { object["at"] = at }
        case "configure":
            guard words.count >= 3 else { throw ValidationError("usage: sluice ctl configure NODE NAME=VALUE …") }
            object["node"] = words[1]
            var parameters: [String: String] = [:]
            for assignment in words.dropFirst(2) {
                guard let equals = assignment.firstIndex(of: "="), equals != assignment.startIndex else {
                    throw ValidationError("'\(assignment)' is not NAME=VALUE")
                }
                parameters[String(assignment[..<equals])] = String(assignment[assignment.index(after: equals)...])
            }
            object["parameters"] = parameters
        case "connect", "disconnect":
            guard words.count == 3 else { throw ValidationError("usage: sluice ctl \(command) PORT PORT (one of the graph's, by its short name, and any other)") }
            object["from"] = words[1]
            object["to"] = words[2]
        case "watch":
            guard words.count == 1 else { throw ValidationError("'watch' takes no arguments (--levels adds levels)") }
            object["levels"] = levels
        case "save-state":
            guard words.count == 3 else { throw ValidationError("usage: sluice ctl save-state NODE FOLDER") }
            object["node"] = words[1]
            // The server writes it: a relative folder is the caller's, made absolute here.
            object["path"] = words[2].hasPrefix("/") ? words[2] : FileManager.default.currentDirectoryPath + "/" + words[2]
        case "speak":
            guard words.count >= 2 else { throw ValidationError("usage: sluice ctl speak TEXT [--node NODE]") }
            object["text"] = words.dropFirst().joined(separator: " ")
            if let node { object["node"] = node }
            if interrupt { object["policy"] = "interrupt" }
            if more { object["more"] = true }
        default:
            guard words.count == 1 else { throw ValidationError("'\(command)' takes no arguments") }
        }
        return ControlJSON.encode(object)
    }

    /// The graph's name: --graph, or the only socket in the default folder.
    private func servedGraphName() throws -> String {
        if let graphName { return graphName }
        let folder = ControlSocketServer.defaultFolder
        let sockets = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { $0.hasSuffix(".sock") }
        guard !sockets.isEmpty else {
            throw NotServing(message: "no served graph found in \(folder): start one with `sluice serve GRAPH`, or give --socket")
        }
        guard sockets.count == 1 else {
            throw ValidationError("several graphs are served (\(sockets.sorted().joined(separator: ", "))): give --graph NAME or --socket")
        }
        return String(sockets[0].dropLast(".sock".count))
    }
}

/// `sluice ctl` found no served graph to talk to: exit 1, as when its socket does not answer.
struct NotServing: Error {
    var message: String
}
