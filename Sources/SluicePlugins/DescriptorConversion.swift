import Glibc
import SluiceGraph
import SluicePluginABI

/// C descriptors → `NodeDescriptor`, checked against the ABI's rules (descriptor.h).
/// (SPI `Fuzzing`: the fuzz target in Fuzz/ feeds it descriptors made of random bytes.)
@_spi(Fuzzing) public enum DescriptorConversion {
    /// - Parameter abiVersion: the plugin's: which layout its structs have (common.h).
    public static func convert(
        _ raw: UnsafePointer<sluice_node_descriptor_t>, path: String, abiVersion: UInt32 = SLUICE_ABI_VERSION
    ) throws(PluginError) -> PluginNodeType {
        // SAFETY: descriptor.h makes the plugin keep the descriptor and everything it points
        // at valid until `deinit`; structs are read only as far as the plugin's version and
        // `size` say they reach (GrownStruct), arrays only up to their counts, after NULL
        // checks, and strings are NUL-terminated by the same contract.
        let c: sluice_node_descriptor_t
        do throws(GrownStructError) {
            c = try GrownStruct.read(UnsafeRawPointer(raw), abiVersion: abiVersion, as: sluice_node_descriptor_t.self)
        } catch {
            throw .invalidDescriptor(path: path, type: "?", problem: Self.sizeProblem(sluice_node_descriptor_t.self, error))
        }
        guard let namePointer = c.type_name else {
            throw .invalidDescriptor(path: path, type: "?", problem: "the type name is NULL")
        }
        let typeName = String(cString: namePointer)
        func invalid(_ problem: String) -> PluginError {
            .invalidDescriptor(path: path, type: typeName, problem: problem)
        }
        guard isName(typeName, allowingDots: true) else {
            throw invalid("a type name is lowercase letters, digits, '-' and '.', starting with a letter")
        }
        let summary = c.summary.map { String(cString: $0) } ?? ""
        let inputs = try ports(c.inputs, c.input_count, "input", invalid)
        let outputs = try ports(c.outputs, c.output_count, "output", invalid)
        let kind: PluginNodeType.Kind
        switch c.kind {
        case sluice_node_kind_t(SLUICE_NODE_PROVIDER):
            kind = .provider
            guard inputs.isEmpty, outputs.count == 1, outputs[0].medium == .bytes else {
                throw invalid("a provider has no inputs and one output of bytes")
            }
        case sluice_node_kind_t(SLUICE_NODE_PROCESSOR):
            kind = .processor
            guard (1...16).contains(inputs.count), (1...16).contains(outputs.count),
                (inputs + outputs).allSatisfy({ $0.medium == .frames })
            else {
                throw invalid("a processor has 1…16 inputs and 1…16 outputs, all of frames")
            }
        default:
            throw invalid("unknown kind \(c.kind)")
        }
        var parameters: [ParameterDescriptor] = []
        var cParameters: [sluice_param_descriptor_t] = []
        if c.param_count > 0 {
            guard let params = c.params else { throw invalid("param_count is \(c.param_count) but params is NULL") }
            let stride: Int
            do throws(GrownStructError) {
                stride = try GrownStruct.size(at: UnsafeRawPointer(params), abiVersion: abiVersion, as: sluice_param_descriptor_t.self)
            } catch {
                throw invalid("parameter 0: " + Self.sizeProblem(sluice_param_descriptor_t.self, error))
            }
            for index in 0..<Int(c.param_count) {
                let entry = UnsafeRawPointer(params) + index * stride
                let parameter: sluice_param_descriptor_t
                do throws(GrownStructError) {
                    parameter = try GrownStruct.read(entry, abiVersion: abiVersion, as: sluice_param_descriptor_t.self)
                } catch {
                    throw invalid("parameter \(index): " + Self.sizeProblem(sluice_param_descriptor_t.self, error))
                }
                // The array's stride is the first entry's size: a different one means the
                // entries are not one array of one type.
                if abiVersion >= 2 && Int(parameter.size) != stride {
                    throw invalid("parameter \(index) has size \(parameter.size) but parameter 0 has \(stride): every entry of params has one size")
                }
                let converted = try self.parameter(parameter, kind: kind, invalid)
                guard !parameters.contains(where: { $0.name == converted.name }) else {
                    throw invalid("parameter '\(converted.name)' is declared twice")
                }
                parameters.append(converted)
                cParameters.append(parameter)
            }
        }
        let descriptor = NodeDescriptor(
            typeName: typeName, kind: kind == .provider ? .source : .processor, summary: summary,
            inputs: inputs, outputs: outputs, parameters: parameters)
        return PluginNodeType(descriptor: descriptor, kind: kind, typeName: namePointer, parameters: cParameters)
    }

    private static func ports(
        _ pointer: UnsafePointer<sluice_port_descriptor_t>?, _ count: UInt32, _ what: String,
        _ invalid: (String) -> PluginError
    ) throws(PluginError) -> [PortDescriptor] {
        guard count > 0 else { return [] }
        guard let pointer else { throw invalid("\(what)_count is \(count) but the \(what)s are NULL") }
        var ports: [PortDescriptor] = []
        for index in 0..<Int(count) {
            let port = pointer[index]
            guard let namePointer = port.name else { throw invalid("\(what) \(index) has no name") }
            let name = String(cString: namePointer)
            guard isName(name, allowingDots: false) else {
                throw invalid("\(what) name '\(name)' must be lowercase letters, digits and '-', starting with a letter")
            }
            guard !ports.contains(where: { $0.name == name }) else { throw invalid("two \(what)s are named '\(name)'") }
            let medium: PortMedium
            switch port.medium {
            case sluice_medium_t(SLUICE_MEDIUM_BYTES): medium = .bytes
            case sluice_medium_t(SLUICE_MEDIUM_FRAMES): medium = .frames
            default: throw invalid("\(what) '\(name)' has unknown medium \(port.medium)")
            }
            ports.append(PortDescriptor(name, medium, summary: port.summary.map { String(cString: $0) } ?? ""))
        }
        return ports
    }

    /// Why a struct's `size` was refused, with what would fix it.
    private static func sizeProblem<T: VersionedStruct>(_ type: T.Type, _ error: GrownStructError) -> String {
        "its \(T.cName)'s size is \(error.size), less than version 2's \(error.minimum) bytes: set `size` to sizeof(\(T.cName))"
    }

    private static func parameter(
        _ c: sluice_param_descriptor_t, kind: PluginNodeType.Kind, _ invalid: (String) -> PluginError
    ) throws(PluginError) -> ParameterDescriptor {
        guard let namePointer = c.name else { throw invalid("a parameter has no name") }
        let name = String(cString: namePointer)
        guard isName(name, allowingDots: false) else {
            throw invalid("parameter name '\(name)' must be lowercase letters, digits and '-', starting with a letter")
        }
        func bad(_ problem: String) -> PluginError { invalid("parameter '\(name)': \(problem)") }
        let type: ParameterType
        var defaultValue: ParameterValue?
        let value = c.default_value
        switch c.type {
        case sluice_param_type_t(SLUICE_PARAM_NUMBER):
            guard c.minimum.isFinite, c.maximum.isFinite, c.minimum <= c.maximum else {
                throw bad("the range \(c.minimum)…\(c.maximum) is not a finite range")
            }
            type = .number(c.minimum...c.maximum)
            if c.has_default {
                guard (c.minimum...c.maximum).contains(value.number) else { throw bad("the default \(value.number) is out of range") }
                defaultValue = .number(value.number)
            }
        case sluice_param_type_t(SLUICE_PARAM_INTEGER):
            let limit = 9_007_199_254_740_992.0  // 2^53: integers a double holds exactly
            guard c.minimum.rounded() == c.minimum, c.maximum.rounded() == c.maximum, c.minimum <= c.maximum,
                abs(c.minimum) <= limit, abs(c.maximum) <= limit
            else { throw bad("the range \(c.minimum)…\(c.maximum) is not a range of whole numbers") }
            let range = Int(c.minimum)...Int(c.maximum)
            type = .integer(range)
            if c.has_default {
                guard range.contains(Int(value.integer)) else { throw bad("the default \(value.integer) is out of range") }
                defaultValue = .integer(Int(value.integer))
            }
        case sluice_param_type_t(SLUICE_PARAM_BOOLEAN):
            type = .boolean
            if c.has_default { defaultValue = .boolean(value.boolean) }
        case sluice_param_type_t(SLUICE_PARAM_STRING), sluice_param_type_t(SLUICE_PARAM_PATH):
            type = c.type == sluice_param_type_t(SLUICE_PARAM_STRING) ? .string : .path
            if c.has_default {
                guard let text = value.string else { throw bad("the default string is NULL") }
                defaultValue = .string(String(cString: text))
            }
        case sluice_param_type_t(SLUICE_PARAM_CHOICE):
            guard c.choice_count > 0, let choices = c.choices else { throw bad("a choice needs at least one name") }
            var names: [String] = []
            for index in 0..<Int(c.choice_count) {
                guard let choice = choices[index] else { throw bad("choice \(index) is NULL") }
                names.append(String(cString: choice))
            }
            type = .choice(names)
            if c.has_default {
                guard let text = value.string, names.contains(String(cString: text)) else {
                    throw bad("the default is not one of the choices")
                }
                defaultValue = .string(String(cString: text))
            }
        default:
            throw bad("unknown type \(c.type)")
        }
        // Flags this host does not know are ignored (common.h: a flag is added only where
        // ignoring it is safe).
        let live = c.flags & UInt32(SLUICE_PARAM_LIVE) != 0
        if live {
            guard kind == .processor else { throw bad("only a processor's parameters can be live") }
            switch type {
            case .number, .integer: break
            default: throw bad("only NUMBER and INTEGER parameters can be live")
            }
        }
        return ParameterDescriptor(
            name, type, default: defaultValue, required: c.required, unit: c.unit.map { String(cString: $0) },
            live: live, summary: c.summary.map { String(cString: $0) } ?? "")
    }

    /// Lowercase ASCII letters, digits, '-' (and '.' when allowed), starting with a letter.
    static func isName(_ text: String, allowingDots: Bool) -> Bool {
        let bytes = Array(text.utf8)
        guard let first = bytes.first, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first) else { return false }
        return bytes.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                || byte == UInt8(ascii: "-") || (allowingDots && byte == UInt8(ascii: "."))
        }
    }
}

/// Checked parameters as the C values `create_*` takes, alive for one call.
enum CParameters {
    static func with<R>(
        _ type: PluginNodeType, _ parameters: NodeParameters,
        _ body: (UnsafePointer<sluice_param_value_t>?, UInt32) -> R
    ) -> R {
        var values: [sluice_param_value_t] = []
        var strings: [UnsafeMutablePointer<CChar>] = []
        defer { for string in strings { free(string) } }
        // The plugin's entries in the host's layout, read when the library loaded: names and
        // types checked, names pointing at the plugin's strings (valid until its `deinit`).
        for parameter in type.parameters {
            let name = String(cString: parameter.name)
            guard parameters[name] != nil else { continue }
            var value = sluice_value_t()
            func text(_ string: String?) -> UnsafePointer<CChar>? {
                guard let copy = strdup(string ?? "") else { return nil }
                strings.append(copy)
                return UnsafePointer(copy)
            }
            switch parameter.type {
            case sluice_param_type_t(SLUICE_PARAM_NUMBER): value.number = parameters.double(name)
            case sluice_param_type_t(SLUICE_PARAM_INTEGER): value.integer = Int64(parameters.integer(name))
            case sluice_param_type_t(SLUICE_PARAM_BOOLEAN): value.boolean = parameters.boolean(name)
            case sluice_param_type_t(SLUICE_PARAM_PATH): value.string = text(parameters.path(name))
            default: value.string = text(parameters.string(name))
            }
            values.append(sluice_param_value_t(name: parameter.name, type: parameter.type, value: value))
        }
        return values.withUnsafeBufferPointer { body($0.baseAddress, UInt32($0.count)) }
    }
}
