import Foundation
import SluiceAudio
@_spi(Fuzzing) import SluicePlugins
import SluicePluginABI
import SluiceGraph
import SluiceTestKit
import SluiceTestSupport
import Testing

/// Parameter changes and markers reaching a C plugin's `process` as events (events.h): the
/// test plugin `test-events` (Tests/Fixtures/Plugins/events) records each event and call, and these
/// tests drive it through the engine's own slot (NodeTestBench) and a live run's controls.
/// Each test writes to its own log of the plugin, so they may run at once.
@Suite struct PluginEventsTests {
    static let mono = StreamFormat.frames(rate: 48_000, channels: 1)

    static func recorder(log: Int, _ parameters: NodeParameters = NodeParameters()) throws -> any ProcessorNode {
        var parameters = parameters
        parameters["log"] = .integer(log)
        return try Plugins.processor("test-events", from: Plugins.events, parameters)
    }

    /// A ramp, so any frame of the output shows where it came from.
    static func ramp(_ frames: Int) -> [Float] { (0..<frames).map { Float($0 % 1000) / 1000 } }

    @Test("markers on both inputs reach the plugin at the frames they apply from, each field intact; downstream sees what it saw before")
    func markers() throws {
        let node = try Self.recorder(log: 1)
        let bench = try NodeTestBench(node, inputs: [Self.mono, Self.mono], seed: 9, inputBlocks: 1...300, outputBlocks: 0...300)
        let text = TextSpan(utterance: UtteranceID(7), start: 3, end: 9)
        bench.feed(Self.ramp(2_000), markers: [
            Marker(position: 0, event: .utteranceStart(UtteranceID(7))),
            Marker(position: 0, event: .textSpan(text)),
            Marker(position: 500, event: .discontinuity, isDiscontinuous: true),
            Marker(position: 1_200, event: .utteranceEnd(UtteranceID(7))),
            Marker(position: 2_000, event: .endOfStream),
        ], input: 0)
        bench.feed([Float](repeating: 0.25, count: 1_500), markers: [
            Marker(position: 300, event: .utteranceStart(UtteranceID(2))),
            Marker(position: 1_500, event: .endOfStream),
        ], input: 1)
        bench.run()
        #expect(bench.violations.isEmpty, "\(bench.violations)")
        #expect(bench.output() == Self.ramp(2_000), "gain 1: the input passes untouched")
        // Downstream: every marker at its frame, one end of stream once both inputs ended.
        #expect(bench.markers[0] == [
            Marker(position: 0, event: .utteranceStart(UtteranceID(7))),
            Marker(position: 0, event: .textSpan(text)),
            Marker(position: 300, event: .utteranceStart(UtteranceID(2))),
            Marker(position: 500, event: .discontinuity, isDiscontinuous: true),
            Marker(position: 1_200, event: .utteranceEnd(UtteranceID(7))),
            Marker(position: 2_000, event: .endOfStream),
        ])

        let records = try EventLog.read(1)
        #expect(records.filter { $0.kind == .broken }.isEmpty, "\(records.filter { $0.kind == .broken })")
        let markers = records.filter { $0.kind == .marker }
        typealias Seen = (kind: Int, input: Int, frame: Int, utterance: Double, flags: Int, text: Int)
        let expected: [Seen] = [
            (SLUICE_MARKER_UTTERANCE_START, 0, 0, 7, 0, 0),
            (SLUICE_MARKER_TEXT_SPAN, 0, 0, 7, 0, 3 * 65_536 + 9),
            (SLUICE_MARKER_UTTERANCE_START, 1, 300, 2, 0, 0),
            (SLUICE_MARKER_DISCONTINUITY, 0, 500, 0, Int(SLUICE_MARKER_DISCONTINUOUS), 0),
            (SLUICE_MARKER_UTTERANCE_END, 0, 1_200, 7, 0, 0),
            (SLUICE_MARKER_END_OF_STREAM, 1, 1_500, 0, 0, 0),
            (SLUICE_MARKER_END_OF_STREAM, 0, 2_000, 0, 0, 0),
        ]
        #expect(markers.count == expected.count, "\(markers)")
        for (seen, wanted) in zip(markers, expected) {
            #expect(seen.detail == Int(wanted.kind) && seen.input == wanted.input, "\(seen)")
            #expect(seen.frame == wanted.frame, "\(seen): the marker's frame is \(wanted.frame)")
            #expect(seen.value == wanted.utterance && seen.flags == wanted.flags && seen.text == wanted.text, "\(seen)")
        }
        // The last marker comes after the last frame: in a call of 0 frames at the end.
        let calls = records.filter { $0.kind == .call }
        let last = try #require(calls.last)
        #expect(last.detail == 0 && last.input == 1 && last.frame == 2_000, "\(last)")
        #expect(calls.dropLast().allSatisfy { $0.detail > 0 }, "a call of 0 frames only at the end")
        #expect(calls.reduce(0) { $0 + $1.detail } == 2_000)
    }

    @Test("live changes reach the plugin at the node's next frame, and it applies them from there")
    func liveChanges() throws {
        let node = try Self.recorder(log: 2)
        let live = try #require(node as? any LiveParameterNode, "a type with live parameters is a LiveParameterNode")
        let bench = try NodeTestBench(node, inputs: [Self.mono, Self.mono], seed: 4, inputBlocks: 1...200, outputBlocks: 0...200)
        func feed(_ frames: Int) {
            bench.feed([Float](repeating: 1, count: frames), input: 0)
            bench.feed([Float](repeating: 0, count: frames), input: 1)
            bench.run()
        }
        feed(1_000)
        // As the slot does between two steps (ProcessorSlot.applyParameterChanges).
        live.apply(ParameterChange(parameter: 0, value: 0.5, sequence: 1))
        live.apply(ParameterChange(parameter: 1, value: 7, sequence: 2))
        feed(1_000)
        live.apply(ParameterChange(parameter: 0, value: 0.25, sequence: 3))
        feed(500)
        #expect(bench.violations.isEmpty)
        let output = bench.output()
        #expect(output.count == 2_500)
        #expect(output[..<1_000].allSatisfy { $0 == 1 })
        #expect(output[1_000..<2_000].allSatisfy { $0 == 0.5 }, "the change applies from frame 1000 exactly")
        #expect(output[2_000...].allSatisfy { $0 == 0.25 })

        let records = try EventLog.read(2)
        #expect(records.filter { $0.kind == .broken }.isEmpty)
        let changes = records.filter { $0.kind == .parameter }
        #expect(changes.map(\.detail) == [0, 1, 0])
        #expect(changes.map(\.value) == [0.5, 7, 0.25])
        #expect(changes.map(\.frame) == [1_000, 1_000, 2_000])
        #expect(changes.allSatisfy { $0.offset == 0 })
    }

    @Test("more events than one call holds go first in calls of 0 frames, in order; none is lost")
    func overflow() throws {
        let node = try Self.recorder(log: 3)
        let live = try #require(node as? any LiveParameterNode)
        let bench = try NodeTestBench(node, inputs: [Self.mono, Self.mono], seed: 2)
        for step in 0..<1_000 { live.apply(ParameterChange(parameter: 1, value: Double(step))) }
        bench.feed([Float](repeating: 1, count: 100), input: 0)
        bench.feed([Float](repeating: 0, count: 100), input: 1)
        bench.run()
        #expect(bench.output().count == 100)
        let records = try EventLog.read(3)
        #expect(records.filter { $0.kind == .broken }.isEmpty)
        #expect(records.filter { $0.kind == .parameter }.map(\.value) == (0..<1_000).map(Double.init))
        let capacity = 256 + 16 * 2  // PluginProcessorNode.eventCapacity(inputs: 2)
        let calls = records.filter { $0.kind == .call }
        #expect(calls.prefix(3).map(\.detail) == [0, 0, 0], "three full lists flushed before any audio")
        #expect(calls.prefix(3).map(\.input) == [capacity, capacity, capacity])
        #expect(calls[3].detail > 0 && calls[3].input == 1_000 - 3 * capacity)
    }

    @Test("a live change through a running graph's controls (sluice serve's path) reaches the plugin at the frame it was acknowledged with")
    func throughLiveRun() throws {
        let events = try PluginLibrary.load(path: Plugins.events)
        let old = try PluginLibrary.load(path: Plugins.abiVersion1)
        let graph = try Plugins.compile(
            """
            name: live
            nodes:
              music: { type: tone, frequency: 440, duration: 30, rate: 48000, channels: 1 }
              key:   { type: tone, frequency: 220, duration: 30, rate: 48000, channels: 1 }
              rec:   { type: test-events, log: 4 }
              old:   { type: test-v1-gain, label: x }
              out:   { type: null.sink, rate: 48000, channels: 1 }
            links:
              - music -> rec.in
              - key -> rec.key
              - rec -> old -> out
            playback: { watermark: 0.05, max-buffered: 0.2 }
            """, libraries: [events, old])
        let run = try LiveRun(graph: graph)
        try run.start()
        defer {
            run.cancel()
            _ = try? run.wait()
        }
        #expect(run.parameters.liveParameters.mapValues { $0.map(\.name) } == [
            "rec": ["gain", "steps"], "music": ["frequency", "amplitude"], "key": ["frequency", "amplitude"],
        ])
        usleep(50_000)
        let gain = try run.parameters.set(node: "rec", parameter: "gain", value: .number(0.5), timeout: 5)
        let steps = try run.parameters.set(node: "rec", parameter: "steps", value: .integer(12), timeout: 5)
        let gainFrame = try #require(gain.frame, "acknowledged within 5 s")
        let stepsFrame = try #require(steps.frame)
        #expect(gainFrame > 0 && stepsFrame >= gainFrame)
        // Refused as for any node: not live, and a version-1 plugin's node has no live parameters.
        #expect(throws: ParameterControlError.notLive(node: "rec", parameter: "log", live: ["gain", "steps"])) {
            _ = try run.parameters.set(node: "rec", parameter: "log", value: .integer(1))
        }
        #expect(throws: ParameterControlError.noLiveParameters(node: "old", liveNodes: ["key", "music", "rec"])) {
            _ = try run.parameters.set(node: "old", parameter: "gain", value: .number(1))
        }
        // The plugin hears of each change in its next call, which starts at that frame.
        let deadline = Date().addingTimeInterval(5)
        var changes: [EventLog.Record] = []
        while changes.count < 2 && Date() < deadline {
            usleep(10_000)
            changes = try EventLog.read(4).filter { $0.kind == .parameter }
        }
        #expect(changes.map(\.frame) == [gainFrame, stepsFrame])
        #expect(changes.map(\.value) == [0.5, 12])
        #expect(changes.map(\.detail) == [0, 1])
        #expect(try EventLog.read(4).filter { $0.kind == .broken }.isEmpty)
    }

    @Test("a plugin that leaves its vtable's size 0 is refused when its node is made, naming the struct")
    func unsizedVTable() throws {
        let error = #expect(throws: NodeCreationError.self) {
            _ = try Plugins.processor("test-events", from: Plugins.events, NodeParameters(["bad-vtable": .boolean(true)]))
        }
        #expect(error?.message.contains("sluice_processor_vtable_t's size is 0, less than version 2's 44 bytes") == true, "\(String(describing: error))")
        #expect(error?.fix?.contains("sizeof(sluice_processor_vtable_t)") == true)
    }
}

/// Descriptors of version 2 checked for their sizes and flags, built in memory and converted
/// as the loader converts a plugin's (the SPI the fuzz target uses).
@Suite struct DescriptorVersionTests {
    /// Converts a one-parameter processor descriptor, after `change` edits it.
    static func convert(
        abiVersion: UInt32 = SLUICE_ABI_VERSION, kind: Int = SLUICE_NODE_PROCESSOR,
        _ change: (inout sluice_node_descriptor_t, inout [sluice_param_descriptor_t]) -> Void
    ) throws(PluginError) -> NodeDescriptor {
        let texts: [String] = ["t", "in", "out", "p", "q"]
        let strings = texts.map { text in strdup(text)! }
        defer { strings.forEach { free($0) } }
        let name = { (index: Int) in UnsafePointer(strings[index]) }
        let processor = kind == SLUICE_NODE_PROCESSOR
        let ports = [
            sluice_port_descriptor_t(name: name(1), medium: sluice_medium_t(SLUICE_MEDIUM_FRAMES), summary: nil),
            sluice_port_descriptor_t(
                name: name(2), medium: sluice_medium_t(processor ? SLUICE_MEDIUM_FRAMES : SLUICE_MEDIUM_BYTES), summary: nil),
        ]
        var parameters = [sluice_param_descriptor_t(), sluice_param_descriptor_t()]
        for index in parameters.indices {
            parameters[index].name = name(3 + index)
            parameters[index].type = sluice_param_type_t(SLUICE_PARAM_NUMBER)
            parameters[index].maximum = 1
            parameters[index].size = UInt32(MemoryLayout<sluice_param_descriptor_t>.size)
        }
        var node = sluice_node_descriptor_t()
        node.type_name = name(0)
        node.kind = sluice_node_kind_t(kind)
        node.size = UInt32(MemoryLayout<sluice_node_descriptor_t>.size)
        change(&node, &parameters)
        return try ports.withUnsafeBufferPointer { ports throws(PluginError) in
            try parameters.withUnsafeBufferPointer { params throws(PluginError) in
                node.inputs = ports.baseAddress
                node.input_count = processor ? 1 : 0
                node.outputs = ports.baseAddress! + 1
                node.output_count = 1
                node.params = params.baseAddress
                node.param_count = UInt32(params.count)
                return try withUnsafePointer(to: node) { pointer throws(PluginError) in
                    try DescriptorConversion.convert(pointer, path: "p.so", abiVersion: abiVersion).descriptor
                }
            }
        }
    }

    static func problem(_ body: () throws(PluginError) -> NodeDescriptor) -> String? {
        do {
            _ = try body()
            return nil
        } catch {
            if case .invalidDescriptor(_, _, let problem) = error { return problem }
            return error.description
        }
    }

    @Test("sizes as a plugin built with these headers fills them, and the live flag")
    func wellFormed() throws {
        let descriptor = try Self.convert { _, parameters in parameters[1].flags = UInt32(SLUICE_PARAM_LIVE) | 0x80 }
        #expect(descriptor.parameters.map(\.name) == ["p", "q"])
        #expect(descriptor.parameters.map(\.isLive) == [false, true], "an unknown flag bit is ignored")
    }

    @Test("a node descriptor or parameter whose size was left 0 is refused, saying what to set")
    func sizesLeftZero() {
        #expect(Self.problem { () throws(PluginError) in try Self.convert { node, _ in node.size = 0 } }
            == "its sluice_node_descriptor_t's size is 0, less than version 2's 72 bytes: set `size` to sizeof(sluice_node_descriptor_t)")
        #expect(Self.problem { () throws(PluginError) in try Self.convert { _, parameters in parameters[0].size = 0 } }?
            .hasPrefix("parameter 0: its sluice_param_descriptor_t's size is 0, less than version 2's 104 bytes") == true)
        #expect(Self.problem { () throws(PluginError) in try Self.convert { _, parameters in parameters[1].size = 200 } }
            == "parameter 1 has size 200 but parameter 0 has 104: every entry of params has one size")
    }

    @Test("the same structs from a version-1 plugin are read without their sizes and flags")
    func versionOneIgnoresSizes() throws {
        // A version-1 plugin's structs end where `size` begins: whatever lies there is not read.
        let descriptor = try Self.convert(abiVersion: 1) { node, parameters in
            node.size = 0
            parameters.removeLast()  // one entry: a version-1 array's stride is 96 bytes, not 104
            parameters[0].size = 0
            parameters[0].flags = UInt32(SLUICE_PARAM_LIVE)
        }
        #expect(descriptor.parameters.map(\.name) == ["p"])
        #expect(descriptor.parameters.map(\.isLive) == [false])
    }

    @Test("only numbers and integers of processors can be live")
    func liveTypes() {
        #expect(Self.problem { () throws(PluginError) in
            try Self.convert { _, parameters in
                parameters[0].type = sluice_param_type_t(SLUICE_PARAM_BOOLEAN)
                parameters[0].flags = UInt32(SLUICE_PARAM_LIVE)
            }
        } == "parameter 'p': only NUMBER and INTEGER parameters can be live")
        #expect(Self.problem { () throws(PluginError) in
            try Self.convert(kind: SLUICE_NODE_PROVIDER) { _, parameters in
                parameters[0].flags = UInt32(SLUICE_PARAM_LIVE)
            }
        } == "parameter 'p': only a processor's parameters can be live")
    }
}
