import SluiceAudio
import SluiceGraph
import SluicePlugins
import SluiceTestSupport
import Testing

/// The plugin processor adapter allocates nothing after `prepare`: its `process` and
/// `receive` (with the plugin's `process` inside) are counted over hundreds of calls.
@Suite(.enabled(if: AllocationCounter.testsEnabled, "a sanitizer runtime owns malloc"))
struct ProcessorAllocationTests {
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
        var generator = SeededGenerator(seed: 7)
        let sizes = (0..<600).map { _ in Int.random(in: 0...1024, using: &generator) }
        func step(_ frames: Int, marker: Bool) {
            var io = ProcessIO(ports)
            for port in 0..<inputs { ports.setInput(port, base: input, units: frames) }
            ports.setOutput(0, base: output, units: frames)
            if marker {
                node.receive(Marker(position: 0, event: .discontinuity, isDiscontinuous: true), on: 0, &io)
                ports.removeMarkers(output: 0)
            }
            node.process(&io)
        }
        // Warm up every path (first-use runtime work), then count.
        for frames in sizes.prefix(20) { step(frames, marker: true) }
        var allocations: UInt64 = 0
        for (index, frames) in sizes.enumerated() {
            AllocationCounter.begin()
            step(frames, marker: index % 10 == 0)
            allocations += AllocationCounter.end()
        }
        // The end of one input's stream: it goes on as silence.
        var io = ProcessIO(ports)
        AllocationCounter.begin()
        node.receive(Marker(position: 0, event: .endOfStream), on: inputs - 1, &io)
        step(512, marker: false)
        allocations += AllocationCounter.end()
        return allocations
    }

    @Test("the C ducker through the adapter: zero allocations")
    func ducker() throws {
        #expect(try Self.drive("ducker", from: Plugins.ducker, parameters: NodeParameters(), inputs: 2) == 0)
    }

    @Test("the Swift-kit test-gain through the adapter: zero allocations")
    func swiftGain() throws {
        #expect(try Self.drive("test-gain", from: Plugins.swiftTest, parameters: NodeParameters(["gain": .number(0.5)]), inputs: 1) == 0)
    }
}
