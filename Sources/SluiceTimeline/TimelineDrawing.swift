import Foundation
import SluiceGraph

/// Draws a run's `RunTimeline` as one self-contained SVG (`--timeline FILE.svg`, and the
/// page of `serve --http`) — the first sink's buffer fill over time against its watermark,
/// the utterances as spans with their text, underruns, xruns, first audio and the end as
/// marks. Every mark is an element with a class (`first-audio`, `underrun`, `xrun`,
/// `utterance`, `watermark`, `buffer-fill`, …) and its time in a `data-` attribute, so
/// scripts can read the picture back as well as look. A timeline that keeps only its last
/// stretch (`RunTimeline.window`) is drawn from where it begins (`data-start`).
public struct TimelineDrawing: Sendable {
    /// One utterance as drawn: its text and where it played.
    public struct Span: Sendable {
        public var text: String
        public var start: Double
        public var end: Double?

        public init(text: String, start: Double, end: Double?) {
            self.text = text
            self.start = start
            self.end = end
        }
    }

    let timeline: RunTimeline
    let title: String
    let spans: [Span]

    public init(timeline: RunTimeline, title: String, spans: [Span]) {
        self.timeline = timeline
        self.title = title
        self.spans = spans
    }

    /// The spans of a timeline's utterances with their text from `text` (by utterance id);
    /// those without one are named by their number.
    public static func spans(of timeline: RunTimeline, texts: [UInt32: String]) -> [Span] {
        timeline.utterances.map { utterance in
            Span(text: texts[utterance.id] ?? "utterance \(utterance.id)", start: utterance.start, end: utterance.end)
        }
    }

    // The layout, in SVG user units (pixels).
    private let width = 960.0
    private let left = 64.0
    private let right = 24.0
    private let chartTop = 64.0
    private let chartHeight = 200.0
    private let laneHeight = 22.0
    private var plotWidth: Double { width - left - right }
    private var chartBottom: Double { chartTop + chartHeight }

    /// The graph second the picture ends at: the run's end, or whatever it recorded past that.
    private var duration: Double {
        let lastSample = timeline.samples.last?.time ?? 0
        let lastMark = timeline.marks.map(\.time).max() ?? 0
        let lastSpan = spans.map { $0.end ?? $0.start }.max() ?? 0
        return max(timeline.duration, lastSample, lastMark, lastSpan, start + 0.001)
    }

    /// The graph second the picture begins at: 0, or where a rolling timeline begins.
    private var start: Double { timeline.start }

    /// The top of the fill scale: a little above the fullest buffer and the watermark.
    private var topSeconds: Double {
        let peak = timeline.samples.map(\.maxBuffered).max() ?? 0
        let watermark = timeline.samples.compactMap(\.watermark).max() ?? 0
        return Self.niceCeiling(max(peak, watermark, 0.01) * 1.1)
    }

    private func x(_ time: Double) -> Double { left + (min(max(time, start), duration) - start) / (duration - start) * plotWidth }
    private func y(_ seconds: Double) -> Double { chartBottom - min(max(seconds, 0), topSeconds) / topSeconds * chartHeight }

    // MARK: The picture

    public func svg() -> String {
        let rows = spanRows()
        let laneTop = chartBottom + 34
        let height = rows.isEmpty ? chartBottom + 30 : laneTop + Double(rows.count) * laneHeight + 12
        var out = """
            <?xml version="1.0" encoding="UTF-8"?>
            <svg xmlns="http://www.w3.org/2000/svg" width="\(n(width))" height="\(n(height))" viewBox="0 0 \(n(width)) \(n(height))" \
            font-family="sans-serif" font-size="11" data-duration="\(precise(duration))" data-start="\(precise(start))">

            """
        out += "<title>\(escaped(title))</title>\n"
        out += "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n"
        out += "<text x=\"\(n(left))\" y=\"20\" font-size=\"14\" font-weight=\"bold\">\(escaped(title))</text>\n"
        out += "<text class=\"summary\" x=\"\(n(left))\" y=\"38\" fill=\"#444444\">\(escaped(summary()))</text>\n"
        out += legend()
        out += axes()
        out += bufferFill()
        out += watermark()
        out += underruns()
        out += instants()
        out += utterances(rows, top: laneTop)
        out += "</svg>\n"
        return out
    }

    /// One line of figures under the title.
    private func summary() -> String {
        var parts: [String] = []
        if let first = timeline.marks.first(where: { $0.kind == .firstAudio }) {
            parts.append(String(format: "first audio at %.0f ms", first.time * 1000))
        } else if start == 0 {
            parts.append("no audio played")
        }
        if start > 0 {
            parts.append(String(format: "the last %.0f s of a %.0f s run", duration - start, duration))
        } else {
            parts.append(String(format: "%.2f s run", duration))
        }
        let underruns = timeline.marks.filter { $0.kind == .underrunStart }.count
        parts.append("\(underruns) underrun\(underruns == 1 ? "" : "s")")
        let xruns = timeline.marks.filter { $0.kind == .xrun }.count
        parts.append("\(xruns) xrun\(xruns == 1 ? "" : "s")")
        let peak = timeline.samples.map(\.maxBuffered).max() ?? 0
        parts.append(String(format: "buffer up to %.2f s of %.2f s", peak, timeline.capacitySeconds))
        if timeline.marks.contains(where: { $0.kind == .cancelled }) { parts.append("cancelled") }
        return parts.joined(separator: " · ")
    }

    private func legend() -> String {
        var out = "<g class=\"legend\" transform=\"translate(\(n(width - right - 420)),50)\">\n"
        out += "<rect x=\"0\" y=\"-8\" width=\"12\" height=\"8\" fill=\"#9ecae1\" stroke=\"#3182bd\"/><text x=\"16\" y=\"0\">buffered audio</text>\n"
        out += "<line x1=\"110\" y1=\"-4\" x2=\"126\" y2=\"-4\" stroke=\"#756bb1\" stroke-width=\"1.5\" stroke-dasharray=\"4 3\"/><text x=\"130\" y=\"0\">watermark</text>\n"
        out += "<line x1=\"200\" y1=\"-8\" x2=\"200\" y2=\"0\" stroke=\"#31a354\" stroke-width=\"2\"/><text x=\"205\" y=\"0\">first audio</text>\n"
        out += "<rect x=\"272\" y=\"-8\" width=\"12\" height=\"8\" fill=\"#de2d26\" fill-opacity=\"0.25\"/><text x=\"288\" y=\"0\">underrun</text>\n"
        out += "<line x1=\"350\" y1=\"-8\" x2=\"350\" y2=\"0\" stroke=\"#e6550d\" stroke-width=\"2\"/><text x=\"355\" y=\"0\">xrun</text>\n"
        out += "</g>\n"
        return out
    }

    /// The frame, the time axis and the fill axis, with their ticks.
    private func axes() -> String {
        var out = "<g class=\"axes\" stroke=\"#999999\" fill=\"none\">\n"
        out += "<rect x=\"\(n(left))\" y=\"\(n(chartTop))\" width=\"\(n(plotWidth))\" height=\"\(n(chartHeight))\"/>\n"
        out += "</g>\n<g class=\"ticks\" fill=\"#444444\">\n"
        let timeStep = Self.niceStep((duration - start) / 8)
        var tick = (start / timeStep).rounded(.up) * timeStep
        while tick <= duration + timeStep * 1e-9 {
            out += "<line x1=\"\(n(x(tick)))\" y1=\"\(n(chartBottom))\" x2=\"\(n(x(tick)))\" y2=\"\(n(chartBottom + 4))\" stroke=\"#999999\"/>"
            out += "<text x=\"\(n(x(tick)))\" y=\"\(n(chartBottom + 16))\" text-anchor=\"middle\">\(Self.seconds(tick, step: timeStep))</text>\n"
            tick += timeStep
        }
        let fillStep = Self.niceStep(topSeconds / 4)
        tick = 0
        while tick <= topSeconds + fillStep * 1e-9 {
            out += "<line x1=\"\(n(left - 4))\" y1=\"\(n(y(tick)))\" x2=\"\(n(left))\" y2=\"\(n(y(tick)))\" stroke=\"#999999\"/>"
            out += "<text x=\"\(n(left - 6))\" y=\"\(n(y(tick) + 4))\" text-anchor=\"end\">\(Self.seconds(tick, step: fillStep))</text>\n"
            tick += fillStep
        }
        out += "<text x=\"14\" y=\"\(n(chartTop + chartHeight / 2))\" transform=\"rotate(-90 14 \(n(chartTop + chartHeight / 2)))\" text-anchor=\"middle\">buffered</text>\n"
        out += "</g>\n"
        return out
    }

    /// The buffer's fill as an area, thinned to one column per pixel keeping each column's
    /// fullest look, so a short peak still shows.
    private func bufferFill() -> String {
        guard !timeline.samples.isEmpty else { return "" }
        var columns: [(x: Double, value: Double)] = []
        for sample in timeline.samples {
            let column = x(sample.time).rounded()
            if let last = columns.last, last.x == column {
                columns[columns.count - 1].value = max(last.value, sample.maxBuffered)
            } else {
                columns.append((column, sample.maxBuffered))
            }
        }
        var path = "M\(n(columns[0].x)),\(n(y(0)))"
        for column in columns { path += " L\(n(column.x)),\(n(y(column.value)))" }
        path += " L\(n(columns[columns.count - 1].x)),\(n(y(0))) Z"
        let peak = timeline.samples.map(\.maxBuffered).max() ?? 0
        return "<path class=\"buffer-fill\" data-peak=\"\(precise(peak))\" d=\"\(path)\" fill=\"#9ecae1\" stroke=\"#3182bd\" stroke-width=\"1\"/>\n"
    }

    /// The watermark as a dashed step line; no line where none was set (`auto` still sizing).
    private func watermark() -> String {
        var path = ""
        var previous: Double??
        // The last sample of the level drawn so far: a level is drawn to where it ends, not
        // through every sample on it.
        var levelEnd: Double?
        func endLevel(at value: Double) {
            if let end = levelEnd { path += " L\(n(x(end))),\(n(y(value)))" }
            levelEnd = nil
        }
        for sample in timeline.samples {
            guard let value = sample.watermark else {
                if case let last?? = previous { endLevel(at: last) }
                previous = .some(nil)
                continue
            }
            if case let last?? = previous {
                if last != value {
                    endLevel(at: last)
                    path += " L\(n(x(sample.time))),\(n(y(last))) L\(n(x(sample.time))),\(n(y(value)))"
                } else {
                    levelEnd = sample.time
                    continue
                }
            } else {
                path += " M\(n(x(sample.time))),\(n(y(value)))"
            }
            previous = .some(value)
            levelEnd = nil
            path += " L\(n(x(sample.time))),\(n(y(value)))"
        }
        if case let last?? = previous { endLevel(at: last) }
        guard !path.isEmpty, let last = timeline.samples.last(where: { $0.watermark != nil })?.watermark else { return "" }
        return "<path class=\"watermark\" data-seconds=\"\(precise(last))\" d=\"\(path.dropFirst())\" fill=\"none\" stroke=\"#756bb1\" stroke-width=\"1.5\" stroke-dasharray=\"4 3\"/>\n"
    }

    /// Each underrun as a band from the moment the buffer ran dry to the moment audio came back.
    private func underruns() -> String {
        var out = ""
        let ends = timeline.marks.filter { $0.kind == .underrunEnd }.map(\.time)
        let stops = timeline.marks.filter { $0.kind == .finished || $0.kind == .cancelled }.map(\.time)
        for mark in timeline.marks where mark.kind == .underrunStart {
            let end = ends.first { $0 >= mark.time } ?? stops.first { $0 >= mark.time } ?? duration
            let from = x(mark.time)
            let width = max(x(end) - from, 1.5)
            out += "<g class=\"underrun\" data-time=\"\(precise(mark.time))\" data-end=\"\(precise(end))\">"
            out += "<title>underrun \(String(format: "%.3f–%.3f s", mark.time, end))</title>"
            out += "<rect x=\"\(n(from))\" y=\"\(n(chartTop))\" width=\"\(n(width))\" height=\"\(n(chartHeight))\" fill=\"#de2d26\" fill-opacity=\"0.25\"/>"
            out += "<text x=\"\(n(from + 3))\" y=\"\(n(chartTop + 12))\" fill=\"#a50f15\">underrun</text></g>\n"
        }
        return out
    }

    /// First audio, xruns and the end, as vertical lines with a label.
    private func instants() -> String {
        var out = ""
        for mark in timeline.marks {
            let (colour, label): (String, String)
            switch mark.kind {
            case .firstAudio: (colour, label) = ("#31a354", String(format: "first audio %.0f ms", mark.time * 1000))
            case .xrun: (colour, label) = ("#e6550d", "xrun")
            case .dropped: (colour, label) = ("#756bb1", "dropped")
            case .finished: (colour, label) = ("#636363", "end")
            case .cancelled: (colour, label) = ("#636363", "cancelled")
            case .underrunStart, .underrunEnd: continue
            }
            let at = x(mark.time)
            let anchor = at > left + plotWidth - 100 ? "end" : "start"
            let labelX = anchor == "end" ? at - 3 : at + 3
            out += "<g class=\"\(mark.kind.rawValue)\" data-time=\"\(precise(mark.time))\">"
            out += "<line x1=\"\(n(at))\" y1=\"\(n(chartTop))\" x2=\"\(n(at))\" y2=\"\(n(chartBottom))\" stroke=\"\(colour)\" stroke-width=\"2\"/>"
            let labelY = mark.kind == .firstAudio ? chartTop + 26 : mark.kind == .xrun ? chartTop + 40 : chartTop + 54
            out += "<text x=\"\(n(labelX))\" y=\"\(n(labelY))\" fill=\"\(colour)\" text-anchor=\"\(anchor)\">\(escaped(label))</text></g>\n"
        }
        return out
    }

    /// Utterances placed in rows so that overlapping ones (a crossfade) do not cover each other.
    private func spanRows() -> [[Span]] {
        var rows: [[Span]] = []
        for span in spans.sorted(by: { $0.start < $1.start }) {
            if let row = rows.firstIndex(where: { row in (row.last.map { $0.end ?? duration } ?? 0) <= span.start }) {
                rows[row].append(span)
            } else {
                rows.append([span])
            }
        }
        return rows
    }

    private func utterances(_ rows: [[Span]], top: Double) -> String {
        guard !rows.isEmpty else { return "" }
        var out = "<text x=\"\(n(left - 6))\" y=\"\(n(top + 15))\" text-anchor=\"end\" fill=\"#444444\">speech</text>\n"
        for (row, spans) in rows.enumerated() {
            for (index, span) in spans.enumerated() {
                let from = x(span.start)
                let width = max(x(span.end ?? duration) - from, 2)
                let y = top + Double(row) * laneHeight
                let clip = "utterance-\(row)-\(index)"
                out += "<g class=\"utterance\" data-start=\"\(precise(span.start))\""
                if let end = span.end { out += " data-end=\"\(precise(end))\"" }
                out += "><title>\(escaped(span.text))</title>"
                out += "<clipPath id=\"\(clip)\"><rect x=\"\(n(from))\" y=\"\(n(y))\" width=\"\(n(width))\" height=\"\(n(laneHeight - 4))\"/></clipPath>"
                out += "<rect x=\"\(n(from))\" y=\"\(n(y))\" width=\"\(n(width))\" height=\"\(n(laneHeight - 4))\" rx=\"3\" fill=\"#fdd0a2\" stroke=\"#e6550d\" stroke-width=\"0.8\"/>"
                out += "<text x=\"\(n(from + 4))\" y=\"\(n(y + 13))\" clip-path=\"url(#\(clip))\">\(escaped(span.text))</text></g>\n"
            }
        }
        return out
    }

    // MARK: Numbers and text

    /// A coordinate: two decimals are finer than any screen.
    private func n(_ value: Double) -> String { Self.fixed(value, decimals: 2) }
    /// A time or an amount read back by scripts: to the microsecond.
    private func precise(_ value: Double) -> String { Self.fixed(value, decimals: 6) }

    /// `value` with `decimals` decimals (at most 6), as `%.Nf` writes it but for ties, without
    /// Foundation's formatter: a picture of a long run has tens of thousands of numbers.
    static func fixed(_ value: Double, decimals: Int) -> String {
        let scale = [1.0, 10, 100, 1_000, 10_000, 100_000, 1_000_000][min(max(decimals, 0), 6)]
        // Coordinates and times are far inside this; anything beyond is clamped, not trapped.
        let scaled = (min(max(value.isFinite ? value : 0, -1e12), 1e12) * scale).rounded()
        let units = Int64(abs(scaled))
        let whole = units / Int64(scale)
        var text = scaled < 0 ? "-" : ""
        text += String(whole)
        guard decimals > 0 else { return text }
        let fraction = String(units - whole * Int64(scale))
        text += "."
        text += String(repeating: "0", count: decimals - fraction.count)
        text += fraction
        return text
    }

    /// `&`, `<`, `>` and quotes as XML entities: text from users goes into elements and attributes.
    private func escaped(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            default:
                // XML 1.0 forbids most control characters even escaped; a newline reads as a space.
                if let scalar = character.unicodeScalars.first, character.unicodeScalars.count == 1,
                    scalar.value < 0x20 && scalar != "\t"
                {
                    out += " "
                } else {
                    out.append(character)
                }
            }
        }
        return out
    }

    /// 1, 2 or 5 times a power of ten, at least `raw`.
    static func niceStep(_ raw: Double) -> Double {
        guard raw > 0, raw.isFinite else { return 1 }
        let power = pow(10, (log10(raw)).rounded(.down))
        for factor in [1.0, 2, 5, 10] where factor * power >= raw * (1 - 1e-9) { return factor * power }
        return 10 * power
    }

    /// The smallest multiple of a nice step at least `value`.
    static func niceCeiling(_ value: Double) -> Double {
        let step = niceStep(value / 5)
        return (value / step).rounded(.up) * step
    }

    /// A tick label: as many decimals as the step needs.
    static func seconds(_ value: Double, step: Double) -> String {
        let decimals = max(0, Int((-log10(step)).rounded(.up)))
        return String(format: "%.\(decimals)f s", value)
    }
}
