import SluiceTestSupport
import Testing
@_spi(TestKit) @testable import SluiceGraph
@testable import SluicePlugins

/// A C plugin in the JACK cycle's direct section (docs/architecture.md, "Frame for frame"): the
/// ABI's `process` is a block in and the same block out, so a plugin runs on the period's
/// buffers like a built-in node. Driven here through the section itself, with `test-events`
/// recording each call and event.
@Suite struct PluginDirectSectionTests {
    @Test("a plugin runs frame for frame on the period's buffers; a change timed inside a period splits its call there")
    func timedChangeSplitsThePeriod() throws {
        let node = try PluginEventsTests.recorder(log: 6)
        #expect(node.processesFrameForFrame)
        #expect(node.latencyFrames == 0)
        let mono = PluginEventsTests.mono
        let formats = [mono, mono]
        let outputs = try node.outputFormats(for: formats, context: FormatContext(downstreamRate: nil, blockFrames: 256, isLive: true))
        try node.prepare(PrepareContext(inputFormats: formats, outputFormats: outputs, maximumUnits: 4096, blockFrames: 256))
        defer { node.deactivate() }
        let slot = ProcessorSlot(name: "rec", node: node, ports: NodePorts(inputs: formats, outputs: outputs), inputs: [], outputs: [])
        // Links: 0 the audio in, 1 the key, 2 the output.
        let direct = DirectSection(linkChannels: [1, 1, 1], steps: [DirectSection.Step(slot: slot, inputs: [0, 1], outputs: [2])])
        // `gain` (the type's first parameter) halves from frame 300, inside the second period.
        let queue = try #require(slot.parameters)
        #expect(queue.send(parameter: 0, value: 0.5, atFrame: 300) != nil)

        let period = 256
        let input = PluginEventsTests.ramp(4 * period)
        var heard: [Float] = []
        for index in 0..<4 {
            let block = Array(input[(index * period)..<((index + 1) * period)])
            direct.ownBuffer(0).update(from: block, count: period)
            direct.ownBuffer(1).update(repeating: 0.25, count: period)
            direct.process(frames: period)
            heard += UnsafeBufferPointer(start: direct.data[2], count: period)
        }
        #expect(heard == input.indices.map { input[$0] * ($0 < 300 ? 1 : 0.5) })
        #expect(queue.acknowledgedFrame(of: 1) == 300)

        let records = try EventLog.read(6)
        #expect(records.filter { $0.kind == .broken }.isEmpty, "\(records.filter { $0.kind == .broken })")
        let changes = records.filter { $0.kind == .parameter }
        #expect(changes.map(\.frame) == [300] && changes.map(\.value) == [0.5] && changes.allSatisfy { $0.offset == 0 })
        // The second period is two calls, cut at the change: 44 frames, then 212.
        #expect(records.filter { $0.kind == .call }.map(\.detail) == [256, 44, 212, 256, 256])
    }
}
