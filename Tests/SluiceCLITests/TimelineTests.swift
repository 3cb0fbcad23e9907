import Foundation
import JackTestSupport
import SluiceTestSupport
import Testing

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// `--timeline FILE.svg` on `render`, `speak` and `run`: the file is well-formed SVG (parsed by
/// libxml2 through XMLParser), and its marks are the run's — first audio where the report puts
/// it, an underrun where a stalled source forced one and none where nothing stalled, the
/// utterances with the text they spoke.
@Suite("sluice --timeline")
struct TimelineTests {
    let folder = TemporaryFolder()

    /// A tone that stops producing at 0.8 s for 0.5 s, as a stalled provider would: playback
    /// (from the 0.5 s watermark) runs dry once the buffered half second has played.
    static let stalledTone = "tone duration=2 pace=1 stall-at=0.8 stall-for=0.5 ! fader ! jack.sink"

    @Test("a render with a forced underrun draws it, first audio where the report says, the watermark and the fill")
    func forcedUnderrun() throws {
        let svg = folder.file("stalled.svg")
        let outcome = try CLI.sluice(["render", Self.stalledTone, "-o", folder.file("s.wav").path, "--timeline", svg.path, "--stats", "json"])
        #expect(outcome.status == 0, "\(outcome.standardError)")
        let stats = try #require(try JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8)) as? [String: Any])
        #expect(stats["timeline"] == nil, "the timeline is a picture, not part of --stats json")
        #expect(stats["underruns"] as? Int == 1)

        let picture = try SVGPicture(svg)
        let underruns = picture.elements(class: "underrun")
        try #require(underruns.count == 1, "\(picture.classes)")
        // Dry once the stall has lasted as long as the buffer held, back once it ends.
        let start = try #require(underruns[0].number("data-time"))
        let end = try #require(underruns[0].number("data-end"))
        #expect(start > 1.2 && start < 1.3, "underrun at \(start) s")
        #expect(end >= 1.3 && end < 1.35, "audio back at \(end) s")

        let first = try #require(picture.elements(class: "first-audio").first?.number("data-time"))
        let reported = try #require(stats["timeToFirstAudio"] as? Double)
        #expect(abs(first - reported) < 1e-6, "first audio drawn at \(first), reported \(reported)")
        #expect(picture.elements(class: "watermark").first?.number("data-seconds") == 0.5)
        let peak = try #require(picture.elements(class: "buffer-fill").first?.number("data-peak"))
        #expect(abs(peak - (stats["peakBufferedSeconds"] as? Double ?? -1)) < 1e-6)
        #expect(picture.elements(class: "finished").count == 1)
        #expect(picture.elements(class: "xrun").isEmpty)
        #expect(picture.text.contains("1 underrun"), "the summary line: \(picture.text)")
    }

    @Test("the same tone without the stall draws no underrun")
    func noUnderrun() throws {
        let svg = folder.file("steady.svg")
        let outcome = try CLI.sluice(["render", "tone duration=2 pace=1 ! fader ! jack.sink", "-o", folder.file("s.wav").path, "--timeline", svg.path])
        #expect(outcome.status == 0, "\(outcome.standardError)")
        let picture = try SVGPicture(svg)
        #expect(picture.elements(class: "underrun").isEmpty)
        #expect(picture.elements(class: "first-audio").count == 1)
        #expect(picture.text.contains("0 underruns"))
    }

    @Test("render with text: each line's utterance is a span with its text, in order")
    func renderedUtterances() throws {
        let svg = folder.file("morse.svg")
        let outcome = try CLI.sluice([
            "render", "graphs/morse.yaml", "-o", folder.file("m.wav").path, "--text", "SOS\nHI <&>", "--timeline", svg.path,
        ])
        #expect(outcome.status == 0, "\(outcome.standardError)")
        let picture = try SVGPicture(svg)
        let spans = picture.elements(class: "utterance")
        #expect(spans.map(\.title) == ["SOS", "HI <&>"], "the text, escaped in the file and read back whole")
        let starts = spans.compactMap { $0.number("data-start") }
        let ends = spans.compactMap { $0.number("data-end") }
        #expect(starts.count == 2 && ends.count == 2 && starts[0] < ends[0] && ends[0] <= starts[1] && starts[1] < ends[1], "\(starts) \(ends)")
    }

    @Test("speak into a file: each sentence is a span with its text")
    func spokenSentences() throws {
        let svg = folder.file("speak.svg")
        let outcome = try CLI.sluice([
            "speak", "Hello there. This is the second sentence.", "-o", folder.file("s.wav").path, "--timeline", svg.path, "--no-cache",
        ])
        #expect(outcome.status == 0, "\(outcome.standardError)")
        let picture = try SVGPicture(svg)
        #expect(picture.elements(class: "utterance").map(\.title) == ["Hello there.", "This is the second sentence."])
        #expect(picture.elements(class: "first-audio").count == 1)
    }

    @Test("a live run into JACK draws first audio and the end, on the server's clock")
    func liveRun() throws {
        let server = try JackTestServer.shared()
        let svg = folder.file("live.svg")
        let outcome = try CLI.sluice([
            "run", "tone duration=0.5 ! fader ! jack.sink connect=none", "--server", server.name, "--timeline", svg.path, "--stats", "json",
        ])
        #expect(outcome.status == 0, "\(outcome.standardError)")
        let stats = try #require(try JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8)) as? [String: Any])
        let picture = try SVGPicture(svg)
        let first = try #require(picture.elements(class: "first-audio").first?.number("data-time"))
        #expect(abs(first - (stats["timeToFirstAudio"] as? Double ?? -1)) < 1e-6)
        #expect(picture.elements(class: "finished").count == 1)
        #expect(picture.elements(class: "underrun").count == stats["underruns"] as? Int)
        #expect(picture.elements(class: "xrun").count == stats["xruns"] as? Int)
        #expect(try #require(picture.elements(class: "buffer-fill").first?.number("data-peak")) > 0)
    }

    @Test("a file name that is not .svg is refused before anything runs")
    func notSVG() throws {
        let outcome = try CLI.sluice(["render", "tone duration=0.1 ! jack.sink", "-o", folder.file("t.wav").path, "--timeline", folder.file("t.png").path])
        #expect(outcome.status == 2, "a usage error")
        #expect(outcome.standardError.contains("--timeline draws SVG: give a file name ending in .svg"), "\(outcome.standardError)")
        #expect(!FileManager.default.fileExists(atPath: folder.file("t.wav").path))
    }
}

/// An SVG file read back: the elements that carry a class, with their attributes and the text
/// of their `<title>`, and all the text in the picture. Reading fails on a file that is not
/// well-formed XML.
struct SVGPicture {
    struct Element {
        var name: String
        var attributes: [String: String]
        var title = ""
        func number(_ attribute: String) -> Double? { attributes[attribute].flatMap(Double.init) }
    }

    struct NotWellFormed: Error, CustomStringConvertible {
        var description: String
    }

    private(set) var classed: [Element] = []
    private(set) var text = ""
    var classes: [String] { classed.compactMap { $0.attributes["class"] } }

    init(_ url: URL) throws {
        try self.init(data: try Data(contentsOf: url), name: url.lastPathComponent)
    }

    init(data: Data, name: String) throws {
        let reader = Reader()
        let parser = XMLParser(data: data)
        parser.delegate = reader
        guard parser.parse() else {
            throw NotWellFormed(description: "\(name): \(parser.parserError.map { "\($0)" } ?? "not well-formed")")
        }
        guard reader.root == "svg" else { throw NotWellFormed(description: "the root element is <\(reader.root ?? "")>, not <svg>") }
        classed = reader.classed
        text = reader.text
    }

    func elements(class name: String) -> [Element] { classed.filter { $0.attributes["class"] == name } }

    private final class Reader: NSObject, XMLParserDelegate {
        var root: String?
        var classed: [Element] = []
        var text = ""
        /// For each open element: the index of the classed element it belongs to.
        private var owners: [Int?] = []
        private var inTitle = false

        func parser(
            _ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
            attributes: [String: String] = [:]
        ) {
            if root == nil { root = name }
            if attributes["class"] != nil {
                classed.append(Element(name: name, attributes: attributes))
                owners.append(classed.count - 1)
            } else {
                owners.append(owners.last ?? nil)
            }
            inTitle = name == "title"
        }

        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            owners.removeLast()
            inTitle = false
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            text += string
            if inTitle, let owner = owners.last ?? nil { classed[owner].title += string }
        }
    }
}
