import Foundation
import SluiceConfig
import SluiceGraph
import SluiceNodes
import SluiceTestSupport
import Testing
@testable import SluiceLADSPA

/// The `ladspa` node with the plugins Debian ships (ladspa-sdk's examples, swh-plugins), which
/// the test setup installs: offline renders against each plugin's published transfer
/// function, the parameters its ports give, and every way a graph can name one wrongly.
@Suite struct LADSPANodeTests {
    static let rate = 48_000

    func registry() -> NodeRegistry {
        var registry = BuiltinNodes.registry()
        try! registry.register(LADSPANodeType.type(searchPath: .standard(environment: nil)))
        return registry
    }

    /// Renders `samples` (interleaved, `channels` a frame) through `node` (the YAML of a
    /// `ladspa` node's mapping) offline.
    func render(_ samples: [Float], channels: Int, node: String) throws -> [Float] {
        let folder = TemporaryFolder("sluice-ladspa")
        try WAVFile.write(samples, channels: channels, rate: Self.rate, to: folder.path("in.wav"))
        return try render(file: folder.path("in.wav"), node: node, folder: folder)
    }

    func render(file: String, node: String, folder: TemporaryFolder) throws -> [Float] {
        let graph = try GraphCompiler(registry: registry()).compile(GraphFile.parse(
            """
            nodes:
              in:     { type: wav.source, path: "\(file)" }
              effect: \(node)
              out:    { type: null.sink, rate: \(Self.rate) }
            links: [in -> effect -> out]
            playback: { strategy: stream }
            """, file: folder.path("graph.yaml"), baseDirectory: folder.path))
        return try GraphRendering.render(graph).0
    }

    func check(_ node: String) -> [String] {
        do {
            _ = try GraphCompiler(registry: registry()).compile(GraphFile.parse(
                """
                nodes:
                  tone:   { type: tone, duration: 0.1 }
                  effect: \(node)
                  out:    { type: null.sink }
                links: [tone -> effect -> out]
                """, file: "effect.yaml"))
            return []
        } catch {
            return error.diagnostics.map(\.description)
        }
    }

    @Test("amp_mono on a stereo stream runs once per channel: every sample times the gain, exactly")
    func monoPluginPerChannel() throws {
        let input = Signals.noise(count: 2 * 10_007, amplitude: 0.9, seed: 7)
        let output = try render(input, channels: 2, node: "{ type: ladspa, library: amp.so, label: amp_mono, gain: 0.5 }")
        #expect(output.count == input.count)
        #expect(firstDifference(output, input.map { $0 * 0.5 }) == nil)
    }

    @Test("amp_stereo takes the two channels on its two ports")
    func stereoPlugin() throws {
        let input = Signals.noise(count: 2 * 4_801, amplitude: 0.9, seed: 8)
        let output = try render(input, channels: 2, node: "{ type: ladspa, library: amp, label: amp_stereo, gain: 2 }")
        #expect(firstDifference(output, input.map { $0 * 2 }) == nil)
    }

    @Test("delay_5s follows its transfer function: (1 − w)·x[n] + w·x[n − d·rate]")
    func delayTransferFunction() throws {
        var impulse = [Float](repeating: 0, count: Self.rate / 2)
        impulse[100] = 1
        let output = try render(impulse, channels: 1, node: "{ type: ladspa, library: delay.so, label: delay_5s, delay-seconds: 0.01, dry-wet-balance: 0.25 }")
        var expected = [Float](repeating: 0, count: impulse.count)
        expected[100] = 0.75
        expected[100 + 480] = 0.25
        #expect(firstDifference(output, expected) == nil)
    }

    @Test("swh's DJ EQ renders what ladspa-sdk's applyplugin renders with the same controls, to its 16-bit output's rounding")
    func equalsApplyplugin() throws {
        let folder = TemporaryFolder("sluice-ladspa-applyplugin")
        let input = Signals.noise(count: 48_000, amplitude: 0.5, seed: 11)
        try WAVFile.write(input, channels: 1, rate: Self.rate, to: folder.path("in.wav"), sixteenBit: true)
        let outcome = try CommandRunner.run(
            executable: URL(fileURLWithPath: "/usr/bin/applyplugin"), [folder.path("in.wav"), folder.path("ref.wav"), "dj_eq_1901.so", "dj_eq_mono", "-12", "4", "-30"],
            timeout: 60, environment: ["LADSPA_PATH": "/usr/lib/ladspa"])
        try #require(outcome.status == 0, "applyplugin: \(outcome.standardError)")
        let reference = try render(file: folder.path("ref.wav"), node: "{ type: ladspa, library: amp.so, label: amp_mono, gain: 1 }", folder: folder)
        let output = try render(
            file: folder.path("in.wav"), node: "{ type: ladspa, library: dj_eq_1901.so, label: dj_eq_mono, lo-gain-db: -12, mid-gain-db: 4, hi-gain-db: -30 }",
            folder: folder)
        try #require(output.count == reference.count)
        let worst = zip(output, reference).map { abs(Double($0) - Double($1)) }.max() ?? 0
        // applyplugin writes 16-bit samples: half a step of rounding, and a step where it clips.
        #expect(worst <= 1.0 / 32768, "largest difference \(worst * 32768) steps")
        #expect(Signals.power(output) > 1e-4, "the EQ let nothing through")
    }

    @Test("a plugin's `latency` output becomes the node's latency")
    func reportedLatency() throws {
        let library = try LADSPANodeType.open("fast_lookahead_limiter_1913.so", in: .standard(environment: nil), base: nil)
        let plugin = try #require(library.plugin(label: "fastLookaheadLimiter"))
        #expect(plugin.latencyPort != nil)
        let node = try #require(try LADSPANodeType.type(of: plugin).make(NodeParameters([:])) as? LADSPANode)
        try node.prepare(PrepareContext(
            inputFormats: [.frames(rate: 48_000, channels: 2)], outputFormats: [.frames(rate: 48_000, channels: 2)],
            maximumUnits: 4096, blockFrames: 256))
        defer { node.deactivate() }
        #expect(node.latencyFrames > 0)
        #expect(!node.processesFrameForFrame)
        #expect(node.frameKernel == nil)
        // The latency it reports is the delay it adds: an impulse comes out that much later.
        var impulse = [Float](repeating: 0, count: 2 * 24_000)
        impulse[2 * 1_000] = 0.5
        impulse[2 * 1_000 + 1] = 0.5
        let output = try render(impulse, channels: 2, node: "{ type: ladspa, library: fast_lookahead_limiter_1913.so, label: fastLookaheadLimiter }")
        let peak = output.indices.max { abs(output[$0]) < abs(output[$1]) }!
        #expect(peak / 2 - 1_000 == node.latencyFrames, "peak at frame \(peak / 2), latency \(node.latencyFrames)")
    }

    @Test("port names become parameter names, ranges and defaults come from the hints")
    func parametersFromPorts() throws {
        let library = try LADSPANodeType.open("delay.so", in: .standard(environment: nil), base: nil)
        let plugin = try #require(library.plugin(label: "delay_5s"))
        let type = try LADSPANodeType.type(of: plugin)
        let parameters = type.descriptor.parameters
        #expect(parameters.map(\.name) == ["library", "label", "delay-seconds", "dry-wet-balance"])
        #expect(parameters[2].type == .number(0...5))
        #expect(parameters[2].defaultValue == .number(1))
        #expect(parameters[3].defaultValue == .number(0.5))
        #expect(parameters[2...].allSatisfy { $0.isLive })
        #expect(LADSPAPlugin.symbol(for: "Dry/Wet Balance") == "dry-wet-balance")
        #expect(LADSPAPlugin.symbol(for: "Cutoff Frequency (Hz)") == "cutoff-frequency-hz")
        #expect(LADSPAPlugin.symbol(for: "(!)") == "control")
    }

    @Test("a control whose limits scale with the rate is checked at the highest rate, its default left to the node")
    func rateRelativeControl() throws {
        // ladspa-sdk's low-pass filter: "Cutoff Frequency (Hz)", 0 … 0.5 × rate, default 440.
        let library = try LADSPANodeType.open("filter.so", in: .standard(environment: nil), base: nil)
        let plugin = try #require(library.plugin(label: "lpf"))
        let cutoff = try #require(plugin.controls.first)
        #expect(cutoff.isRateRelative)
        #expect(cutoff.range(rate: 48_000) == 0...24_000)
        #expect(cutoff.parameter.type == .number(0...192_000))
        #expect(cutoff.defaultValue(rate: 48_000) == 440)
    }

    @Test("the plugin's own check names the file, line, column and fix")
    func checkErrors() {
        let unknownLibrary = check("{ type: ladspa, library: ampp.so, label: amp_mono }")
        #expect(unknownLibrary.count == 1)
        #expect(unknownLibrary.first?.contains("effect.yaml:3:") == true, "\(unknownLibrary)")
        #expect(unknownLibrary.first?.contains("no LADSPA library 'ampp.so'") == true, "\(unknownLibrary)")
        #expect(unknownLibrary.first?.contains("did you mean 'amp.so'?") == true, "\(unknownLibrary)")

        let unknownLabel = check("{ type: ladspa, library: amp.so, label: amp_mno }")
        #expect(unknownLabel.first?.contains("has no LADSPA plugin labelled 'amp_mno'") == true, "\(unknownLabel)")
        #expect(unknownLabel.first?.contains("did you mean 'amp_mono'?") == true, "\(unknownLabel)")

        let outOfRange = check("{ type: ladspa, library: delay.so, label: delay_5s, delay-seconds: 7 }")
        #expect(outOfRange.count == 1)
        #expect(outOfRange.first?.contains("parameter 'delay-seconds' of node 'effect'") == true, "\(outOfRange)")
        #expect(outOfRange.first?.contains("0…5") == true, "\(outOfRange)")

        let unknownParameter = check("{ type: ladspa, library: delay.so, label: delay_5s, delay: 0.1 }")
        #expect(unknownParameter.first?.contains("has no parameter 'delay'") == true, "\(unknownParameter)")
        #expect(unknownParameter.first?.contains("delay-seconds") == true, "\(unknownParameter)")

        let missing = check("{ type: ladspa, library: amp.so }")
        #expect(missing.first?.contains("needs parameter 'label'") == true, "\(missing)")

        // A generator (no audio input) is not an effect.
        let generator = check("{ type: ladspa, library: sine.so, label: sine_fcac }")
        #expect(generator.first?.contains("0 audio inputs") == true, "\(generator)")

        // A stereo plugin fed mono: the format error names the channel count.
        let mono = check("{ type: ladspa, library: amp.so, label: amp_stereo }")
        #expect(mono.first?.contains("'effect' takes stereo") == true, "\(mono)")
        #expect(mono.first?.contains("insert a channel-map") == true, "\(mono)")
    }

    @Test("a library others may write, a file that is not a library, one that is not LADSPA: refused with the reason")
    func untrustedAndForeignLibraries() throws {
        let folder = TemporaryFolder("sluice-ladspa-trust")
        let copy = try folder.copy("/usr/lib/ladspa/amp.so", as: "amp.so")
        chmod(copy, 0o664)
        let writable = check("{ type: ladspa, library: \(copy), label: amp_mono }")
        #expect(writable.first?.contains("may be written by other users") == true, "\(writable)")

        let text = try folder.write("not a library", to: "text.so").path
        chmod(text, 0o644)
        let notLibrary = check("{ type: ladspa, library: \(text), label: x }")
        #expect(notLibrary.first?.contains("is not a shared library") == true, "\(notLibrary)")

        let foreign = check("{ type: ladspa, library: /usr/lib/x86_64-linux-gnu/libm.so.6, label: x }")
        #expect(foreign.first?.contains("is not a LADSPA library") == true, "\(foreign)")
    }

    @Test("a live change by name reaches the plugin from the next frame, clamped to the rate's limits")
    func liveChangeByName() throws {
        let library = try LADSPANodeType.open("amp.so", in: .standard(environment: nil), base: nil)
        let plugin = try #require(library.plugin(label: "amp_mono"))
        let type = try LADSPANodeType.type(of: plugin)
        let gainIndex = try #require(type.descriptor.parameters.firstIndex { $0.name == "gain" })
        let node = try #require(try type.make(NodeParameters(["gain": .number(1)])) as? LADSPANode)
        try node.prepare(PrepareContext(
            inputFormats: [.frames(rate: 48_000, channels: 1)], outputFormats: [.frames(rate: 48_000, channels: 1)],
            maximumUnits: 4096, blockFrames: 256))
        defer { node.deactivate() }
        let kernel = try #require(node.frameKernel)
        var input = [Float](repeating: 0.5, count: 256)
        var output = [Float](repeating: 0, count: 256)
        #expect(kernel.function(kernel.context, &input, &output, 256))
        #expect(output.allSatisfy { $0 == 0.5 })
        node.apply(ParameterChange(parameter: gainIndex, value: 0.25))
        #expect(node.controlValue("gain") == 0.25)
        // In place, as the JACK cycle calls it.
        let allocations = AllocationCounter.count {
            input.withUnsafeMutableBufferPointer { buffer in
                _ = kernel.function(kernel.context, buffer.baseAddress!, buffer.baseAddress!, 256)
            }
        }
        #expect(input.allSatisfy { $0 == 0.125 })
        if AllocationCounter.testsEnabled { #expect(allocations == 0) }
    }
}
