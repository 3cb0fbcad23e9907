import SluicePluginABI

/// A struct of the plugin ABI that grows by appending (common.h, "Growing the ABI"): version 1's
/// struct is the part before `size`; from version 2 `size` says how much of it the plugin's
/// build has.
protocol VersionedStruct {
    /// All zero: what a field the plugin's struct lacks reads as.
    init()
    /// The C type's name, for messages.
    static var cName: String { get }
    /// Where `size` sits, which is where version 1's struct ended.
    static var sizeOffset: Int { get }
    /// Where version 2's last field ends: the smallest `size` a version-2 plugin may give.
    static var version2Size: Int { get }
}

/// `size` too small for version 2 (a plugin that left it 0).
struct GrownStructError: Error {
    var size: Int
    var minimum: Int
}

enum GrownStruct {
    /// [control-thread] The struct at `raw` in the host's layout: the bytes the plugin's
    /// version and `size` say it has, the rest zero. Reads nothing past the plugin's struct,
    /// whichever of the two layouts is larger.
    static func read<T: VersionedStruct>(_ raw: UnsafeRawPointer, abiVersion: UInt32, as type: T.Type) throws(GrownStructError) -> T {
        let available = try size(at: raw, abiVersion: abiVersion, as: type)
        var value = T()
        withUnsafeMutableBytes(of: &value) { bytes in
            // SAFETY: the plugin's struct holds `available` bytes from `raw` (its version's
            // layout, or its own `size`); at most the host struct's size is copied into it.
            bytes.copyMemory(from: UnsafeRawBufferPointer(start: raw, count: min(available, bytes.count)))
        }
        return value
    }

    /// [control-thread] How many bytes the plugin's struct at `raw` has: version 1's size for
    /// a version-1 plugin, else its `size`, checked against version 2's.
    static func size<T: VersionedStruct>(at raw: UnsafeRawPointer, abiVersion: UInt32, as type: T.Type) throws(GrownStructError) -> Int {
        guard abiVersion >= 2 else { return T.sizeOffset }
        // SAFETY: a plugin of version 2 or later has `size` at this offset of its struct.
        let size = Int(raw.loadUnaligned(fromByteOffset: T.sizeOffset, as: UInt32.self))
        guard size >= T.version2Size else { throw GrownStructError(size: size, minimum: T.version2Size) }
        return size
    }
}

extension sluice_node_descriptor_t: VersionedStruct {
    static var cName: String { "sluice_node_descriptor_t" }
    static var sizeOffset: Int { MemoryLayout<Self>.offset(of: \.size)! }
    static var version2Size: Int { sizeOffset + 4 }
}

extension sluice_param_descriptor_t: VersionedStruct {
    static var cName: String { "sluice_param_descriptor_t" }
    static var sizeOffset: Int { MemoryLayout<Self>.offset(of: \.size)! }
    static var version2Size: Int { MemoryLayout<Self>.offset(of: \.flags)! + 4 }
}

extension sluice_processor_vtable_t: VersionedStruct {
    static var cName: String { "sluice_processor_vtable_t" }
    static var sizeOffset: Int { MemoryLayout<Self>.offset(of: \.size)! }
    static var version2Size: Int { sizeOffset + 4 }
}

extension sluice_provider_vtable_t: VersionedStruct {
    static var cName: String { "sluice_provider_vtable_t" }
    static var sizeOffset: Int { MemoryLayout<Self>.offset(of: \.size)! }
    static var version2Size: Int { sizeOffset + 4 }
}
