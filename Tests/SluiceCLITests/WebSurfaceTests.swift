import Foundation
import JackTestSupport
import SluiceTestSupport
import Testing

/// `sluice serve --http` against a real JACK server: the page and its API as a browser and
/// a scraper use them, commands over the WebSocket heard in a JACK recording, `/metrics` read
/// by Prometheus' own parser (Python's prometheus_client), and hostile parties: another
/// site's page, a rebinding Host, a page that stops reading.
@Suite(.serialized, .timeLimit(.minutes(3))) struct WebSurfaceTests {
    private let serve = ServeCommandTests()

    /// `http://127.0.0.1:PORT` from serve's ready line.
    func pageAddress(_ ready: String) throws -> (address: String, port: Int) {
        let range = try #require(ready.range(of: #"http://127\.0\.0\.1:[0-9]+"#, options: .regularExpression), "no page in: \(ready)")
        let address = String(ready[range])
        return (address, try #require(Int(address.split(separator: ":").last!)))
    }

    @Test("the page's API, a set over the WebSocket heard from the frame its reply states, /metrics counting it")
    func pageAndWebSocket() throws {
        try serve.withoutXruns { attempt in try steerOverWebSocket(attempt: attempt) }
    }

    private func steerOverWebSocket(attempt: Int) throws -> (problems: [String], xruns: Int) {
        let (recorder, served, ready) = try serve.servedTone("web", attempt: attempt, extra: ["--http", "0"])
        defer { recorder.stop() }
        let (_, port) = try pageAddress(ready)

        // The graph as the page draws it: the file's nodes and links.
        let graph = try RawHTTP.get("/api/graph", port: port)
        #expect(graph.status == 200)
        let shape = try #require(try JSONSerialization.jsonObject(with: Data(graph.body.utf8)) as? [String: Any])
        let nodes = (shape["nodes"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
        #expect(nodes == ["tone", "level", "out"])
        let links = (shape["links"] as? [[String: Any]] ?? []).map { "\($0["from"] ?? "")->\($0["to"] ?? "")" }
        #expect(links == ["tone->level", "level->out"])
        let level = (shape["nodes"] as? [[String: Any]])?.first { $0["name"] as? String == "level" }
        let gain = (level?["parameters"] as? [[String: Any]])?.first { $0["name"] as? String == "gain" }
        #expect(gain?["value"] as? Double == 1 && gain?["maximum"] != nil, "\(String(describing: gain))")
        let page = try RawHTTP.get("/", port: port)
        #expect(page.status == 200 && page.body.contains("<script src=\"sluice.js\""))
        #expect(page.headers["x-frame-options"] == "DENY")

        let socket = try RawWebSocket(port: port)
        let hello = try #require(socket.receive(timeout: 5))
        #expect(hello.contains(#""event":"hello""#), "\(hello)")
        let refused = try socket.request(#"{"command":"set","node":"nope","parameter":"gain","value":0.5,"id":1}"#)
        #expect((refused["error"] as? [String: Any])?["code"] as? String == "unknown-node" && refused["id"] as? Int == 1, "\(refused)")
        let notJSON = try socket.request("set gain please")
        #expect((notJSON["error"] as? [String: Any])?["code"] as? String == "bad-json", "\(notJSON)")
        let set = try socket.request(#"{"command":"set","node":"level","parameter":"gain","value":0.25,"id":"g"}"#)
        #expect(set["ok"] as? Bool == true && set["id"] as? String == "g", "\(set)")
        let frame = try #require(set["frame"] as? Int, "no frame in \(set)")

        // Levels (with the sink's buffer and each buffered link's fill) only while asked for.
        let capacities = Dictionary(
            (shape["links"] as? [[String: Any]] ?? []).compactMap { link in
                (link["capacity"] as? Double).map { (link["name"] as? String ?? "", $0) }
            }, uniquingKeysWith: { $1 })
        #expect(capacities["level.out -> out.in"] != nil, "the sink's link has a buffer: \(capacities)")
        let quiet = try socket.request(#"{"command":"watch","levels":false}"#)
        #expect(quiet["levels"] as? Bool == false, "\(quiet)")
        // (One event on its way as the reply was written may still come.)
        _ = socket.events(for: 0.15)
        let unasked = socket.events(for: 0.5).filter { $0["event"] as? String == "level" }
        #expect(unasked.isEmpty, "\(unasked.count) level events after levels were turned off")
        _ = try socket.request(#"{"command":"watch","levels":true}"#)
        let levels = socket.events(for: 1).filter { $0["event"] as? String == "level" }
        #expect((4...15).contains(levels.count), "\(levels.count) level events in a second, ten a second asked")
        if let last = levels.last {
            let held = last["links"] as? [String: Double] ?? [:]
            #expect(!held.isEmpty && held.allSatisfy { name, seconds in (capacities[name].map { seconds >= 0 && seconds <= $0 } ?? false) }, "\(last)")
            #expect((last["buffered"] as? Double ?? -1) >= 0, "\(last)")
        }

        // The run so far, drawn as --timeline draws a run: first audio is on it.
        var picture: SVGPicture?
        let drawnBy = Date().addingTimeInterval(8)
        while Date() < drawnBy {
            let timeline = try RawHTTP.get("/timeline.svg", port: port)
            #expect(timeline.status == 200 && timeline.headers["content-type"] == "image/svg+xml", "\(timeline.status)")
            picture = try SVGPicture(data: Data(timeline.body.utf8), name: "timeline.svg")
            if picture?.elements(class: "first-audio").isEmpty == false { break }
            usleep(300_000)
        }
        #expect(picture?.elements(class: "first-audio").count == 1, "\(picture?.classes ?? [])")
        #expect(picture?.elements(class: "buffer-fill").count == 1)

        // Prometheus' own parser reads /metrics; the counters are the requests just made.
        let metrics = try RawHTTP.get("/metrics", port: port)
        #expect(metrics.headers["content-type"]?.hasPrefix("text/plain; version=0.0.4") == true)
        let parsed = try PrometheusText.parse(metrics.body)
        #expect(parsed[#"sluice_control_requests_total{command="set",result="ok"}"#] == 1, "\(parsed)")
        #expect(parsed[#"sluice_control_requests_total{command="set",result="unknown-node"}"#] == 1)
        #expect((parsed["sluice_callback_seconds_count"] ?? 0) > 0)
        let status = try serve.withStatus(served)
        #expect(parsed["sluice_underruns_total"] == Double(status["underruns"] as? Int ?? -1))
        #expect((parsed["sluice_xruns_total"] ?? .infinity) <= Double(status["xruns"] as? Int ?? -1))

        usleep(UInt32(((status["bufferedSeconds"] as? Double ?? 0.5) + 0.6) * 1e6))
        return try quitAndHear(served, recorder, changeAt: frame, to: 0.25)
    }

    /// Quits `served` and checks that `recorder` heard the tone at full level, then a ramp at
    /// `frame` to `level` (the fader's 10 ms), held for a tenth of a second.
    private func quitAndHear(
        _ served: ServeCommandTests.Served, _ recorder: JackRecorder, changeAt frame: Int, to level: Double
    ) throws -> (problems: [String], xruns: Int) {
        _ = try served.ctl(["quit"])
        #expect(served.wait() == 0)
        recorder.stop()
        let samples = recorder.samples(channel: 0)
        let first = try #require(samples.firstIndex { $0 != 0 }) - 1
        guard samples.count - first > frame + 480 + ServeCommandTests.rate / 10 else {
            return (["the recording ends before the change"], recorder.xruns)
        }
        return (serve.levelProblems(samples, first: first, at: frame, from: 1, to: level, rampFrames: 480), recorder.xruns)
    }

    @Test("another site's page, a rebinding Host and a page that stops reading get nothing from the graph")
    func hostileParties() throws {
        let (recorder, served, ready) = try serve.servedTone("web-hostile", attempt: 1, extra: ["--http", "0", "--idle-timeout", "1"])
        defer { recorder.stop() }
        let (_, port) = try pageAddress(ready)

        // A connection that says nothing is closed after --idle-timeout; a WebSocket is not.
        let started = Date()
        let silent = try TCPClient(port: port)
        let quietPage = try RawWebSocket(port: port)
        #expect(silent.readResponse(timeout: 5).isEmpty)
        // Closed a second after it opened (the clock here starts a little before the server's).
        #expect((0.95...4).contains(Date().timeIntervalSince(started)), "the silent connection lasted \(Date().timeIntervalSince(started)) s")
        usleep(500_000)
        #expect(try quietPage.request(#"{"command":"status"}"#)["ok"] as? Bool == true)

        let rebound = try RawHTTP.get("/api/status", port: port, host: "attacker.example:\(port)")
        #expect(rebound.status == 403 && rebound.body.contains("answers only to 127.0.0.1"), "\(rebound)")
        let crossSite = try RawHTTP.get("/ws", port: port, extraHeaders: RawWebSocket.upgradeHeaders + ["Origin: http://attacker.example"])
        #expect(crossSite.status == 403 && crossSite.body.contains("may not use this surface"), "\(crossSite)")
        let post = try RawHTTP.request("POST /api/status HTTP/1.1", port: port)
        #expect(post.status == 405)
        let missing = try RawHTTP.get("/../../etc/passwd", port: port)
        #expect(missing.status == 404)

        // Malformed and extreme requests over the WebSocket are answered as on the socket.
        let page = try RawWebSocket(port: port)
        _ = page.receive(timeout: 5)
        let huge = try page.request(#"{"command":"set","node":"level","parameter":"gain","value":1e300}"#)
        #expect((huge["error"] as? [String: Any])?["code"] as? String == "out-of-range", "\(huge)")
        let truncated = try page.request(#"{"command":"set","node":"lev"#)
        #expect((truncated["error"] as? [String: Any])?["code"] as? String == "bad-json", "\(truncated)")
        page.send(opcode: 2, [0xFF, 0x00])
        let binary = try #require(page.receive(timeout: 5))
        #expect(binary.contains(#""code":"bad-json""#), "\(binary)")
        // A message past 64 KiB closes that connection (the control socket's line limit), and
        // only it.
        page.sendText(#"{"command":"speak","text":""# + String(repeating: "a", count: 70_000) + #""}"#)
        let deadline = Date().addingTimeInterval(5)
        var closed = false
        while Date() < deadline && !closed {
            closed = page.receive(timeout: 0.2) == nil && !page.isOpen
        }
        #expect(closed, "a 70 000-byte message did not close its connection")

        // A page that sends and never reads: its requests pile up until its own socket is
        // full, and it is not read from after that; the graph and other pages do not wait.
        let stalled = try RawWebSocket(port: port, receiveBuffer: 4096)
        let flooded = 50_000
        let flood = Thread {
            for index in 0..<flooded where !stalled.sendText(#"{"command":"parameters","id":\#(index)}"#) { return }
        }
        flood.start()
        let other = try RawWebSocket(port: port)
        _ = other.receive(timeout: 5)
        for index in 0..<20 {
            let started = Date()
            let reply = try other.request(#"{"command":"status","id":\#(index)}"#)
            #expect(reply["ok"] as? Bool == true)
            #expect(Date().timeIntervalSince(started) < 2, "a status took \(Date().timeIntervalSince(started)) s beside a stalled page")
            usleep(50_000)
        }
        let status = try serve.withStatus(served)
        #expect(status["underruns"] as? Int == 0, "\(status)")
        // The flood is not all taken in: once the stalled page's replies fill its socket (how
        // many that takes depends on the kernel's buffers, megabytes), its requests stay in
        // it and the count stops growing, short of the flood.
        func taken() throws -> Double {
            let metrics = try PrometheusText.parse(try RawHTTP.get("/metrics", port: port).body)
            return metrics[#"sluice_control_requests_total{command="parameters",result="ok"}"#] ?? 0
        }
        var counts = [try taken()]
        let settled = Date().addingTimeInterval(20)
        while Date() < settled && (counts.count < 2 || counts[counts.count - 1] != counts[counts.count - 2]) {
            usleep(500_000)
            counts.append(try taken())
        }
        #expect(counts.count >= 2 && counts[counts.count - 1] == counts[counts.count - 2] && counts.last! < Double(flooded),
                "the stalled page's requests carried out, half a second apart: \(counts) of \(flooded)")
        stalled.close()
        _ = try served.ctl(["quit"])
        #expect(served.wait() == 0)
    }

    @Test("in Chromium: the drawn graph is the file's, the meters move, the slider is heard from the frame the page shows")
    func sliderInABrowser() throws {
        try serve.withoutXruns { attempt in try moveTheSlider(attempt: attempt) }
    }

    private func moveTheSlider(attempt: Int) throws -> (problems: [String], xruns: Int) {
        // The browser first: its start is the heaviest part, before anything is recorded.
        let browser = try WebDriver()
        let (recorder, served, ready) = try serve.servedTone("web-slider", attempt: attempt, extra: ["--http", "0"])
        defer { recorder.stop() }
        let (address, _) = try pageAddress(ready)
        try browser.open(address + "/")
        _ = try browser.wait(for: "return document.body.dataset.ready === 'true' && document.getElementById('connection').classList.contains('open')")
        var problems: [String] = []
        let drawn = try browser.run("return [...document.querySelectorAll('#graph [data-node]')].map(n => n.dataset.node)") as? [String]
        if drawn != ["tone", "level", "out"] { problems.append("the page drew \(String(describing: drawn))") }
        // The tone (amplitude 0.5) moves the output meter.
        let moving = try browser.wait(for: "const v = document.getElementById('level-out').value; return v > 0.4 ? v : null")
        if let level = moving as? Double, abs(level - ServeCommandTests.amplitude) > 0.01 { problems.append("the meter read \(level)") }
        let artifacts = CommandRunner.productsFolder.deletingLastPathComponent().appendingPathComponent("test-artifacts")
        try FileManager.default.createDirectory(at: artifacts, withIntermediateDirectories: true)
        // Each buffered link's fill drawn, and the timeline's picture loaded.
        let fills = try browser.wait(for: "const f = [...document.querySelectorAll('#graph .fill')]; return f.length > 0 && f.every(b => b.dataset.held !== undefined) ? f.length : null")
        if (fills as? Int ?? 0) < 1 { problems.append("no link fill drawn: \(fills)") }
        let timeline = try browser.wait(for: "const t = document.getElementById('timeline'); return t.complete && t.naturalWidth > 0 ? t.naturalWidth : null")
        if timeline as? Int != 960 { problems.append("the timeline is \(timeline) wide") }
        try browser.screenshot(to: artifacts.appendingPathComponent("web-page.png"))

        // Home on the fader's gain slider: the key a user presses, to its minimum, 0.
        let slider = try browser.element(#"input[data-node="level"][data-parameter="gain"]"#)
        try browser.type("\u{E011}", into: slider)
        let shown = try browser.wait(for: "return document.querySelector('[data-applied=\"level/gain\"]').dataset.frame ?? null")
        let frame = try #require((shown as? String).flatMap { Int($0) }, "the page showed no frame: \(shown)")
        // The meter falls to silence once the change is heard (after the sink's buffer).
        do {
            _ = try browser.wait(for: "return document.getElementById('level-out').value === 0", timeout: 5)
        } catch {
            problems.append("the output meter still reads \(String(describing: try? browser.run("return document.getElementById('level-out').value")))")
        }
        let heard = try quitAndHear(served, recorder, changeAt: frame, to: 0)
        return (problems + heard.problems, heard.xruns)
    }

    @Test("in Chromium: an LV2 enumeration is a choice of its named values; choosing one states its frame")
    func choiceInABrowser() throws {
        let browser = try WebDriver()
        let server = try JackTestServer.shared()
        let folder = TemporaryFolder()
        let graph = try folder.write(
            """
            name: web-choice
            nodes:
              tone: { type: tone, frequency: 440, amplitude: 0.5, duration: 60 }
              stereo: { type: channel-map, channels: 2 }
              balance: { type: lv2, uri: "http://gareus.org/oss/lv2/balance" }
              out: { type: jack.sink, client: web-choice-\(getpid()), connect: none }
            links: [tone -> stereo -> balance -> out]
            playback: { max-buffered: 0.5 }
            """, to: "choice.yaml")
        let served = try ServeCommandTests.Served(
            graph: graph, socket: folder.file("control.sock").path, server: server.name, extra: ["--http", "0"])
        let ready = try #require(served.readyLine(), "serve never said it was serving")
        let (address, port) = try pageAddress(ready)
        try browser.open(address + "/")
        _ = try browser.wait(for: "return document.getElementById('connection').classList.contains('open')")
        let select = #"select[data-node="balance"][data-parameter="unitygain"]"#
        let labels = try browser.run("return [...document.querySelectorAll('\(select) option')].map(o => o.textContent)") as? [String]
        #expect(labels == ["Balance", "Unity Gain - Equal Amplitude", "Seesaw - Equal Power"])
        #expect(try browser.run("return document.querySelector('\(select)').value") as? String == "0")
        try browser.click(try browser.element(select + #" option[value="2"]"#))
        let shown = try browser.wait(for: "return document.querySelector('[data-applied=\"balance/unitygain\"]').dataset.frame ?? null")
        #expect((shown as? String).flatMap { Int($0) } != nil, "the page showed no frame: \(shown)")
        // The graph holds the value chosen: a page loaded now shows it.
        let shape = try JSONSerialization.jsonObject(with: Data(try RawHTTP.get("/api/graph", port: port).body.utf8)) as? [String: Any]
        let node = (shape?["nodes"] as? [[String: Any]])?.first { $0["name"] as? String == "balance" }
        let unity = (node?["parameters"] as? [[String: Any]])?.first { $0["name"] as? String == "unitygain" }
        #expect(unity?["value"] as? Double == 2, "\(String(describing: unity))")
        _ = try served.ctl(["quit"])
        #expect(served.wait() == 0)
    }

    @Test("a provider's typed error reaches the page as provider-error, /metrics counts it by code, and the served graph goes on: the next reply is spoken")
    func providerErrorCounted() throws {
        let server = try JackTestServer.shared()
        let folder = TemporaryFolder()
        // The test provider fails once it has given 32 000 bytes (a second): that second plays
        // out with a fade, and the provider, made anew, speaks the next reply.
        let served = try ServeCommandTests.servedTestPCM(
            in: folder, voice: "{ type: test-pcm, fail-after: 32000 }", client: "web-failing-\(getpid())", server: server.name,
            extra: ["--http", "0"])
        let ready = try #require(served.readyLine(), "serve never said it was serving")
        let (_, port) = try pageAddress(ready)
        let page = try RawWebSocket(port: port)
        _ = page.receive(timeout: 5)
        let speak = try page.request(#"{"command":"speak","text":"\#(String(repeating: "A sentence of some length to speak. ", count: 20))"}"#)
        #expect(speak["ok"] as? Bool == true, "\(speak)")
        var failure: [String: Any]?
        let deadline = Date().addingTimeInterval(15)
        while failure == nil && Date() < deadline {
            failure = page.events(for: 0.2).first { $0["event"] as? String == "provider-error" }
        }
        let reported = try #require(failure, "no provider-error event")
        #expect(reported["node"] as? String == "voice" && reported["code"] as? String == "test-failure", "\(reported)")
        #expect((reported["message"] as? String)?.contains("failed after") == true, "\(reported)")
        #expect(reported["recovered"] as? Bool == true, "\(reported)")
        let metrics = try PrometheusText.parse(try RawHTTP.get("/metrics", port: port).body)
        #expect(metrics[#"sluice_provider_errors_total{code="test-failure",node="voice"}"#] == 1, "\(metrics.keys.sorted())")
        // The graph goes on: the provider, made anew, speaks the next reply, which is heard.
        let again = try page.request(#"{"command":"speak","text":"Again."}"#)
        #expect(again["ok"] as? Bool == true, "\(again)")
        var heardAgain = false
        let heardBy = Date().addingTimeInterval(15)
        while !heardAgain && Date() < heardBy {
            heardAgain = page.events(for: 0.2).contains { $0["event"] as? String == "utterance-ended" && $0["text"] as? String == "Again." }
        }
        #expect(heardAgain, "the reply after the failure was not heard to its end")
        #expect(try served.ctl(["quit"]).status == 0)
        #expect(served.wait() == 0)
    }

    @Test("in Chromium: text typed in the speak box is heard, its heard text shown, and cancel fades it out")
    func speakBoxInABrowser() throws {
        try serve.withoutXruns { attempt in try speakAndCancel(attempt: attempt) }
    }

    private func speakAndCancel(attempt: Int) throws -> (problems: [String], xruns: Int) {
        let browser = try WebDriver()
        let server = try JackTestServer.shared()
        let recorder = try JackRecorder(
            server: server.name, clientName: "web-speak-ear-\(getpid())-\(attempt)", channels: 2, capacityFrames: 30 * ServeCommandTests.rate)
        defer { recorder.stop() }
        try recorder.start()
        let folder = TemporaryFolder()
        let served = try ServeCommandTests.Served(
            graph: try serve.speechGraph(in: folder, client: "web-speak-\(getpid())-\(attempt)", recorder: recorder),
            socket: folder.file("control.sock").path, server: server.name, extra: ["--http", "0"])
        let ready = try #require(served.readyLine(), "serve never said it was serving")
        let (address, _) = try pageAddress(ready)
        try browser.open(address + "/")
        _ = try browser.wait(for: "return document.getElementById('connection').classList.contains('open')")
        let text = "First sentence here. Second sentence is a good deal longer than the first one. Third, never heard."
        try browser.type(text, into: try browser.element("#speak-text"))
        try browser.click(try browser.element("#speak"))
        // The first sentence heard to its end: the page shows it as heard.
        var problems: [String] = []
        let heard = try browser.wait(
            for: "const h = document.querySelector('#utterances li .heard'); return h && h.textContent === 'First sentence here.' ? h.textContent : null",
            timeout: 15)
        if heard as? String != "First sentence here." { problems.append("heard \(heard)") }
        let timing = try browser.run("return document.querySelector('#utterances li .timing').textContent") as? String ?? ""
        if !timing.hasPrefix("first audio after ") { problems.append("no time to first audio: '\(timing)'") }
        // Into the second sentence, then Cancel.
        _ = try browser.wait(for: "return document.querySelectorAll('#utterances li').length >= 2", timeout: 10)
        usleep(400_000)
        try browser.click(try browser.element("#cancel"))
        let result = try browser.wait(
            for: "const t = document.getElementById('speak-result').textContent; return t.startsWith('cancelled') ? t : null")
        // The first sentence whole, then the second cut: its words heard, or at least the word
        // it was cut in.
        let said = result as? String ?? ""
        if !said.hasPrefix("cancelled; heard: “First sentence here.") || !said.contains("Second") {
            problems.append("the page said: \(said)")
        }
        usleep(500_000)
        _ = try served.ctl(["quit"])
        #expect(served.wait() == 0)
        recorder.stop()
        let samples = recorder.samples(channel: 0)
        let spans = serve.stretches(samples)
        guard spans.count == 2 else { return (problems + ["\(spans.count) stretches of sound, not the first sentence and the cut second: \(spans)"], recorder.xruns) }
        let cutEnd = spans[1].start + spans[1].length
        if abs(samples[cutEnd - 1]) > 0.01 { problems.append("the cut ends on \(samples[cutEnd - 1]): a click") }
        return (problems, recorder.xruns)
    }
}

extension ServeCommandTests {
    func withStatus(_ served: Served) throws -> [String: Any] {
        let status = try served.ctl(["status"])
        #expect(status.status == 0)
        return status.reply
    }
}

