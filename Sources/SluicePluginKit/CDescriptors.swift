import Glibc
import SluicePluginABI

/// `NodeDescription`s as C descriptors, with every string and array they point at. Owned by
/// the kit's state from `init` to `deinit`, as descriptor.h requires.
final class CDescriptors: @unchecked Sendable {
    // SAFETY (@unchecked Sendable): built once in `init`, read-only afterwards, freed in
    // `deinit` once the host no longer uses the pointers (after the plugin's `deinit`).

    let descriptors: UnsafeMutablePointer<sluice_node_descriptor_t>
    let count: Int
    private var allocations: [UnsafeMutableRawPointer] = []

    init(_ descriptions: [NodeDescription]) {
        count = descriptions.count
        descriptors = .allocate(capacity: max(1, descriptions.count))
        for (index, description) in descriptions.enumerated() {
            (descriptors + index).initialize(to: descriptor(description))
        }
    }

    deinit {
        descriptors.deinitialize(count: count)
        descriptors.deallocate()
        for allocation in allocations { free(allocation) }
    }

    private func descriptor(_ description: NodeDescription) -> sluice_node_descriptor_t {
        sluice_node_descriptor_t(
            type_name: string(description.typeName),
            kind: sluice_node_kind_t(description.kind == .provider ? SLUICE_NODE_PROVIDER : SLUICE_NODE_PROCESSOR),
            summary: string(description.summary),
            inputs: ports(description.inputs), input_count: UInt32(description.inputs.count),
            outputs: ports(description.outputs), output_count: UInt32(description.outputs.count),
            params: parameters(description.parameters), param_count: UInt32(description.parameters.count),
            size: UInt32(MemoryLayout<sluice_node_descriptor_t>.size))
    }

    private func ports(_ ports: [Port]) -> UnsafePointer<sluice_port_descriptor_t>? {
        array(ports.map { port in
            sluice_port_descriptor_t(
                name: string(port.name),
                medium: sluice_medium_t(port.medium == .bytes ? SLUICE_MEDIUM_BYTES : SLUICE_MEDIUM_FRAMES),
                summary: string(port.summary))
        })
    }

    private func parameters(_ parameters: [Parameter]) -> UnsafePointer<sluice_param_descriptor_t>? {
        array(parameters.map { parameter in
            var c = sluice_param_descriptor_t()
            c.size = UInt32(MemoryLayout<sluice_param_descriptor_t>.size)
            c.flags = parameter.isLive ? UInt32(SLUICE_PARAM_LIVE) : 0
            c.name = string(parameter.name)
            c.required = parameter.isRequired
            c.unit = parameter.unit.map { string($0) }
            c.summary = string(parameter.summary)
            switch parameter.kind {
            case .number(let range):
                c.type = sluice_param_type_t(SLUICE_PARAM_NUMBER)
                (c.minimum, c.maximum) = (range.lowerBound, range.upperBound)
            case .integer(let range):
                c.type = sluice_param_type_t(SLUICE_PARAM_INTEGER)
                (c.minimum, c.maximum) = (Double(range.lowerBound), Double(range.upperBound))
            case .boolean: c.type = sluice_param_type_t(SLUICE_PARAM_BOOLEAN)
            case .string: c.type = sluice_param_type_t(SLUICE_PARAM_STRING)
            case .path: c.type = sluice_param_type_t(SLUICE_PARAM_PATH)
            case .choice(let names):
                c.type = sluice_param_type_t(SLUICE_PARAM_CHOICE)
                c.choices = array(names.map { Optional(string($0)) })
                c.choice_count = UInt32(names.count)
            }
            if let value = parameter.defaultValue {
                c.has_default = true
                c.default_value = self.value(value)
            }
            return c
        })
    }

    func value(_ value: Value) -> sluice_value_t {
        var c = sluice_value_t()
        switch value {
        case .number(let number): c.number = number
        case .integer(let integer): c.integer = Int64(integer)
        case .boolean(let boolean): c.boolean = boolean
        case .string(let text): c.string = string(text)
        }
        return c
    }

    /// A copy of `text` that lives as long as this object.
    private func string(_ text: String) -> UnsafePointer<CChar> {
        let copy = strdup(text)!
        allocations.append(UnsafeMutableRawPointer(copy))
        return UnsafePointer(copy)
    }

    /// A C array holding `elements`, living as long as this object; NULL when empty.
    private func array<Element>(_ elements: [Element]) -> UnsafePointer<Element>? {
        guard !elements.isEmpty else { return nil }
        // SAFETY: the block is sized for `elements.count` elements and suitably aligned by
        // malloc (C structs and pointers only); it is bound once and freed in `deinit`.
        let raw = malloc(MemoryLayout<Element>.stride * elements.count)!
        allocations.append(raw)
        let typed = raw.bindMemory(to: Element.self, capacity: elements.count)
        typed.initialize(from: elements, count: elements.count)
        return UnsafePointer(typed)
    }
}
