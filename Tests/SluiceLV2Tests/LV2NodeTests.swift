import Foundation
import SluiceConfig
import SluiceGraph
import SluiceNodes
import SluiceTestSupport
import Testing
@testable import SluiceLV2

/// The `lv2` node with the plugins Debian ships (lv2-examples, swh-lv2, x42-plugins), which
/// the test setup installs: offline renders against `lv2file` (LV2's reference file host)
/// and against each plugin's own definition, presets and state, the worker, and every way a
/// graph can name one wrongly.
@Suite struct LV2NodeTests {
    static let rate = 48_000
    static let amp = "http://lv2plug.in/plugins/eg-amp"
    static let djEQ = "http://plugin.org.uk/swh-plugins/dj_eq_mono"
    static let limiter = "http://plugin.org.uk/swh-plugins/fastLookaheadLimiter"
    static let convolver = "http://gareus.org/oss/lv2/zeroconvolv#Mono"

    func registry() -> NodeRegistry {
        var registry = BuiltinNodes.registry()
        try! registry.register(LV2NodeType.type())
        return registry
    }

    /// Renders `samples` (interleaved, `channels` a frame) through `node` (the YAML of an
    /// `lv2` node's mapping) offline.
    func render(_ samples: [Float], channels: Int, node: String) throws -> [Float] {
        let folder = TemporaryFolder("sluice-lv2")
        try WAVFile.write(samples, channels: channels, rate: Self.rate, to: folder.path("in.wav"))
        return try render(file: folder.path("in.wav"), node: node, folder: folder)
    }

    /// Renders `file` through `node` (nil: straight through) offline.
    func render(file: String, node: String?, folder: TemporaryFolder) throws -> [Float] {
        let graph = try GraphCompiler(registry: registry()).compile(GraphFile.parse(
            """
            nodes:
              in:     { type: wav.source, path: "\(file)" }
              \(node.map { "effect: \($0)" } ?? "")
              out:    { type: null.sink, rate: \(Self.rate) }
            links: [\(node == nil ? "in -> out" : "in -> effect -> out")]
            playback: { strategy: stream }
            """, file: folder.path("graph.yaml"), baseDirectory: folder.path))
        return try GraphRendering.render(graph).0
    }

    func check(_ node: String, folder: String? = nil) -> [String] {
        do {
            _ = try GraphCompiler(registry: registry()).compile(GraphFile.parse(
                """
                nodes:
                  tone:   { type: tone, duration: 0.1 }
                  effect: \(node)
                  out:    { type: null.sink }
                links: [tone -> effect -> out]
                """, file: "effect.yaml", baseDirectory: folder))
            return []
        } catch {
            return error.diagnostics.map(\.description)
        }
    }

    /// `lv2file` over `input` (a float WAV file) with `arguments` before the plugin's URI.
    func lv2file(_ input: String, _ output: String, _ arguments: [String], plugin: String) throws {
        let outcome = try CommandRunner.run(
            executable: URL(fileURLWithPath: "/usr/bin/lv2file"), ["-i", input, "-o", output, "--ignore-clipping"] + arguments + [plugin],
            timeout: 60)
        try #require(outcome.status == 0, "lv2file: \(outcome.standardError)")
    }

    @Test("eg-amp renders what lv2file renders with the same gain, sample for sample")
    func ampEqualsLv2file() throws {
        let folder = TemporaryFolder("sluice-lv2file-amp")
        let input = Signals.noise(count: 48_013, amplitude: 0.5, seed: 21)
        try WAVFile.write(input, channels: 1, rate: Self.rate, to: folder.path("in.wav"))
        try lv2file(folder.path("in.wav"), folder.path("ref.wav"), ["-p", "gain:-6.5"], plugin: Self.amp)
        let reference = try render(file: folder.path("ref.wav"), node: nil, folder: folder)
        let output = try render(file: folder.path("in.wav"), node: "{ type: lv2, uri: \"\(Self.amp)\", gain: -6.5 }", folder: folder)
        try #require(output.count == input.count)
        #expect(firstDifference(output, reference) == nil)
        #expect(abs(output[100] - input[100] * powf(10, -6.5 / 20)) < 1e-6)
    }

    @Test("swh's DJ EQ renders what lv2file renders with the same controls, within −120 dB")
    func equaliserEqualsLv2file() throws {
        let folder = TemporaryFolder("sluice-lv2file-eq")
        let input = Signals.noise(count: 96_000, amplitude: 0.5, seed: 22)
        try WAVFile.write(input, channels: 1, rate: Self.rate, to: folder.path("in.wav"))
        try lv2file(folder.path("in.wav"), folder.path("ref.wav"), ["-p", "lo:-12", "-p", "mid:4", "-p", "hi:-30"], plugin: Self.djEQ)
        let reference = try render(file: folder.path("ref.wav"), node: nil, folder: folder)
        let output = try render(file: folder.path("in.wav"), node: "{ type: lv2, uri: \"\(Self.djEQ)\", lo: -12, mid: 4, hi: -30 }", folder: folder)
        try #require(output.count == reference.count)
        let worst = zip(output, reference).map { abs(Double($0) - Double($1)) }.max() ?? 0
        #expect(worst <= 1e-6, "largest difference \(20 * log10(max(worst, 1e-30))) dB")
        #expect(Signals.power(output) > 1e-4, "the EQ let nothing through")
        #expect(firstDifference(output, input) != nil, "the EQ changed nothing")
    }

    @Test("a mono plugin on a stereo stream runs once per channel")
    func monoPluginPerChannel() throws {
        let input = Signals.noise(count: 2 * 5_003, amplitude: 0.9, seed: 23)
        let output = try render(input, channels: 2, node: "{ type: lv2, uri: \"\(Self.amp)\", gain: -20 }")
        try #require(output.count == input.count)
        let worst = zip(output, input).map { abs($0 - $1 * 0.1) }.max() ?? 1
        #expect(worst < 1e-6)
    }

    /// x42's convolver loads its impulse response with the worker: `state:` names one (a
    /// file the test writes), the worker loads it while the node is prepared, and an impulse
    /// through the node comes out as that response, as late as the latency it reports.
    @Test("a state file restores the convolver's impulse response through its worker; the cycle allocates nothing")
    func stateThroughWorker() throws {
        let folder = TemporaryFolder("sluice-lv2-state")
        var response = [Float](repeating: 0, count: 200)
        response[0] = 0.5
        response[37] = -0.25
        response[199] = 0.125
        try WAVFile.write(response, channels: 1, rate: Self.rate, to: folder.path("ir.wav"))
        _ = try folder.write(Self.convolverState(ir: "ir.wav"), to: "state.ttl")

        // Prepared by hand: the cycle, with the worker's response delivered, allocates nothing.
        let type = try LV2NodeType.type(of: LV2World.shared.plugin(uri: Self.convolver))
        let node = try #require(try type.make(NodeParameters(["state": .string(folder.path("state.ttl"))])) as? LV2Node)
        try node.prepare(PrepareContext(
            inputFormats: [.frames(rate: Self.rate, channels: 1)], outputFormats: [.frames(rate: Self.rate, channels: 1)],
            maximumUnits: 4096, blockFrames: 256))
        defer { node.deactivate() }
        let latency = node.latencyFrames
        #expect(latency == Int(node.controlOutputs().first { $0.symbol == "latency" }?.value ?? -1))
        var block = [Float](repeating: 0, count: 512)
        block[0] = 1
        var result = [Float](repeating: 0, count: 512)
        let allocations = AllocationCounter.count {
            _ = node.render(&block, &result, frames: 512)
        }
        #expect(abs(result[latency] - 0.5) < 1e-6 && abs(result[latency + 37] + 0.25) < 1e-6, "\(result[latency]), \(result[latency + 37])")
        if AllocationCounter.testsEnabled { #expect(allocations == 0) }

        // The same through a graph file, offline.
        var impulse = [Float](repeating: 0, count: 4_800)
        impulse[1_000] = 1
        let output = try render(impulse, channels: 1, node: "{ type: lv2, uri: \"\(Self.convolver)\", state: \(folder.path("state.ttl")) }")
        var expected = [Float](repeating: 0, count: impulse.count)
        for (index, value) in response.enumerated() { expected[1_000 + latency + index] = value }
        let worst = zip(output, expected).map { abs($0 - $1) }.max() ?? 1
        #expect(worst < 1e-6, "largest difference \(worst)")
    }

    /// Prepares `node` (an `lv2` node's parameters) by hand, mono at the test rate.
    func prepared(_ uri: String, _ parameters: [String: ParameterValue] = [:]) throws -> LV2Node {
        let type = try LV2NodeType.type(of: LV2World.shared.plugin(uri: uri))
        let node = try #require(try type.make(NodeParameters(parameters)) as? LV2Node)
        try node.prepare(PrepareContext(
            inputFormats: [.frames(rate: Self.rate, channels: 1)], outputFormats: [.frames(rate: Self.rate, channels: 1)],
            maximumUnits: 4096, blockFrames: 256))
        return node
    }

    @Test("a saved state restores what was saved: eg-amp's gain as last changed live, the convolver's impulse response (a property its worker loads)")
    func savedStateRestores() throws {
        let folder = TemporaryFolder("sluice-lv2-save")
        let amp = try prepared(Self.amp)
        defer { amp.deactivate() }
        let control = try #require(amp.plugin.controls.firstIndex { $0.symbol == "gain" })
        let gain = LV2NodeType.pickingParameters.count + control
        amp.apply(ParameterChange(parameter: gain, value: -6))
        let file = try amp.saveState(into: folder.path("amp"))
        #expect(file == folder.path("amp") + "/state.ttl")
        let input = Signals.noise(count: 4_801, amplitude: 0.5, seed: 24)
        let restored = try render(input, channels: 1, node: "{ type: lv2, uri: \"\(Self.amp)\", state: \(folder.path("amp")) }")
        let worst = zip(restored, input).map { abs($0 - $1 * powf(10, -6.0 / 20)) }.max() ?? 1
        #expect(restored.count == input.count && worst < 1e-6, "largest difference \(worst)")

        var response = [Float](repeating: 0, count: 100)
        response[0] = -0.5
        response[61] = 0.25
        try WAVFile.write(response, channels: 1, rate: Self.rate, to: folder.path("ir.wav"))
        _ = try folder.write(Self.convolverState(ir: "ir.wav"), to: "given.ttl")
        let convolver = try prepared(Self.convolver, ["state": .string(folder.path("given.ttl"))])
        defer { convolver.deactivate() }
        let latency = convolver.latencyFrames
        _ = try convolver.saveState(into: folder.path("convolver"))
        var impulse = [Float](repeating: 0, count: 2_400)
        impulse[500] = 1
        let output = try render(impulse, channels: 1, node: "{ type: lv2, uri: \"\(Self.convolver)\", state: \(folder.path("convolver")) }")
        #expect(abs(output[500 + latency] + 0.5) < 1e-6 && abs(output[561 + latency] - 0.25) < 1e-6,
                "\(output[500 + latency]), \(output[561 + latency])")
    }

    @Test("a state is saved into a real folder of the user's own: a relative path, a link, a file and someone else's folder are refused, and nothing is written")
    func stateFolderRefusals() throws {
        let folder = TemporaryFolder("sluice-lv2-save-refused")
        let amp = try prepared(Self.amp)
        defer { amp.deactivate() }
        func refusal(_ path: String) -> String? {
            do {
                _ = try amp.saveState(into: path)
                return nil
            } catch {
                return error.message
            }
        }
        #expect(refusal("amp-state")?.contains("is not an absolute path") == true)
        try FileManager.default.createDirectory(atPath: folder.path("real"), withIntermediateDirectories: false)
        try FileManager.default.createSymbolicLink(atPath: folder.path("link"), withDestinationPath: folder.path("real"))
        #expect(refusal(folder.path("link"))?.contains("is a symbolic link") == true)
        _ = try folder.write("not a folder", to: "file")
        #expect(refusal(folder.path("file"))?.contains("exists and is not a folder") == true)
        #expect(refusal(folder.path("missing/deeper"))?.contains("cannot make the folder") == true)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path("real")).isEmpty)
        if geteuid() == 0 {
            try FileManager.default.createDirectory(atPath: folder.path("theirs"), withIntermediateDirectories: false)
            #expect(chown(folder.path("theirs"), 65_534, 65_534) == 0)
            #expect(refusal(folder.path("theirs"))?.contains("belongs to another user (uid 65534)") == true)
        }
        #expect(refusal(folder.path("real")) == nil)
    }

    @Test("a preset restores by label or URI: the convolver's No-OP passes an impulse through")
    func presetRestores() throws {
        var impulse = [Float](repeating: 0, count: 2_400)
        impulse[300] = 0.75
        for preset in ["No-OP Mono", "http://gareus.org/oss/lv2/zeroconvolv/pset#noopMono"] {
            let output = try render(impulse, channels: 1, node: "{ type: lv2, uri: \"\(Self.convolver)\", preset: \"\(preset)\" }")
            let peak = output.indices.max { abs(output[$0]) < abs(output[$1]) }!
            #expect(abs(output[peak] - 0.75) < 1e-6, "\(preset): \(output[peak])")
            #expect(output.enumerated().allSatisfy { $0.offset == peak || abs($0.element) < 1e-6 }, "\(preset)")
        }
    }

    @Test("a preset's port values restore, and the file's own parameters win over them")
    func presetPortValues() throws {
        let folder = TemporaryFolder("sluice-lv2-ports")
        // A state file in the form jalv saves: eg-amp's gain port at −20 dB.
        _ = try folder.write("""
            @prefix lv2: <http://lv2plug.in/ns/lv2core#> .
            @prefix pset: <http://lv2plug.in/ns/ext/presets#> .
            <> a pset:Preset ; lv2:appliesTo <\(Self.amp)> ;
               lv2:port [ lv2:symbol "gain" ; pset:value -20.0 ] .
            """, to: "state.ttl")
        let input = [Float](repeating: 0.5, count: 1_000)
        let restored = try render(input, channels: 1, node: "{ type: lv2, uri: \"\(Self.amp)\", state: \(folder.path) }")
        #expect(abs(restored[999] - 0.05) < 1e-6, "\(restored[999])")
        let overridden = try render(input, channels: 1, node: "{ type: lv2, uri: \"\(Self.amp)\", state: \(folder.path("state.ttl")), gain: 0 }")
        #expect(abs(overridden[999] - 0.5) < 1e-6, "\(overridden[999])")
    }

    @Test("lv2:reportsLatency becomes the node's latency: an impulse comes out exactly that much later")
    func reportedLatency() throws {
        let type = try LV2NodeType.type(of: LV2World.shared.plugin(uri: Self.limiter))
        let node = try #require(try type.make(NodeParameters([:])) as? LV2Node)
        try node.prepare(PrepareContext(
            inputFormats: [.frames(rate: Self.rate, channels: 2)], outputFormats: [.frames(rate: Self.rate, channels: 2)],
            maximumUnits: 4096, blockFrames: 256))
        defer { node.deactivate() }
        #expect(node.latencyFrames > 0)
        #expect(!node.processesFrameForFrame)
        #expect(node.frameKernel == nil)
        var impulse = [Float](repeating: 0, count: 2 * 24_000)
        impulse[2 * 1_000] = 0.5
        impulse[2 * 1_000 + 1] = 0.5
        let output = try render(impulse, channels: 2, node: "{ type: lv2, uri: \"\(Self.limiter)\" }")
        let peak = output.indices.max { abs(output[$0]) < abs(output[$1]) }!
        #expect(peak / 2 - 1_000 == node.latencyFrames, "peak at frame \(peak / 2), latency \(node.latencyFrames)")
    }

    @Test("control ports become parameters by symbol, with the plugin's ranges, defaults, toggles and enumerations")
    func parametersFromPorts() throws {
        let amp = try LV2NodeType.type(of: LV2World.shared.plugin(uri: Self.amp)).descriptor.parameters
        #expect(amp.map(\.name) == ["uri", "preset", "state", "gain"])
        #expect(amp[3].type == .number(-90...24))
        #expect(amp[3].defaultValue == .number(0))
        #expect(amp[3].isLive)

        // x42's fil4: a toggle (`enable`) becomes an integer 0…1.
        let equaliser = try LV2World.shared.plugin(uri: "http://gareus.org/oss/lv2/fil4#mono")
        let enable = try #require(equaliser.controls.first { $0.symbol == "enable" })
        #expect(enable.isToggle)
        #expect(enable.parameter.type == .integer(0...1))
        #expect(!equaliser.controlOutputs.isEmpty)
        // x42's balance: an enumeration with its labelled values.
        let balance = try LV2World.shared.plugin(uri: "http://gareus.org/oss/lv2/balance")
        let unity = try #require(balance.controls.first { $0.symbol == "unitygain" })
        #expect(unity.isEnumeration)
        #expect(unity.parameter.type == .integer(0...2))
        #expect(unity.scalePoints.map(\.value) == [0, 1, 2])
        #expect(unity.parameter.summary.contains("0 = "), "\(unity.parameter.summary)")
        // Its values, named, for a control that offers them as a choice.
        #expect(unity.parameter.namedValues.map(\.label) == ["Balance", "Unity Gain - Equal Amplitude", "Seesaw - Equal Power"])
        #expect(unity.parameter.namedValues.map(\.value) == [0, 1, 2])
        #expect(enable.parameter.namedValues.isEmpty, "a toggle is not an enumeration")
    }

    @Test("a check names the file, line and fix: unknown URI, bad value, unknown preset, someone else's state")
    func checkErrors() throws {
        let unknown = check("{ type: lv2, uri: \"http://lv2plug.in/plugins/eg-ampp\" }")
        #expect(unknown.count == 1)
        #expect(unknown.first?.contains("effect.yaml:3:") == true, "\(unknown)")
        #expect(unknown.first?.contains("no LV2 plugin <http://lv2plug.in/plugins/eg-ampp> is installed") == true, "\(unknown)")
        #expect(unknown.first?.contains("did you mean <http://lv2plug.in/plugins/eg-amp>") == true, "\(unknown)")

        let outOfRange = check("{ type: lv2, uri: \"\(Self.amp)\", gain: 30 }")
        #expect(outOfRange.count == 1)
        #expect(outOfRange.first?.contains("parameter 'gain' of node 'effect'") == true, "\(outOfRange)")
        #expect(outOfRange.first?.contains("-90…24") == true, "\(outOfRange)")

        let notANumber = check("{ type: lv2, uri: \"\(Self.amp)\", gain: .nan }")
        #expect(notANumber.count == 1, "\(notANumber)")

        let preset = check("{ type: lv2, uri: \"\(Self.convolver)\", preset: \"No-OP Stereo\" }")
        #expect(preset.first?.contains("has no preset 'No-OP Stereo'") == true, "\(preset)")
        #expect(preset.first?.contains("its presets: 'No-OP Mono'") == true, "\(preset)")

        let folder = TemporaryFolder("sluice-lv2-check")
        _ = try folder.write(Self.convolverState(ir: "ir.wav"), to: "state.ttl")
        let foreign = check("{ type: lv2, uri: \"\(Self.amp)\", state: state.ttl }", folder: folder.path)
        #expect(foreign.first?.contains("is the state of <\(Self.convolver)>, not of <\(Self.amp)>") == true, "\(foreign)")
        let missing = check("{ type: lv2, uri: \"\(Self.amp)\", state: nowhere.ttl }", folder: folder.path)
        #expect(missing.first?.contains("cannot read LV2 state file") == true, "\(missing)")
        let both = check("{ type: lv2, uri: \"\(Self.convolver)\", state: state.ttl, preset: \"No-OP Mono\" }", folder: folder.path)
        #expect(both.first?.contains("a preset or a state, not both") == true, "\(both)")

        // An instrument (no audio input) is not an effect.
        let instrument = check("{ type: lv2, uri: \"http://lv2plug.in/plugins/eg-sampler\" }")
        #expect(instrument.first?.contains("0 audio inputs") == true, "\(instrument)")
    }

    @Test("a live change by symbol reaches the plugin from the next frame, clamped, without allocating")
    func liveChangeBySymbol() throws {
        let type = try LV2NodeType.type(of: LV2World.shared.plugin(uri: Self.amp))
        let gainIndex = try #require(type.descriptor.parameters.firstIndex { $0.name == "gain" })
        let node = try #require(try type.make(NodeParameters(["gain": .number(0)])) as? LV2Node)
        try node.prepare(PrepareContext(
            inputFormats: [.frames(rate: Self.rate, channels: 1)], outputFormats: [.frames(rate: Self.rate, channels: 1)],
            maximumUnits: 4096, blockFrames: 256))
        defer { node.deactivate() }
        let kernel = try #require(node.frameKernel)
        var input = [Float](repeating: 0.5, count: 256)
        var output = [Float](repeating: 0, count: 256)
        #expect(kernel.function(kernel.context, &input, &output, 256))
        #expect(output.allSatisfy { abs($0 - 0.5) < 1e-6 })
        node.apply(ParameterChange(parameter: gainIndex, value: -6.0206))
        #expect(node.controlValue("gain") == Float(-6.0206))
        node.apply(ParameterChange(parameter: gainIndex, value: 1e300))
        #expect(node.controlValue("gain") == 24)
        node.apply(ParameterChange(parameter: gainIndex, value: -6.0206))
        let allocations = AllocationCounter.count {
            input.withUnsafeMutableBufferPointer { buffer in
                _ = kernel.function(kernel.context, buffer.baseAddress!, buffer.baseAddress!, 256)
            }
        }
        // eg-amp smooths nothing: the whole block at the new gain.
        #expect(input.allSatisfy { abs($0 - 0.25) < 1e-5 }, "\(input[0])")
        if AllocationCounter.testsEnabled { #expect(allocations == 0) }
    }

    @Test("control outputs are posted by the cycle and taken as reports: x42's equaliser's peak meter reads a −6 dBFS sine; the cycle allocates nothing")
    func controlOutputsReported() throws {
        let type = try LV2NodeType.type(of: LV2World.shared.plugin(uri: "http://gareus.org/oss/lv2/fil4#mono"))
        let node = try #require(try type.make(NodeParameters([:])) as? LV2Node)
        try node.prepare(PrepareContext(
            inputFormats: [.frames(rate: Self.rate, channels: 1)], outputFormats: [.frames(rate: Self.rate, channels: 1)],
            maximumUnits: 4096, blockFrames: 256))
        defer { node.deactivate() }
        var input = Signals.sine(frequency: 997, sampleRate: Self.rate, frames: 4_800, amplitude: 0.5)
        var output = [Float](repeating: 0, count: input.count)
        // The plugin's first run makes what it makes lazily (the plugin's affair); then the cycle
        // allocates nothing.
        _ = node.render(&input, &output, frames: 256)
        let allocations = AllocationCounter.count { _ = node.render(&input, &output, frames: input.count) }
        if AllocationCounter.testsEnabled { #expect(allocations == 0) }
        let reports = node.takeReports()
        let peak = try #require(reports.first { $0.name == "peak" }, "\(reports)")
        // The plugin's own meter and ballistics: within half a dB of the sine's −6.02 dB.
        #expect(abs(peak.value - -6.02) < 0.5, "\(peak)")
        #expect(peak.frame == 256 + 4_800, "\(peak)")
        #expect(node.takeReports().isEmpty, "reports are taken once")
    }

    /// A state file (as lilv writes one) that gives the convolver `ir` (relative to the file).
    static func convolverState(ir: String) -> String {
        """
        @prefix lv2: <http://lv2plug.in/ns/lv2core#> .
        @prefix pset: <http://lv2plug.in/ns/ext/presets#> .
        @prefix state: <http://lv2plug.in/ns/ext/state#> .
        <> a pset:Preset ;
           lv2:appliesTo <\(convolver)> ;
           state:state [ <http://gareus.org/oss/lv2/zeroconvolv#ir> <\(ir)> ] .
        """
    }
}
