import Foundation
import SluiceAudio
import SluiceGraph
import SluiceNodes
import SluiceTestSupport
import Testing

@Suite("morse")
struct MorseSourceTests {
    /// 20 wpm at 48 kHz: a dit is 0.06 s.
    static let dit = 2_880
    static let ramp = 240

    /// Keyed frame `i` of an element `length` frames long, as documented.
    static func keyed(_ i: Int, length: Int, amplitude: Double = 0.5, frequency: Double = 600, rate: Double = 48_000, ramp: Int = ramp) -> Float {
        let j = min(i, length - 1 - i)
        let gain = j < ramp ? (1 - cos(Double.pi * Double(j + 1) / Double(ramp + 1))) / 2 : 1
        let cycles = frequency * Double(i) / rate
        return Float(amplitude * gain * sin(2 * Double.pi * (cycles - cycles.rounded(.down))))
    }

    /// The whole signal for elements given as (keyed?, dits) pairs.
    static func signal(_ parts: [(Bool, Int)], dit: Int = dit) -> [Float] {
        var samples: [Float] = []
        for (isKeyed, dits) in parts {
            let length = dits * dit
            samples += isKeyed ? (0..<length).map { keyed($0, length: length) } : [Float](repeating: 0, count: length)
        }
        return samples
    }

    static func make(_ values: [String: ParameterValue] = [:], downstreamRate: Int? = nil) throws -> (SourceHarness, MorseSource) {
        let harness = try SourceHarness(MorseSource.type, values, downstreamRate: downstreamRate)
        return (harness, try #require(harness.node as? MorseSource))
    }

    @Test("E is one dit, then the 7-dit gap that ends an utterance")
    func letterE() throws {
        let (harness, source) = try Self.make()
        #expect(source.ditLength == Self.dit)
        #expect(source.rampLength == Self.ramp)
        source.receive(text: "E")
        source.finishText()
        #expect(source.expectedDuration == Double(8 * Self.dit) / 48_000)
        #expect(harness.runToEnd(rooms: 1...3_000, seed: 4).isFinished)
        #expect(harness.frames == 8 * Self.dit)
        #expect(firstDifference(harness.samples, Self.signal([(true, 1), (false, 7)])) == nil)
        let id = UtteranceID(0)
        #expect(harness.markers == [
            Marker(position: 0, event: .utteranceStart(id)),
            Marker(position: 0, event: .textSpan(TextSpan(utterance: id, start: 0, end: 1))),
            Marker(position: 8 * Self.dit, event: .utteranceEnd(id)),
        ])
    }

    @Test("ET: dit, 3-dit letter gap, dah, 7-dit end")
    func letters() throws {
        let (harness, source) = try Self.make()
        source.receive(text: "et")
        source.finishText()
        harness.runToEnd(rooms: 1...5_000, seed: 8)
        #expect(firstDifference(harness.samples, Self.signal([(true, 1), (false, 3), (true, 3), (false, 7)])) == nil)
        #expect(harness.markers.last == Marker(position: 14 * Self.dit, event: .utteranceEnd(UtteranceID(0))))
    }

    @Test("keying edges ramp: no step bigger than the tone's own, wherever the cycle is cut")
    func noClicks() throws {
        // 610 Hz: a dit holds 36.6 cycles, so an unramped element would end mid-cycle.
        let (harness, source) = try Self.make(["frequency": .number(610)])
        source.receive(text: "R")
        source.finishText()
        harness.runToEnd()
        let samples = harness.samples
        #expect(abs(samples[0]) < 1e-6)
        // The largest step a 610 Hz sine of amplitude 0.5 takes at 48 kHz.
        let largest = 0.5 * 2 * Double.pi * 610 / 48_000
        let steepest = (1..<samples.count).map { abs(Double(samples[$0] - samples[$0 - 1])) }.max() ?? 0
        #expect(steepest <= largest * 1.05)  // 5% for the ramp's own slope
        #expect(steepest > largest * 0.9)
        // Each element's last frame is nearly silent.
        for end in [Self.dit, 5 * Self.dit, 7 * Self.dit] { #expect(abs(samples[end - 1]) < 1e-3, "frame \(end - 1)") }
        // After the ramp, the plain tone: 610 × 250 / 48000 = 3.177… cycles.
        let cycles = 610.0 * 250 / 48_000
        #expect(samples[250] == Float(0.5 * sin(2 * Double.pi * (cycles - cycles.rounded(.down)))))
    }

    @Test("markers: utterance start, a text span per word (UTF-8 offsets), utterance end")
    func markers() throws {
        let (harness, source) = try Self.make()
        source.receive(text: "Hi  there!")
        source.receive(text: "café ok")
        source.finishText()
        harness.runToEnd(rooms: 1...10_000, seed: 2)
        let d = Self.dit
        // "Hi" = H(7) + 3 + I(3) = 13 dits; 7 between words; "there!" = T 3, H 7, E 1, R 7,
        // E 1, ! 19 with 5 letter gaps = 53; 7 at the end: 80 dits.
        // "café" keys c (11), a (5), f (9) with 2 letter gaps = 31; é is skipped but counts in
        // the span's bytes; "ok" = O 11 + 3 + K 9 = 23; 31 + 7 + 23 + 7 = 68 dits.
        let first = UtteranceID(0)
        let second = UtteranceID(1)
        #expect(harness.markers == [
            Marker(position: 0, event: .utteranceStart(first)),
            Marker(position: 0, event: .textSpan(TextSpan(utterance: first, start: 0, end: 2))),
            Marker(position: 20 * d, event: .textSpan(TextSpan(utterance: first, start: 4, end: 10))),
            Marker(position: 80 * d, event: .utteranceEnd(first)),
            Marker(position: 80 * d, event: .utteranceStart(second)),
            Marker(position: 80 * d, event: .textSpan(TextSpan(utterance: second, start: 0, end: 5))),
            Marker(position: 118 * d, event: .textSpan(TextSpan(utterance: second, start: 6, end: 8))),
            Marker(position: 148 * d, event: .utteranceEnd(second)),
        ])
        #expect(harness.frames == 148 * d)
    }

    @Test("text with nothing to key is an empty utterance; unknown words leave no gap")
    func unknownCharacters() throws {
        let (harness, source) = try Self.make()
        source.receive(text: "¿¿ ##")
        source.receive(text: "§ e")
        source.finishText()
        harness.runToEnd()
        #expect(harness.markers == [
            Marker(position: 0, event: .utteranceStart(UtteranceID(0))),
            Marker(position: 0, event: .utteranceEnd(UtteranceID(0))),
            Marker(position: 0, event: .utteranceStart(UtteranceID(1))),
            Marker(position: 0, event: .textSpan(TextSpan(utterance: UtteranceID(1), start: 3, end: 4))),
            Marker(position: 8 * Self.dit, event: .utteranceEnd(UtteranceID(1))),
        ])
        #expect(harness.frames == 8 * Self.dit)
    }

    @Test("many words in one call never emit more markers than a call may hold")
    func markerCapacity() throws {
        let (harness, source) = try Self.make(["wpm": .number(60), "rate": .integer(8_000)])
        let dit = source.ditLength
        #expect(dit == 160)
        source.receive(text: Array(repeating: "e", count: 40).joined(separator: " "))
        source.finishText()
        harness.runToEnd(rooms: 1_000_000...1_000_000)
        #expect(harness.calls.count > 1)
        let spans = harness.markers.filter { if case .textSpan = $0.event { true } else { false } }
        #expect(spans.map(\.position) == (0..<40).map { $0 * 8 * dit })
        #expect(harness.frames == 40 * 8 * dit)
    }

    @Test("rate auto follows the sink; channels repeat the signal")
    func formats() throws {
        let (harness, source) = try Self.make(["rate": .auto, "channels": .integer(2)], downstreamRate: 16_000)
        #expect(harness.format == .frames(rate: 16_000, channels: 2))
        #expect(source.ditLength == 960)
        #expect(source.rampLength == 80)
        source.receive(text: "t")
        source.finishText()
        harness.runToEnd()
        let samples = harness.samples
        #expect(samples.count == 2 * 10 * 960)
        #expect(stride(from: 0, to: samples.count, by: 2).allSatisfy { samples[$0] == samples[$0 + 1] })
    }

    @Test("finishText with nothing queued finishes at once; expectedDuration is known only then")
    func finishText() throws {
        let (harness, source) = try Self.make()
        #expect(source.expectedDuration == nil)
        source.finishText()
        #expect(source.expectedDuration == 0)
        #expect(harness.step(room: 100).isFinished)
        #expect(harness.frames == 0)
    }

    @Test("a produce waiting for text returns when text arrives, and after cancel", .timeLimit(.minutes(1)))
    func blockingProduce() throws {
        let (harness, source) = try Self.make()
        let box = ThreadBox(harness)

        // Text arrives while produce waits: it returns with the start of the utterance.
        let fed = Flag()
        let feeder = GraphThread(name: "feeder") {
            sleep(seconds: 0.15)
            fed.raise()
            source.receive(text: "e")
        }
        let first = onThread(timeout: 5) { box.value.step(room: 100) }
        let returnedAfterText = fed.isRaised
        feeder.join()
        #expect(first?.isMore == true)
        #expect(returnedAfterText, "produce returned before the text arrived")
        #expect(harness.frames == 100)

        // Everything spoken and no more text yet: the next produce blocks until cancel.
        #expect(harness.step(room: 50_000).isMore)
        #expect(harness.frames == 8 * Self.dit)
        let cancelling = Flag()
        let canceller = GraphThread(name: "canceller") {
            sleep(seconds: 0.2)
            cancelling.raise()
            source.cancel()
        }
        let last = onThread(timeout: 5) { box.value.step(room: 100) }
        let returnedAfterCancel = cancelling.isRaised
        canceller.join()
        if last == nil { source.finishText() }  // unblock a stuck produce before failing
        #expect(last?.isFinished == true)
        #expect(returnedAfterCancel, "produce returned before it was cancelled")
    }

    @Test("finishText ends a produce waiting for text")
    func finishWhileWaiting() throws {
        let (harness, source) = try Self.make()
        let box = ThreadBox(harness)
        let finisher = GraphThread(name: "finisher") {
            sleep(seconds: 0.1)
            source.finishText()
        }
        let status = onThread(timeout: 5) { box.value.step(room: 100) }
        finisher.join()
        if status == nil { source.cancel() }
        #expect(status?.isFinished == true)
    }

    @Test("reset forgets the text: ids start again from 0")
    func reset() throws {
        let (harness, source) = try Self.make()
        source.receive(text: "e")
        source.finishText()
        harness.runToEnd()
        source.reset()
        #expect(source.expectedDuration == nil)
        source.receive(text: "t")
        source.finishText()
        let count = harness.markers.count
        harness.runToEnd()
        #expect(harness.markers[count] == Marker(position: 0, event: .utteranceStart(UtteranceID(0))))
    }
}
