import Foundation
import Glibc
import SluicePluginABI
import SluicePlugins
import Testing

/// Plugins honour an event's offset inside a block (events.h: it applies from frame `offset`
/// of the call). Sluice's own slot always hands events over at offset 0 (a call starts where
/// they apply), so these tests call the plugins' C vtables directly, as another host could:
/// one call with a change at offset k must equal two calls split at k with the change at
/// offset 0 of the second — and differ from no change at all.
@Suite struct EventOffsetTests {
    /// A processor made through the plugin's own entry and factory (the library loaded and
    /// initialised by `PluginLibrary`), driven by hand.
    final class DirectProcessor {
        let library: PluginLibrary
        let instance: UnsafeMutableRawPointer
        let vtable: UnsafePointer<sluice_processor_vtable_t>
        let inputCount: Int

        init(path: String, type: String, inputs: Int, numbers: [String: Double] = [:], integers: [String: Int] = [:]) throws {
            library = try PluginLibrary.load(path: path)
            inputCount = inputs
            let handle = try #require(dlopen(path, RTLD_NOW | RTLD_NOLOAD))
            defer { dlclose(handle) }
            let symbol = try #require(dlsym(handle, SLUICE_PLUGIN_ENTRY_SYMBOL))
            // SAFETY: the ABI defines the entry as this function type; the library stays
            // loaded (it is never closed) and initialised while `library` lives.
            let entry = try #require(unsafeBitCast(symbol, to: sluice_plugin_entry_function_t.self)())
            let factory = try #require(entry.pointee.get_factory?(SLUICE_NODE_FACTORY_ID))
                .assumingMemoryBound(to: sluice_node_factory_t.self)
            let names = Array(numbers.keys) + Array(integers.keys)
            let cNames = names.map { strdup($0)! }
            defer { cNames.forEach { free($0) } }
            var values: [sluice_param_value_t] = []
            for (index, name) in names.enumerated() {
                var value = sluice_value_t()
                var type = sluice_param_type_t(SLUICE_PARAM_NUMBER)
                if let number = numbers[name] { value.number = number } else {
                    value.integer = Int64(integers[name]!)
                    type = sluice_param_type_t(SLUICE_PARAM_INTEGER)
                }
                values.append(sluice_param_value_t(name: UnsafePointer(cNames[index]), type: type, value: value))
            }
            var processor = sluice_processor_t()
            var error = sluice_error_t()
            let created = values.withUnsafeBufferPointer { values in
                factory.pointee.create_processor!(factory, type, values.baseAddress, UInt32(values.count), &processor, &error)
            }
            #expect(created)
            instance = try #require(processor.instance)
            vtable = try #require(processor.vtable)
            #expect(vtable.pointee.activate!(instance, 48_000, 4_096, 1, &error))
        }

        deinit {
            vtable.pointee.deactivate!(instance)
            vtable.pointee.destroy!(instance)
        }

        /// One call of `frames` frames from `position`, mono, with parameter changes at
        /// their offsets; its output.
        func process(position: Int, _ inputs: [[Float]], events: [(offset: Int, parameter: Int, value: Double)]) -> [Float] {
            let frames = inputs[0].count
            // Buffers of the test's own, alive until the call returns.
            let inputBuffers = inputs.map { input in
                let buffer = UnsafeMutablePointer<Float>.allocate(capacity: max(1, input.count))
                buffer.initialize(from: input, count: input.count)
                return buffer
            }
            let output = UnsafeMutablePointer<Float>.allocate(capacity: max(1, frames))
            output.initialize(repeating: 0, count: max(1, frames))
            let changes = UnsafeMutablePointer<sluice_param_event_t>.allocate(capacity: max(1, events.count))
            let list = UnsafeMutablePointer<UnsafePointer<sluice_event_header_t>?>.allocate(capacity: max(1, events.count))
            let inputList = UnsafeMutablePointer<UnsafePointer<Float>?>.allocate(capacity: inputs.count)
            var outputList: UnsafeMutablePointer<Float>? = output
            defer {
                inputBuffers.forEach { $0.deallocate() }
                output.deallocate()
                changes.deallocate()
                list.deallocate()
                inputList.deallocate()
            }
            // Events as a host built before `param_name` sent them (32 bytes, by index alone):
            // the old form, which plugins still take.
            for (index, event) in events.enumerated() {
                (changes + index).initialize(to: sluice_param_event_t(
                    header: sluice_event_header_t(
                        size: UInt32(MemoryLayout<sluice_param_event_t>.offset(of: \.param_name)!),
                        kind: sluice_event_kind_t(SLUICE_EVENT_PARAM), offset: UInt32(event.offset), reserved: 0),
                    param_index: UInt32(event.parameter), reserved: 0, value: event.value, param_name: nil))
                // SAFETY: each event starts with its header; the C side reads it through it.
                list[index] = UnsafeRawPointer(changes + index).assumingMemoryBound(to: sluice_event_header_t.self)
            }
            for (port, buffer) in inputBuffers.enumerated() { inputList[port] = UnsafePointer(buffer) }
            withUnsafePointer(to: &outputList) { outputs in
                var call = sluice_process_t(
                    position: UInt64(position), frames: UInt32(frames), channels: 1, input_count: UInt32(inputCount),
                    output_count: 1, inputs: UnsafePointer(inputList), outputs: outputs,
                    size: UInt32(MemoryLayout<sluice_process_t>.size), event_count: UInt32(events.count),
                    events: events.isEmpty ? nil : UnsafePointer(list))
                // SAFETY: every pointer in `call` addresses the buffers above, alive for the call.
                #expect(vtable.pointee.process!(instance, &call) == sluice_process_status_t(SLUICE_PROCESS_CONTINUE))
            }
            return Array(UnsafeBufferPointer(start: output, count: frames))
        }
    }

    /// The output of 1000 frames with a change at `offset` in one call, in two calls split
    /// there, and with no change.
    static func compare(
        _ make: () throws -> DirectProcessor, inputs: [[Float]], offset: Int, parameter: Int, value: Double
    ) throws -> (whole: [Float], split: [Float], unchanged: [Float]) {
        let whole = try make().process(position: 0, inputs, events: [(offset, parameter, value)])
        let splitting = try make()
        let split = splitting.process(position: 0, inputs.map { Array($0[..<offset]) }, events: [])
            + splitting.process(position: offset, inputs.map { Array($0[offset...]) }, events: [(0, parameter, value)])
        let unchanged = try make().process(position: 0, inputs, events: [])
        return (whole, split, unchanged)
    }

    static let music = (0..<1_000).map { Float($0 % 100 + 1) / 100 }

    @Test("the ducker starts its depth ramp at the event's offset")
    func ducker() throws {
        let parameters: [String: Double] = [
            "depth": 12, "threshold": -30, "attack": 0, "hold": 0, "release": 0, "ramp": 0.002,
        ]
        let (whole, split, unchanged) = try Self.compare(
            { try DirectProcessor(path: Plugins.ducker, type: "ducker", inputs: 2, numbers: parameters) },
            inputs: [Self.music, [Float](repeating: 0.5, count: 1_000)], offset: 300, parameter: 0, value: 24)
        #expect(whole == split)
        #expect(whole[..<300] == unchanged[..<300])
        #expect(whole[300] != unchanged[300], "the ramp starts at frame 300")
    }

    @Test("the C recorder steps its gain at the event's offset")
    func recorder() throws {
        let (whole, split, unchanged) = try Self.compare(
            { try DirectProcessor(path: Plugins.events, type: "test-events", inputs: 2, integers: ["log": 14]) },
            inputs: [Self.music, [Float](repeating: 0, count: 1_000)], offset: 300, parameter: 0, value: 0.5)
        #expect(whole == split)
        #expect(whole[..<300] == unchanged[..<300])
        #expect(Array(whole[300...]) == unchanged[300...].map { $0 * 0.5 })
        // What it recorded of one such call (each `make` activates, which clears the log).
        let recorder = try DirectProcessor(path: Plugins.events, type: "test-events", inputs: 2, integers: ["log": 14])
        _ = recorder.process(position: 2_000, [Self.music, Self.music], events: [(300, 0, 0.5)])
        let changes = try EventLog.read(14).filter { $0.kind == .parameter }
        #expect(changes.map(\.offset) == [300])
        #expect(changes.map(\.frame) == [2_300])
    }

    @Test("a Swift-kit processor reads the offset through ProcessBlock.events")
    func swiftKit() throws {
        let (whole, split, unchanged) = try Self.compare(
            { try DirectProcessor(path: Plugins.swiftTest, type: "test-gain", inputs: 1, numbers: ["gain": 1]) },
            inputs: [Self.music], offset: 300, parameter: 0, value: 0.5)
        #expect(whole == split)
        #expect(whole[..<300] == unchanged[..<300])
        #expect(Array(whole[300...]) == unchanged[300...].map { $0 * 0.5 })
    }
}
