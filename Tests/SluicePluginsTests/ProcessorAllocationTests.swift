import SluiceAudio
import SluiceGraph
import SluicePlugins
import SluiceTestSupport
import Testing

/// The plugin processor adapter allocates nothing after `prepare`: its `process`, `receive`
/// and `apply` (with the plugin's `process` inside, taking the events they queue) are counted
/// over hundreds of calls.
@Suite(.enabled(if: AllocationCounter.testsEnabled, "a sanitizer runtime owns malloc"))
struct ProcessorAllocationTests {
    /// Every kind of marker, in turn.
    static let markers: [Marker] = [
        Marker(position: 0, event: .discontinuity, isDiscontinuous: true),
        Marker(position: 0, event: .utteranceStart(UtteranceID(3))),
        Marker(position: 0, event: .textSpan(TextSpan(utterance: UtteranceID(3), start: 0, end: 4))),
        Marker(position: 0, event: .utteranceEnd(UtteranceID(3))),
    ]

    static func drive(_ type: String, from path: String, parameters: NodeParameters, inputs: Int) throws -> UInt64 {
        let library = try PluginLibrary.load(path: path)
        let pluginType = try #require(library.graphNodeTypes.first { $0.descriptor.typeName == type })
        var filled = parameters
        for parameter in pluginType.descriptor.parameters where filled[parameter.name] == nil {
            filled[parameter.name] = parameter.defaultValue
        }
        let node = try #require(try pluginType.make(filled) as? any ProcessorNode)
        let formats = [StreamFormat](repeating: .frames(rate: 48_000, channels: 2), count: inputs)
        let outputs = try node.outputFormats(for: formats, context: FormatContext(downstreamRate: nil, blockFrames: 256, isLive: false))
        try node.prepare(PrepareContext(inputFormats: formats, outputFormats: outputs, maximumUnits: 256, blockFrames: 256))
        defer { node.deactivate() }
        let ports = NodePorts(inputs: formats, outputs: outputs)
        let input = UnsafeMutablePointer<Float>.allocate(capacity: 1024 * 2)
        defer { input.deallocate() }
        for index in 0..<1024 * 2 { input[index] = Float(index % 97) / 97 - 0.5 }
        let output = UnsafeMutablePointer<Float>.allocate(capacity: 1024 * 2)
        defer { output.deallocate() }
        // The live parameters, when the type has any: changed as the slot changes them.
        let live = node as? any LiveParameterNode
        let liveIndices = pluginType.descriptor.parameters.indices.filter { pluginType.descriptor.parameters[$0].isLive }
        var generator = SeededGenerator(seed: 7)
        let sizes = (0..<600).map { _ in Int.random(in: 0...1024, using: &generator) }
        func step(_ frames: Int, index: Int) {
            var io = ProcessIO(ports)
            for port in 0..<inputs { ports.setInput(port, base: input, units: frames) }
            ports.setOutput(0, base: output, units: frames)
            if index % 10 == 0 {
                node.receive(Self.markers[(index / 10) % Self.markers.count], on: index % inputs, &io)
                ports.removeMarkers(output: 0)
            }
            if let live, !liveIndices.isEmpty {
                if index % 7 == 0 {
                    live.apply(ParameterChange(parameter: liveIndices[index % liveIndices.count], value: Double(index % 4)))
                }
                // Now and then more changes than one call holds: calls of 0 frames flush them.
                if index % 97 == 0 {
                    for change in 0..<400 { live.apply(ParameterChange(parameter: liveIndices[0], value: Double(change % 2))) }
                }
            }
            node.process(&io)
        }
        // Warm up every path (first-use runtime work), then count.
        for (index, frames) in sizes.prefix(20).enumerated() { step(frames, index: index * 10) }
        step(16, index: 0)
        var allocations: UInt64 = 0
        for (index, frames) in sizes.enumerated() {
            AllocationCounter.begin()
            step(frames, index: index)
            allocations += AllocationCounter.end()
        }
        // The end of one input's stream: it goes on as silence.
        var io = ProcessIO(ports)
        AllocationCounter.begin()
        node.receive(Marker(position: 0, event: .endOfStream), on: inputs - 1, &io)
        step(512, index: 1)
        allocations += AllocationCounter.end()
        // The end of every input: the last events go in a call of 0 frames.
        AllocationCounter.begin()
        for port in 0..<inputs { node.receive(Marker(position: 0, event: .endOfStream), on: port, &io) }
        ports.removeMarkers(output: 0)
        step(0, index: 1)
        allocations += AllocationCounter.end()
        return allocations
    }

    @Test("the C ducker through the adapter, its depth changing live: zero allocations")
    func ducker() throws {
        #expect(try Self.drive("ducker", from: Plugins.ducker, parameters: NodeParameters(), inputs: 2) == 0)
    }

    @Test("the Swift-kit test-gain through the adapter, reading its events: zero allocations")
    func swiftGain() throws {
        let parameters = NodeParameters(["gain": .number(0.5), "gate": .boolean(true)])
        #expect(try Self.drive("test-gain", from: Plugins.swiftTest, parameters: parameters, inputs: 1) == 0)
    }

    @Test("the C test-events recorder through the adapter, with every kind of event: zero allocations")
    func eventRecorder() throws {
        #expect(try Self.drive("test-events", from: Plugins.events, parameters: NodeParameters(["log": .integer(15)]), inputs: 2) == 0)
    }
}
