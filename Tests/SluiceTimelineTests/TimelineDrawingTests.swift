import Foundation
import SluiceAudio
@testable import SluiceGraph
@testable import SluiceTimeline
import Testing

/// A served graph's rolling timeline: it keeps about its last `window` seconds however long
/// the run, and the drawing begins where it begins.
@Suite("a rolling timeline and its drawing")
struct TimelineDrawingTests {
    /// A run of `seconds` looked at every 50 ms (a served graph's looks), with first audio at
    /// 0.2 s, an utterance from 1 to 3 s and one from 50 s on that has not ended, an xrun at
    /// 55 s.
    static func run(seconds: Double, window: Double?) -> RunTimeline {
        var timeline = RunTimeline(window: window)
        var time = 0.0
        var step = 0
        while time <= seconds + 1e-9 {
            if step == 4 { timeline.mark(.firstAudio, at: time) }
            if step == 20 { timeline.played(Marker(position: 0, event: .utteranceStart(UtteranceID(1))), at: time) }
            if step == 60 { timeline.played(Marker(position: 0, event: .utteranceEnd(UtteranceID(1))), at: time) }
            if step == 1000 { timeline.played(Marker(position: 0, event: .utteranceStart(UtteranceID(2))), at: time) }
            if step == 1100 { timeline.mark(.xrun, at: time) }
            timeline.sample(at: time, buffered: Double(step % 20) / 10, watermark: 0.5)
            step += 1
            time = Double(step) * 0.05
        }
        timeline.duration = seconds
        return timeline
    }

    @Test("only about the last window is kept: samples, marks and ended utterances before it go")
    func keepsTheWindow() {
        let timeline = Self.run(seconds: 600, window: 20)
        // Let go in steps of a quarter window: from 20 to 25 s back.
        #expect(timeline.start >= 600 - 25 && timeline.start <= 600 - 20, "starts at \(timeline.start)")
        #expect(timeline.samples.first!.time >= timeline.start)
        #expect(timeline.samples.count <= 25 * 20 + 1, "\(timeline.samples.count) samples")
        #expect(timeline.marks.isEmpty, "first audio and the xrun fell out: \(timeline.marks)")
        // The second utterance is still playing: it stays, though it began before the window.
        #expect(timeline.utterances.map(\.id) == [2])

        let whole = Self.run(seconds: 600, window: nil)
        #expect(whole.start == 0)
        #expect(whole.samples.count == 12_001)
        #expect(whole.marks.map(\.kind) == [.firstAudio, .xrun])
    }

    @Test("the drawing of a rolling timeline begins where it begins, and says so")
    func drawsFromTheStart() throws {
        let timeline = Self.run(seconds: 60, window: 20)
        let svg = TimelineDrawing(
            timeline: timeline, title: "sluice serve: test",
            spans: TimelineDrawing.spans(of: timeline, texts: [2: "Still <speaking> & on"])
        ).svg()
        let start = try #require(Self.attribute("data-start", in: svg).flatMap(Double.init))
        #expect(abs(start - timeline.start) < 1e-6)
        #expect(svg.contains("the last"), "the summary names the stretch shown")
        #expect(!svg.contains("class=\"first-audio\""), "first audio is out of the window")
        // The xrun at 55 s is drawn, between the plot's edges (64 … 936).
        let xrun = try #require(svg.range(of: "<g class=\"xrun\""))
        let line = svg[xrun.lowerBound...].prefix(200)
        let x = try #require(Self.attribute("x1", in: String(line)).flatMap(Double.init))
        let expected = 64 + (55 - start) / (60 - start) * (960 - 64 - 24)
        #expect(abs(x - expected) < 0.01, "xrun at x \(x), expected \(expected)")
        // The utterance's text, escaped; the time axis's ticks within the window.
        #expect(svg.contains("Still &lt;speaking&gt; &amp; on"))
        #expect(svg.contains(">40 s<") && svg.contains(">60 s<"))
        #expect(!svg.contains(">30 s<") && !svg.contains(">35 s<"), "no tick before the window")
    }

    static func attribute(_ name: String, in text: String) -> String? {
        guard let range = text.range(of: " \(name)=\"") else { return nil }
        return String(text[range.upperBound...].prefix { $0 != "\"" })
    }
}

@Suite("the drawing's numbers")
struct TimelineNumberTests {
    @Test("fixed decimals read as printf's %.Nf reads them, negative and large ones too")
    func fixedDecimals() {
        for value in [0, 0.004, 0.005001, 1, 12.3456, -0.75, -3.999, 959.995001, 123_456.7, 1e-9] {
            for decimals in [0, 2, 6] {
                #expect(TimelineDrawing.fixed(value, decimals: decimals) == String(format: "%.\(decimals)f", value), "\(value) to \(decimals)")
            }
        }
        #expect(TimelineDrawing.fixed(.nan, decimals: 2) == "0.00")
        #expect(TimelineDrawing.fixed(1e300, decimals: 2) == "1000000000000.00")
    }
}
