import CLadspa
import Glibc
import SluiceGraph
import SluicePlugins
import Synchronization

/// One LADSPA library (`amp.so`), opened once per process and kept open: its plugins'
/// descriptors are static data of the library, and many LADSPA libraries do not survive
/// being unloaded and loaded again.
///
/// Opened only after the same check as Sluice's own plugins (`PluginLibrary.checkPermissions`:
/// nothing another user may write), since opening a library runs its code.
public final class LADSPALibrary: @unchecked Sendable {
    // SAFETY (@unchecked Sendable): everything is read-only after `init`; the descriptors
    // point into the library, which is never closed.

    /// The path it was opened from.
    public let path: String
    /// Its plugins, in the library's order.
    public let plugins: [LADSPAPlugin]

    /// The libraries opened so far, by resolved path.
    private static let opened = Mutex<[String: LADSPALibrary]>([:])

    /// Libraries report at most this many plugins and ports each; a larger count is a broken
    /// library, not a real one (the biggest Debian ships hold a few dozen).
    static let pluginLimit = 4096
    static let portLimit = 1024

    private init(path: String, plugins: [LADSPAPlugin]) {
        self.path = path
        self.plugins = plugins
    }

    /// The plugin named `label`, or nil.
    public func plugin(label: String) -> LADSPAPlugin? { plugins.first { $0.label == label } }

    /// Opens the library at `path` (once per process) and reads its plugins. [control-thread]
    public static func open(path: String) throws(LADSPAError) -> LADSPALibrary {
        guard access(path, R_OK) == 0 else { throw .missingFile(path: path) }
        let resolved = realpath(path, nil).map { pointer in
            defer { free(pointer) }
            return String(cString: pointer)
        } ?? path
        do throws(PluginError) {
            try PluginLibrary.checkPermissions(path: path, resolved: resolved)
        } catch {
            throw .untrusted(error.description)
        }
        return try opened.withLock { (table) throws(LADSPAError) -> LADSPALibrary in
            if let library = table[resolved] { return library }
            let library = try load(path: path)
            table[resolved] = library
            return library
        }
    }

    private static func load(path: String) throws(LADSPAError) -> LADSPALibrary {
        // RTLD_LOCAL: two libraries' symbols (many define the same helper names) stay apart.
        guard let handle = dlopen(path, RTLD_NOW | RTLD_LOCAL) else {
            throw .notALibrary(path: path, reason: dlerror().map { String(cString: $0) } ?? "unknown error")
        }
        guard let symbol = dlsym(handle, "ladspa_descriptor") else {
            dlclose(handle)
            throw .notLADSPA(path: path)
        }
        typealias DescriptorFunction = @convention(c) (UInt) -> UnsafePointer<LADSPA_Descriptor>?
        // SAFETY: `ladspa_descriptor` has this signature by the LADSPA specification.
        let descriptorAt = unsafeBitCast(symbol, to: DescriptorFunction.self)
        var plugins: [LADSPAPlugin] = []
        var index: UInt = 0
        while let descriptor = descriptorAt(index) {
            guard plugins.count < pluginLimit else { throw .invalid(path: path, reason: "more than \(pluginLimit) plugins") }
            plugins.append(try LADSPAPlugin(library: path, descriptor: descriptor))
            index += 1
        }
        return LADSPALibrary(path: path, plugins: plugins)
    }
}

/// Why a LADSPA library or plugin cannot be used, in a sentence.
public enum LADSPAError: Error, Sendable, Hashable, CustomStringConvertible {
    case missingFile(path: String)
    case untrusted(String)
    case notALibrary(path: String, reason: String)
    case notLADSPA(path: String)
    case invalid(path: String, reason: String)

    public var description: String {
        switch self {
        case .missingFile(let path): "cannot read LADSPA library '\(path)'"
        case .untrusted(let reason): reason
        case .notALibrary(let path, let reason): "'\(path)' is not a shared library: \(reason)"
        case .notLADSPA(let path): "'\(path)' is not a LADSPA library (it has no `ladspa_descriptor`)"
        case .invalid(let path, let reason): "LADSPA library '\(path)' is broken: \(reason)"
        }
    }
}
