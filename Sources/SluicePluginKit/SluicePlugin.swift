import SluicePluginABI
import Synchronization

/// Turns a list of `PluginNode`s into the plugin's C entry.
///
/// A Swift plugin is a dynamic library that links this kit (statically) and exports the
/// entry with `@c`:
///
/// ```swift
/// import SluicePluginABI
/// import SluicePluginKit
///
/// @c(sluice_plugin_entry)
/// public func sluicePluginEntry() -> UnsafePointer<sluice_plugin_entry_t>? {
///     SluicePlugin.entry { [.processor(Gain.description, make: { try Gain($0) })] }
/// }
/// ```
///
/// Only C types cross the boundary: the host never sees the kit's Swift types, so a host and
/// a plugin built with different copies of the kit (or of Swift) still meet.
public enum SluicePlugin {
    /// [control-thread] The plugin's entry. `nodes` is called in the plugin's `init` (once
    /// per load) to list its node types.
    public static func entry(_ nodes: @escaping @Sendable () -> [PluginNode]) -> UnsafePointer<sluice_plugin_entry_t> {
        KitState.shared.state.withLock { state in
            if state.define == nil { state.define = nodes }
        }
        return UnsafePointer(KitState.shared.entry)
    }
}

/// The kit's state in this plugin: one per shared library (each plugin links its own copy).
final class KitState: Sendable {
    static let shared = KitState()

    struct State: @unchecked Sendable {
        // SAFETY (@unchecked Sendable): only touched under `state`'s lock.
        var define: (@Sendable () -> [PluginNode])?
        /// Between `init` and `deinit`: the node types and their C descriptors.
        var nodes: [PluginNode] = []
        var descriptors: CDescriptors?
    }

    let state = Mutex(State())

    // SAFETY: `entry` and `factory` are allocated once, initialised here and never written
    // again or freed: the host reads them for as long as the library is mapped.
    nonisolated(unsafe) let entry: UnsafeMutablePointer<sluice_plugin_entry_t>
    nonisolated(unsafe) let factory: UnsafeMutablePointer<sluice_node_factory_t>

    private init() {
        entry = .allocate(capacity: 1)
        entry.initialize(to: sluice_plugin_entry_t(
            abi_version: SLUICE_ABI_VERSION, init: kitInit, deinit: kitDeinit, get_factory: kitGetFactory))
        factory = .allocate(capacity: 1)
        factory.initialize(to: sluice_node_factory_t(
            count: factoryCount, get_descriptor: factoryGetDescriptor, create_provider: factoryCreateProvider,
            create_processor: factoryCreateProcessor))
    }
}

extension PluginError {
    /// Writes code and message into a host's `sluice_error_t`, truncated to fit.
    func write(to error: UnsafeMutablePointer<sluice_error_t>?) {
        guard let error else { return }
        Self.copy(code, into: &error.pointee.code)
        Self.copy(message, into: &error.pointee.message)
    }

    private static func copy<Storage>(_ text: String, into storage: inout Storage) {
        // SAFETY: `storage` is one of sluice_error_t's fixed char arrays; at most
        // `count − 1` bytes are copied, then a NUL, so it never overflows.
        withUnsafeMutableBytes(of: &storage) { bytes in
            let utf8 = Array(text.utf8.prefix(bytes.count - 1))
            bytes.copyBytes(from: utf8)
            bytes[utf8.count] = 0
        }
    }
}
