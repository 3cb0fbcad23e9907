import SluiceGraph
import SluiceNodes
import Testing

@Suite("BuiltinProcessors")
struct BuiltinProcessorsTests {
    @Test("the list names every processor once, and each registers")
    func names() throws {
        let names = BuiltinProcessors.types.map(\.descriptor.typeName)
        #expect(names == ["aligner", "resampler", "crossfader", "fader", "meter", "mixer", "channel-map", "tee"])
        var registry = NodeRegistry()
        for type in BuiltinProcessors.types { try registry.register(type) }
        #expect(registry.all.count == names.count)
    }

    @Test("each type is a processor with one output (or a count parameter), made from its defaults", arguments: BuiltinProcessors.types.map(\.descriptor.typeName))
    func defaults(name: String) throws {
        let type = try #require(BuiltinProcessors.types.first { $0.descriptor.typeName == name })
        let descriptor = type.descriptor
        #expect(descriptor.kind == .processor)
        #expect(descriptor.outputs.count == 1 || descriptor.outputCountParameter != nil)
        #expect(!descriptor.summary.isEmpty)
        #expect(descriptor.inputs.first?.isRequired == true)
        _ = try makeProcessor(type)
        for parameter in descriptor.parameters {
            #expect(!parameter.summary.isEmpty, "\(name).\(parameter.name) has no summary")
            #expect(!parameter.isRequired, "\(name).\(parameter.name): built-in processors run on defaults")
            guard let value = parameter.defaultValue else { continue }
            #expect(Self.fits(value, parameter.type), "\(name).\(parameter.name): default \(value) is not a \(parameter.type)")
        }
    }

    static func fits(_ value: ParameterValue, _ type: ParameterType) -> Bool {
        switch (type, value) {
        case (.number(let range), .number(let number)): range.contains(number)
        case (.integer(let range), .integer(let integer)): range.contains(integer)
        case (.rate, .auto): true
        case (.rate(let range), .integer(let rate)): range.contains(rate)
        case (.choice(let names), .string(let name)): names.contains(name)
        case (.list, .list): true
        case (.boolean, .boolean), (.string, .string), (.path, .string): true
        default: false
        }
    }
}
