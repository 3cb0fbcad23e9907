import Foundation
import SluiceGraph
import SluicePlugins
import SluiceTestKit
import SluiceTestSupport
import Testing

/// The C ducker, loaded through the loader and run in graphs by the offline renderer, against
/// its formula (Plugins/ducker/ducker.c).
@Suite struct DuckerTests {
    static let parameters = (depth: 12.0, threshold: -30.0, attack: 0.005, hold: 0.05, release: 0.1)

    static func yaml(ducked: Bool, channels: Int = 1) -> String {
        let p = parameters
        let nodes = """
            name: ducking
            nodes:
              music:  { type: tone, frequency: 220, amplitude: 0.5, duration: 1, rate: 48000, channels: \(channels) }
              speech: { type: morse, wpm: 40, frequency: 700, amplitude: 0.5, rate: 48000, channels: \(channels) }
              duck:   { type: ducker, depth: \(p.depth), threshold: \(p.threshold), attack: \(p.attack), hold: \(p.hold), release: \(p.release) }
              out:    { type: null.sink, rate: 48000, channels: \(channels) }
              out2:   { type: null.sink, rate: 48000, channels: \(channels) }

            """
        if ducked {
            return nodes.replacingOccurrences(of: "  out2:   { type: null.sink, rate: 48000, channels: \(channels) }\n", with: "") + """
                links:
                  - music -> duck.in
                  - speech -> duck.speech
                  - duck -> out
                """
        }
        // The inputs alone: music to `out`, speech to `out2`.
        return nodes.replacingOccurrences(of: "  duck:   { type: ducker, depth: \(p.depth), threshold: \(p.threshold), attack: \(p.attack), hold: \(p.hold), release: \(p.release) }\n", with: "") + """
            links:
              - music -> out
              - speech -> out2
            """
    }

    /// The formula of ducker.c, in the same double arithmetic.
    static func expected(music: [Float], speech: [Float], channels: Int, rate: Int) -> [Float] {
        let p = parameters
        let frames = max(music.count, speech.count) / channels
        let duck = pow(10.0, -p.depth / 20)
        let threshold = pow(10.0, p.threshold / 20)
        let attack = exp(-1 / (p.attack * Double(rate)))
        let release = exp(-1 / (p.release * Double(rate)))
        let hold = UInt64((p.hold * Double(rate)).rounded())
        var gain = 1.0
        var since = UInt64.max
        var out = [Float](repeating: 0, count: frames * channels)
        for n in 0..<frames {
            var peak: Float = 0
            for c in 0..<channels {
                let index = n * channels + c
                peak = max(peak, abs(index < speech.count ? speech[index] : 0))
            }
            if Double(peak) > threshold {
                since = 0
            } else if since != .max {
                since += 1
            }
            let target = since <= hold ? duck : 1
            let a = target < gain ? attack : release
            gain = target + a * (gain - target)
            for c in 0..<channels {
                let index = n * channels + c
                out[index] = Float(Double(index < music.count ? music[index] : 0) * gain)
            }
        }
        return out
    }

    @Test("the ducker's output equals its formula within 1e-6, mono and stereo", arguments: [1, 2])
    func formula(channels: Int) throws {
        let library = try PluginLibrary.load(path: Plugins.ducker)
        // The inputs alone (two sinks: one render, each sink's samples kept apart).
        let inputs = try Plugins.compile(Self.yaml(ducked: false, channels: channels), libraries: [library])
        for source in inputs.textSources {
            source.receive(text: "e e")
            source.finishText()
        }
        let renderer = try OfflineRenderer(graph: inputs)
        var streams: [[Float]] = [[], []]
        renderer.output = { sink, buffer in streams[sink] += buffer }
        _ = try renderer.run()
        let sinkNames = inputs.nodes.filter { $0.descriptor.kind == .sink }.map(\.name)
        let music = streams[sinkNames.firstIndex(of: "out")!]
        let speech = streams[sinkNames.firstIndex(of: "out2")!]
        #expect(music.count == 48_000 * channels)
        #expect(speech.count > 0 && speech.count < music.count)

        let graph = try Plugins.compile(Self.yaml(ducked: true, channels: channels), libraries: [library])
        let (ducked, report) = try GraphRendering.render(graph, text: ["e e"])
        let expected = Self.expected(music: music, speech: speech, channels: channels, rate: 48_000)
        #expect(ducked.count == expected.count)
        var worst: Float = 0
        for index in 0..<min(ducked.count, expected.count) { worst = max(worst, abs(ducked[index] - expected[index])) }
        #expect(worst <= 1e-6, "largest difference \(worst)")
        #expect(report.underruns == 0)

        // It did duck: some frames are lowered by the full depth (12 dB ≈ 0.251), and the
        // music comes back to full level after the speech.
        let gains = (0..<expected.count / channels).compactMap { n -> Double? in
            abs(music[n * channels]) > 0.1 ? Double(ducked[n * channels] / music[n * channels]) : nil
        }
        #expect(gains.contains { abs($0 - pow(10, -12.0 / 20)) < 1e-3 })
        #expect(abs(gains.last! - 1) < 1e-3)
    }

    /// The ducker keyed all the time (speech 0.5 against a -30 dBFS threshold, no attack or
    /// release) on music of 1.0, so its output is D(n); `depth` goes 12 → 24 dB after 1000
    /// frames. The output and the largest step between two frames.
    static func liveDepthChange(ramp: Double, channels: Int = 1) throws -> (output: [Float], largestStep: Float) {
        let node = try Plugins.processor("ducker", from: Plugins.ducker, NodeParameters([
            "depth": .number(12), "threshold": .number(-30), "attack": .number(0), "hold": .number(0),
            "release": .number(0), "ramp": .number(ramp),
        ]))
        let live = try #require(node as? any LiveParameterNode, "depth is live")
        let format = StreamFormat.frames(rate: 48_000, channels: channels)
        let bench = try NodeTestBench(node, inputs: [format, format], seed: 3, inputBlocks: 1...200, outputBlocks: 0...200)
        func feed(_ frames: Int) {
            bench.feed([Float](repeating: 1, count: frames * channels), input: 0)
            bench.feed([Float](repeating: 0.5, count: frames * channels), input: 1)
            bench.run()
        }
        feed(1_000)
        live.apply(ParameterChange(parameter: 0, value: 24))  // as the slot does between two steps
        feed(2_000)
        #expect(bench.violations.isEmpty)
        let output = bench.output()
        var largest: Float = 0
        for frame in 1..<(output.count / channels) {
            largest = max(largest, abs(output[frame * channels] - output[(frame - 1) * channels]))
        }
        return (output, largest)
    }

    @Test("a live depth change ramps in a straight line over `ramp` from the frame it applies, never a step", arguments: [1, 2])
    func liveDepthRamps(channels: Int) throws {
        let (output, largestStep) = try Self.liveDepthChange(ramp: 0.02, channels: channels)
        let before = pow(10, -12.0 / 20), after = pow(10, -24.0 / 20)
        let frames = 960  // 0.02 s at 48 kHz
        #expect(output.count == 3_000 * channels)
        for frame in 0..<3_000 {
            // The formula of ducker.c: D(1000 + i) = D + (D' − D)(i + 1)/M, then D'.
            let expected: Double =
                frame < 1_000 ? before
                : frame < 1_000 + frames ? before + (after - before) * Double(frame - 1_000 + 1) / Double(frames) : after
            for channel in 0..<channels {
                let sample = output[frame * channels + channel]
                #expect(abs(Double(sample) - expected) < 1e-6, "frame \(frame): \(sample), not \(expected)")
            }
        }
        // The steepest step is one ramp step, not the jump of 12 dB.
        let rampStep = Float((before - after) / Double(frames))
        #expect(largestStep <= rampStep + 1e-6, "largest step \(largestStep)")
        // Without a ramp the same change is the jump this test would catch.
        let (_, jump) = try Self.liveDepthChange(ramp: 0)
        #expect(abs(Double(jump) - (before - after)) < 1e-6)
    }

    @Test("a sample-rate mismatch between its inputs is a graph error naming the input")
    func formatMismatch() throws {
        let library = try PluginLibrary.load(path: Plugins.ducker)
        let yaml = Self.yaml(ducked: true).replacingOccurrences(of: "wpm: 40, frequency: 700, amplitude: 0.5, rate: 48000", with: "wpm: 40, rate: 24000")
        #expect(throws: GraphDiagnostics.self) { _ = try Plugins.compile(yaml, libraries: [library]) }
        do {
            _ = try Plugins.compile(yaml, libraries: [library])
        } catch let diagnostics as GraphDiagnostics {
            #expect(diagnostics.description.contains("speech"), "\(diagnostics)")
            #expect(diagnostics.description.contains("resampler"), "\(diagnostics)")
        }
    }

    @Test("its descriptor arrives as data: ports, parameters with ranges, defaults and units")
    func descriptor() throws {
        let library = try PluginLibrary.load(path: Plugins.ducker)
        let descriptor = try #require(library.nodeTypes.first).descriptor
        #expect(descriptor.typeName == "ducker")
        #expect(descriptor.kind == .processor)
        #expect(descriptor.inputs.map(\.name) == ["in", "speech"])
        #expect(descriptor.outputs.map(\.name) == ["out"])
        // `ramp` came with live parameters: how long a live depth change takes.
        #expect(descriptor.parameters.map(\.name) == ["depth", "threshold", "attack", "hold", "release", "ramp"])
        let depth = try #require(descriptor.parameter(named: "depth"))
        #expect(depth.type == .number(0...60))
        #expect(depth.defaultValue == .number(12))
        #expect(depth.unit == "dB")
        #expect(descriptor.parameters.filter(\.isLive).map(\.name) == ["depth"])
        #expect(descriptor.parameter(named: "ramp")?.defaultValue == .number(0.02))
        #expect(NodeReference.text(of: descriptor).contains("depth: number in 0…60 (dB), default 12, live"))
    }

    @Test("a value out of the declared range is refused at its line, as for any node")
    func rangeChecked() throws {
        let library = try PluginLibrary.load(path: Plugins.ducker)
        let yaml = Self.yaml(ducked: true).replacingOccurrences(of: "depth: 12.0", with: "depth: 99")
        do {
            _ = try Plugins.compile(yaml, libraries: [library])
            Issue.record("depth 99 was accepted")
        } catch let diagnostics as GraphDiagnostics {
            #expect(diagnostics.description.contains("test.yaml:5:"), "\(diagnostics)")
            #expect(diagnostics.description.contains("'depth'"), "\(diagnostics)")
        }
    }
}
