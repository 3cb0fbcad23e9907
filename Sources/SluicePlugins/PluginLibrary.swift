import Glibc
import SluiceGraph
import SluicePluginABI
import Synchronization

/// One plugin shared library, loaded: its entry checked, `init` called, its node types read
/// from the factory and converted to `NodeDescriptor`s.
///
/// A library is loaded once per process and path: `load(path:)` returns the same object
/// while anyone holds it. The plugin's `init` runs once, when the first object for its path
/// is made, and its `deinit` once, after the last one for that path has gone (the loader's
/// and every node's) — even when a new object was made for the path while the old one was
/// still being released, so `init` and `deinit` always alternate. The library itself stays
/// mapped: a Swift plugin's image cannot be unloaded safely (the runtime keeps pointers into
/// it), so the host never calls `dlclose`; loading the path again calls `init` again.
public final class PluginLibrary: @unchecked Sendable {
    // SAFETY (@unchecked Sendable): every stored property is set in `init` and never changes;
    // the pointers are owned by the plugin and valid until its `deinit` runs, which is after
    // the last object for the path has gone.

    /// The library's absolute path.
    public let path: String
    /// The node types the plugin provides, in its factory's order.
    public let nodeTypes: [PluginNodeType]

    /// The ABI version the plugin was built for (`SLUICE_ABI_VERSION_MIN` … `SLUICE_ABI_VERSION`):
    /// which layout its structs have, and whether its processors take events (2 and later).
    public let abiVersion: UInt32

    let entry: UnsafePointer<sluice_plugin_entry_t>
    let factory: UnsafePointer<sluice_node_factory_t>

    /// Libraries initialised in this process, by resolved path. The plugins' `init` and
    /// `deinit` run under this lock, so they never overlap.
    private static let loaded = Mutex<[String: LoadedPlugin]>([:])
    private let key: String

    /// Loads the plugin at `path` (or returns the one already loaded from there).
    ///
    /// - Throws: `PluginError`: the file is missing, not a shared library, has no entry
    ///   symbol, was built for another ABI version, failed to initialise, has no node
    ///   factory, or declares an invalid node type.
    public static func load(path: String) throws(PluginError) -> PluginLibrary {
        let absolute = Self.absolute(path)
        guard access(absolute, F_OK) == 0 else { throw .missingFile(path: absolute) }
        let key = realpath(absolute, nil).map { resolved in
            defer { free(resolved) }
            return String(cString: resolved)
        } ?? absolute
        try Self.checkPermissions(path: absolute, resolved: key)
        return try loaded.withLock { (table) throws(PluginError) -> PluginLibrary in
            if let library = table[key]?.library { return library }
            // The last object may be on its way out, its `deinit` waiting for this lock: the
            // plugin is still initialised, so the new object shares it and counts itself in.
            var plugin: LoadedPlugin
            if let initialised = table[key] { plugin = initialised } else { plugin = try Self.initialise(path: absolute) }
            let library = PluginLibrary(path: absolute, key: key, plugin: plugin)
            plugin.library = library
            plugin.objects += 1
            table[key] = plugin
            return library
        }
    }

    private init(path: String, key: String, plugin: LoadedPlugin) {
        self.path = path
        self.key = key
        entry = plugin.entry
        factory = plugin.factory
        nodeTypes = plugin.nodeTypes
        abiVersion = plugin.entry.pointee.abi_version
    }

    /// Refuses a file that another user could have written, as sudo and ssh do: the file and
    /// every folder above it, up to `/`, must belong to this user or root, and none may be
    /// writable by group or others, except a folder with the sticky bit (such as /tmp), where
    /// nobody may replace another's file. Checks the path as given (its links' folders) and
    /// the file it resolves to.
    public static func checkPermissions(path: String, resolved: String) throws(PluginError) {
        let user = geteuid()
        for start in Set([path, resolved]) {
            var current = start
            var isFile = true
            while true {
                var status = stat()
                if stat(current, &status) == 0 {
                    if status.st_uid != user && status.st_uid != 0 {
                        throw .ownedByOthers(path: path, owned: current, owner: status.st_uid)
                    }
                    let othersWrite = status.st_mode & (S_IWGRP | S_IWOTH) != 0
                    if othersWrite && (isFile || status.st_mode & S_ISVTX == 0) {
                        throw .writableByOthers(path: path, writable: current, mode: status.st_mode)
                    }
                }
                let folder = PluginSearchPath.parent(of: current)
                if folder == current || current == "/" || folder.isEmpty { break }
                current = folder
                isFile = false
            }
        }
    }

    /// Opens the library, checks its entry, calls its `init` and reads its node types.
    /// Called with `loaded` locked.
    private static func initialise(path: String) throws(PluginError) -> LoadedPlugin {
        _ = dlerror()
        guard let handle = dlopen(path, RTLD_NOW | RTLD_LOCAL) else {
            let reason = dlerror().map { String(cString: $0) } ?? "unknown reason"
            throw .notALibrary(path: path, reason: reason)
        }
        // The handle is never closed (see the type's documentation).
        guard let symbol = dlsym(handle, SLUICE_PLUGIN_ENTRY_SYMBOL) else { throw .missingEntry(path: path) }
        // SAFETY: the ABI defines `sluice_plugin_entry` as a function of this type; the ABI
        // version it returns is checked before anything else in the entry is used.
        let function = unsafeBitCast(symbol, to: sluice_plugin_entry_function_t.self)
        guard let entry = function() else { throw .invalidEntry(path: path, problem: "'sluice_plugin_entry' returned NULL") }
        // Older versions still load: version 2 only appended (common.h), so a version-1
        // plugin's structs are read as their part before `size` and it gets no events.
        let version = entry.pointee.abi_version
        guard (SLUICE_ABI_VERSION_MIN...SLUICE_ABI_VERSION).contains(version) else {
            throw .versionMismatch(path: path, found: version, expected: SLUICE_ABI_VERSION)
        }
        guard let initialise = entry.pointee.`init`, let getFactory = entry.pointee.get_factory,
            entry.pointee.deinit != nil
        else { throw .invalidEntry(path: path, problem: "its entry leaves init, deinit or get_factory NULL") }
        guard initialise(path) else { throw .initFailed(path: path) }
        guard let raw = getFactory(SLUICE_NODE_FACTORY_ID) else {
            entry.pointee.deinit?()
            throw .missingFactory(path: path)
        }
        // SAFETY: the ABI says the pointer returned for SLUICE_NODE_FACTORY_ID is a
        // sluice_node_factory_t, valid until `deinit`.
        let factory = raw.assumingMemoryBound(to: sluice_node_factory_t.self)
        do throws(PluginError) {
            let nodeTypes = try Self.readTypes(of: factory, path: path, abiVersion: version)
            return LoadedPlugin(entry: entry, factory: factory, nodeTypes: nodeTypes)
        } catch {
            entry.pointee.deinit?()
            throw error
        }
    }

    /// Tests only: runs at the start of `deinit` with the library's path, before the table is
    /// locked — the moment a load can find the path's last object already gone.
    static let releaseHook = Mutex<(@Sendable (String) -> Void)?>(nil)

    deinit {
        Self.releaseHook.withLock { $0 }?(path)
        Self.loaded.withLock { table in
            guard var plugin = table[key] else { return }
            plugin.objects -= 1
            if plugin.objects == 0 {
                table[key] = nil
                entry.pointee.deinit?()
            } else {
                table[key] = plugin
            }
        }
    }

    private static func readTypes(
        of factory: UnsafePointer<sluice_node_factory_t>, path: String, abiVersion: UInt32
    ) throws(PluginError) -> [PluginNodeType] {
        guard let count = factory.pointee.count, let get = factory.pointee.get_descriptor,
            factory.pointee.create_provider != nil, factory.pointee.create_processor != nil
        else {
            throw .invalidDescriptor(path: path, type: "?", problem: "the node factory leaves a function pointer NULL")
        }
        var types: [PluginNodeType] = []
        var names: Set<String> = []
        for index in 0..<count(factory) {
            guard let descriptor = get(factory, index) else {
                throw .invalidDescriptor(path: path, type: "#\(index)", problem: "get_descriptor(\(index)) returned NULL")
            }
            let type = try DescriptorConversion.convert(descriptor, path: path, abiVersion: abiVersion)
            guard names.insert(type.descriptor.typeName).inserted else {
                throw .duplicateType(name: type.descriptor.typeName, path: path, other: "the same plugin")
            }
            types.append(type)
        }
        return types
    }

    /// `path` made absolute against the current directory (given explicitly by the caller).
    static func absolute(_ path: String) -> String {
        if path.hasPrefix("/") { return path }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard getcwd(&buffer, buffer.count) != nil else { return path }
        let directory = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return directory == "/" ? "/" + path : directory + "/" + path
    }

    /// `NodeType`s for the registry: descriptors with factories that create the adapters.
    public var graphNodeTypes: [NodeType] {
        nodeTypes.map { type in
            NodeType(type.descriptor) { [self] parameters in
                try self.makeNode(type, parameters)
            }
        }
    }

    /// [control-thread] Creates an instance of `type` and wraps it as a graph node.
    func makeNode(_ type: PluginNodeType, _ parameters: NodeParameters) throws -> any Node {
        // SAFETY: `readTypes` checked both create functions are non-NULL; the type's C strings
        // and the factory stay valid while `self` lives; the values passed live for the call
        // only, as factory.h says.
        var error = sluice_error_t()
        switch type.kind {
        case .provider:
            var provider = sluice_provider_t()
            let created = CParameters.with(type, parameters) { values, count in
                factory.pointee.create_provider!(factory, type.typeName, values, count, &provider, &error)
            }
            guard created, provider.instance != nil, let vtable = provider.vtable else {
                throw creationError(type, error, created: created)
            }
            // Barge-in replaces the instance with a fresh one of the same parameters, or of
            // some changed (`configure`); the same vtable is expected of it.
            let recreate = { [self] (changes: [String: ParameterValue]) -> UnsafeMutableRawPointer? in
                var fresh = sluice_provider_t()
                var error = sluice_error_t()
                var changed = parameters
                for (name, value) in changes { changed[name] = value }
                let created = CParameters.with(type, changed) { values, count in
                    factory.pointee.create_provider!(factory, type.typeName, values, count, &fresh, &error)
                }
                guard created, let instance = fresh.instance else { return nil }
                guard fresh.vtable == vtable else {
                    fresh.vtable?.pointee.destroy?(instance)
                    return nil
                }
                return instance
            }
            return try PluginProviderSource(
                library: self, type: type, instance: provider.instance!,
                functions: try functions(vtable, type, destroy: { $0.destroy?(provider.instance) }), recreate: recreate)
        case .processor:
            var processor = sluice_processor_t()
            let created = CParameters.with(type, parameters) { values, count in
                factory.pointee.create_processor!(factory, type.typeName, values, count, &processor, &error)
            }
            guard created, processor.instance != nil, let vtable = processor.vtable else {
                throw creationError(type, error, created: created)
            }
            let functions = try functions(vtable, type, destroy: { $0.destroy?(processor.instance) })
            if type.descriptor.parameters.contains(where: \.isLive) {
                return try LivePluginProcessorNode(library: self, type: type, instance: processor.instance!, functions: functions)
            }
            return try PluginProcessorNode(library: self, type: type, instance: processor.instance!, functions: functions)
        }
    }

    /// [control-thread] A copy of the plugin's vtable in the host's layout, read as far as the
    /// plugin's version has it (common.h, "Growing the ABI"): a version-1 vtable is the part
    /// before `size`; a later one as far as its `size`, functions past it NULL. A vtable
    /// whose `size` is smaller than version 2's destroys the instance and is refused.
    private func functions<VTable: VersionedStruct>(
        _ vtable: UnsafePointer<VTable>, _ type: PluginNodeType, destroy: (VTable) -> Void
    ) throws(NodeCreationError) -> VTable {
        let functions: VTable
        do throws(GrownStructError) {
            functions = try GrownStruct.read(UnsafeRawPointer(vtable), abiVersion: abiVersion, as: VTable.self)
        } catch {
            // The part version 1 had is there whatever `size` says: destroy through it.
            destroy(try! GrownStruct.read(UnsafeRawPointer(vtable), abiVersion: 1, as: VTable.self))
            throw NodeCreationError(
                "'\(type.descriptor.typeName)' (plugin \(path)): its \(VTable.cName)'s size is \(error.size), "
                    + "less than version 2's \(error.minimum) bytes",
                fix: "set `size` to sizeof(\(VTable.cName)) when filling it in")
        }
        return functions
    }

    private func creationError(_ type: PluginNodeType, _ error: sluice_error_t, created: Bool) -> NodeCreationError {
        guard created else {
            let failure = PluginFailure(error)
            return NodeCreationError(
                "'\(type.descriptor.typeName)' (plugin \(path)) could not be created: \(failure.message)",
                fix: failure.code.isEmpty ? nil : "the plugin reports '\(failure.code)'")
        }
        return NodeCreationError("'\(type.descriptor.typeName)' (plugin \(path)) returned no instance or no vtable")
    }
}

/// A plugin initialised in this process: what every `PluginLibrary` object for its path
/// shares, and how many of those objects are alive.
private struct LoadedPlugin: @unchecked Sendable {
    // SAFETY (@unchecked Sendable): read and written only under `PluginLibrary.loaded`'s
    // lock; the pointers are the plugin's, valid until its `deinit`.
    let entry: UnsafePointer<sluice_plugin_entry_t>
    let factory: UnsafePointer<sluice_node_factory_t>
    let nodeTypes: [PluginNodeType]
    /// The newest object, not kept alive by the table.
    weak var library: PluginLibrary?
    /// Objects for the path alive, a released one counting until its own `deinit` has run.
    var objects = 0
}

/// One node type a plugin provides.
public struct PluginNodeType: @unchecked Sendable {
    // SAFETY (@unchecked Sendable): `typeName` and the strings `parameters` point at are the
    // plugin's constant data, valid while the library that listed them is alive; nothing
    // writes through them.

    public enum Kind: Sendable, Hashable {
        case provider
        case processor
    }

    public let descriptor: NodeDescriptor
    public let kind: Kind
    /// The plugin's `type_name`, as `create_*` takes it.
    let typeName: UnsafePointer<CChar>
    /// The plugin's parameter entries in the host's layout, in descriptor order (GrownStruct).
    let parameters: [sluice_param_descriptor_t]
}

/// A `sluice_error_t` read into Swift strings.
struct PluginFailure: Sendable, Hashable {
    var code: String
    var message: String

    init(_ error: sluice_error_t) {
        var error = error
        // SAFETY: the arrays are fixed-size fields of a local copy; `text` stops at the first
        // NUL or the array's end, so text the plugin failed to terminate is still bounded.
        code = withUnsafeBytes(of: &error.code) { Self.text($0) }
        message = withUnsafeBytes(of: &error.message) { Self.text($0) }
        if message.isEmpty { message = "no reason given" }
    }

    /// The NUL-terminated text in a fixed array (the whole array when no NUL).
    private static func text(_ bytes: UnsafeRawBufferPointer) -> String {
        let end = bytes.firstIndex(of: 0) ?? bytes.count
        return String(decoding: bytes[..<end], as: UTF8.self)
    }
}
