import Glibc
import SluiceAudio
import SluiceConfig
import SluiceGraph
import SluiceNodes
@_spi(Fuzzing) import SluicePlugins
import SluicePluginABI
import SluiceTestKit

/// What each target feeds its bytes to, and what besides "no crash, no hang" it checks.
enum FuzzTargets {
    /// The YAML graph reader. Every diagnostic it gives has a place inside the text.
    static func yamlGraph(_ bytes: UnsafeBufferPointer<UInt8>) {
        let text = String(decoding: bytes, as: UTF8.self)
        do {
            _ = try GraphFile.parse(text, file: "fuzz.yaml")
        } catch {
            checkPlaces(error, lines: lineCount(text))
        }
    }

    /// Lines as libyaml (and an editor) counts them: "\n", "\r\n", a lone "\r", NEL, and
    /// the Unicode line and paragraph separators each end one.
    static func lineCount(_ text: String) -> Int {
        var lines = 1
        var previous: Unicode.Scalar = " "
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n" where previous == "\r": break
            case "\n", "\r", "\u{85}", "\u{2028}", "\u{2029}": lines += 1
            default: break
            }
            previous = scalar
        }
        return lines
    }

    /// The one-line form (`tone ! fader ! null.sink`).
    static func oneLineGraph(_ bytes: UnsafeBufferPointer<UInt8>) {
        _ = try? OneLineGraph.parse(String(decoding: bytes, as: UTF8.self))
    }

    /// Reading and compiling against the built-in nodes, file nodes left out (a path the
    /// fuzzer writes could name a FIFO or a device: opening files is not the compiler's job).
    static func compile(_ bytes: UnsafeBufferPointer<UInt8>) {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let description = try? GraphFile.parse(text, file: "fuzz.yaml") else { return }
        do {
            _ = try GraphCompiler(registry: registryWithoutFiles).compile(description)
        } catch {
            checkPlaces(error, lines: lineCount(text))
        }
    }

    static let registryWithoutFiles: NodeRegistry = {
        var registry = NodeRegistry()
        for type in BuiltinNodes.registry().all where !["wav.source", "wav.sink", "bytes.source"].contains(type.descriptor.typeName) {
            try! registry.register(type)
        }
        return registry
    }()

    private static func checkPlaces(_ diagnostics: GraphDiagnostics, lines: Int) {
        for diagnostic in diagnostics.diagnostics {
            guard let place = diagnostic.location else { continue }
            if place.line < 1 || place.line > lines || place.column < 1 {
                fatalError("'\(diagnostic.message)' is placed at \(place.line):\(place.column), outside the \(lines) lines")
            }
        }
    }

    /// A plugin's C descriptor made of the bytes: converted, or refused with a PluginError.
    /// Version 1's layout or version 2's; sizes right, left 0 or too small (never larger than
    /// the arena's entries, which a real plugin's array would hold).
    static func descriptor(_ bytes: UnsafeBufferPointer<UInt8>) {
        var input = FuzzInput(bytes)
        let arena = Arena()
        let abiVersion: UInt32 = input.boolean() ? 1 : 2
        func size<T>(_ type: T.Type, _ choice: UInt8) -> UInt32 {
            choice < 240 ? UInt32(MemoryLayout<T>.size) : UInt32(choice - 240) * UInt32(MemoryLayout<T>.size) / 16
        }
        var node = sluice_node_descriptor_t()
        node.size = size(sluice_node_descriptor_t.self, input.byte())
        node.type_name = input.byte() < 240 ? arena.string(input.string()) : nil
        node.kind = sluice_node_kind_t(input.byte() % 4)
        node.summary = input.boolean() ? arena.string(input.string(limit: 40)) : nil
        (node.inputs, node.input_count) = ports(&input, arena)
        (node.outputs, node.output_count) = ports(&input, arena)
        let parameterCount = Int(input.byte() % 6)
        if parameterCount > 0 && input.byte() < 250 {
            let parameters = arena.array(of: sluice_param_descriptor_t.self, count: parameterCount)
            for index in 0..<parameterCount {
                var parameter = sluice_param_descriptor_t()
                parameter.size = size(sluice_param_descriptor_t.self, input.byte())
                parameter.flags = input.byte() < 128 ? 0 : UInt32(input.byte())
                parameter.name = input.byte() < 250 ? arena.string(input.string()) : nil
                parameter.type = sluice_param_type_t(input.byte() % 8)
                parameter.minimum = input.boolean() ? input.double() : Double(Int8(bitPattern: input.byte()))
                parameter.maximum = input.boolean() ? input.double() : Double(Int8(bitPattern: input.byte()))
                let choices = Int(input.byte() % 4)
                if choices > 0 {
                    let names = arena.array(of: UnsafePointer<CChar>?.self, count: choices)
                    for choice in 0..<choices { names[choice] = input.byte() < 250 ? arena.string(input.string()) : nil }
                    parameter.choices = UnsafePointer(names)
                }
                parameter.choice_count = UInt32(choices)
                parameter.required = input.boolean()
                parameter.has_default = input.boolean()
                parameter.default_value.number = input.boolean() ? input.double() : Double(Int8(bitPattern: input.byte()))
                parameter.default_value.integer = Int64(Int8(bitPattern: input.byte()))
                parameter.default_value.boolean = input.boolean()
                parameter.default_value.string = input.boolean() ? arena.string(input.string()) : nil
                parameter.unit = input.boolean() ? arena.string(input.string(limit: 4)) : nil
                parameter.summary = input.boolean() ? arena.string(input.string()) : nil
                parameters[index] = parameter
            }
            if abiVersion == 1 {
                // A version-1 plugin's array has version 1's stride: each entry ends where
                // `size` now begins (the loader walks it so). Laid out with the host's stride
                // instead, the loader would read one entry's tail as the next one's pointers.
                let stride = MemoryLayout<sluice_param_descriptor_t>.offset(of: \.size)!
                let words = (stride * parameterCount + MemoryLayout<sluice_param_descriptor_t>.size + 7) / 8
                let packed = UnsafeMutableRawPointer(arena.array(of: UInt64.self, count: words))
                for index in 0..<parameterCount {
                    (packed + index * stride).copyMemory(from: parameters + index, byteCount: stride)
                }
                node.params = UnsafePointer(packed.assumingMemoryBound(to: sluice_param_descriptor_t.self))
            } else {
                node.params = UnsafePointer(parameters)
            }
        }
        node.param_count = UInt32(parameterCount)
        withUnsafePointer(to: &node) { pointer in
            _ = try? DescriptorConversion.convert(pointer, path: "fuzz.so", abiVersion: abiVersion)
        }
    }

    private static func ports(_ input: inout FuzzInput, _ arena: Arena) -> (UnsafePointer<sluice_port_descriptor_t>?, UInt32) {
        let count = Int(input.byte() % 5)
        guard count > 0 else { return (nil, 0) }
        // A NULL array with a count is a case the loader must refuse.
        guard input.byte() < 250 else { return (nil, UInt32(count)) }
        let ports = arena.array(of: sluice_port_descriptor_t.self, count: count)
        for index in 0..<count {
            var port = sluice_port_descriptor_t()
            port.name = input.byte() < 250 ? arena.string(input.string()) : nil
            port.medium = sluice_medium_t(input.byte() % 4)
            port.summary = input.boolean() ? arena.string(input.string()) : nil
            ports[index] = port
        }
        return (UnsafePointer(ports), UInt32(count))
    }

    /// The aligner through the engine's own slot, its input cut at random places (the bench's
    /// seeded splits), against decoding the whole stream at once: the same floats, bit for bit,
    /// and a trailing partial frame dropped.
    static func aligner(_ bytes: UnsafeBufferPointer<UInt8>) {
        var input = FuzzInput(bytes)
        let formats: [SampleFormat] = [.s16le, .s24le, .s32le, .f32le]
        let sampleFormat = formats[Int(input.byte() % 4)]
        let channels = Int(input.byte() % 3) + 1
        let seed = input.integer(UInt64.self)
        let stream = Array(input.remaining)
        let format = PCMFormat(sampleFormat, channels: channels, sampleRate: 24_000)
        guard let bench = try? NodeTestBench(
            AlignerNode(), inputs: [.bytes(format)], seed: seed, inputBlocks: 1...97, outputBlocks: 0...61)
        else { fatalError("the aligner refused \(format)") }
        bench.feed(bytes: stream, markers: [Marker(position: stream.count, event: .endOfStream)])
        bench.run()
        bench.drain()
        if !bench.violations.isEmpty { fatalError("the aligner broke the marker rules: \(bench.violations)") }
        let frameBytes = sampleFormat.bytesPerSample * channels
        let frames = stream.count / frameBytes
        var expected = [Float](repeating: 0, count: frames * channels)
        stream.withUnsafeBytes { raw in
            expected.withUnsafeMutableBufferPointer { out in
                if let base = raw.baseAddress, let destination = out.baseAddress {
                    SampleConversion.decode(base, format: sampleFormat, samples: frames * channels, into: destination)
                }
            }
        }
        let output = bench.output()
        guard output.count == expected.count, zip(output, expected).allSatisfy({ $0.bitPattern == $1.bitPattern }) else {
            fatalError("the aligner gave \(output.count) samples for \(expected.count), or other values, on \(format)")
        }
    }
}

/// C memory for one descriptor, freed together.
final class Arena {
    private var strings: [UnsafeMutablePointer<CChar>] = []
    private var blocks: [UnsafeMutableRawPointer] = []

    func string(_ text: String) -> UnsafePointer<CChar> {
        let copy = strdup(text)!
        strings.append(copy)
        return UnsafePointer(copy)
    }

    func array<T>(of _: T.Type, count: Int) -> UnsafeMutablePointer<T> {
        let memory = UnsafeMutableRawPointer.allocate(byteCount: MemoryLayout<T>.stride * count, alignment: MemoryLayout<T>.alignment)
        memory.initializeMemory(as: UInt8.self, repeating: 0, count: MemoryLayout<T>.stride * count)
        blocks.append(memory)
        return memory.assumingMemoryBound(to: T.self)
    }

    deinit {
        for string in strings { free(string) }
        for block in blocks { block.deallocate() }
    }
}
