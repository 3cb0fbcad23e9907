import SluicePluginABI

/// Why a plugin could not be loaded or registered. Each case names the file and says what
/// would fix it.
public enum PluginError: Error, Sendable, Hashable, CustomStringConvertible {
    /// No file at the path.
    case missingFile(path: String)
    /// The file exists but is not a shared library the dynamic loader accepts (a text file
    /// named `.so`, a library for another machine); `reason` is `dlerror`'s text.
    case notALibrary(path: String, reason: String)
    /// A shared library without the `sluice_plugin_entry` symbol: not a Sluice plugin.
    case missingEntry(path: String)
    /// The entry function returned NULL, or an entry with a NULL function.
    case invalidEntry(path: String, problem: String)
    /// The plugin was built for an ABI version this host does not load: `expected` is the
    /// newest it loads (`SLUICE_ABI_VERSION`; the oldest is `SLUICE_ABI_VERSION_MIN`).
    case versionMismatch(path: String, found: UInt32, expected: UInt32)
    /// The plugin's `init` returned false.
    case initFailed(path: String)
    /// The plugin has no node factory (`sluice.node-factory/1`).
    case missingFactory(path: String)
    /// A descriptor breaks the ABI's rules (a name with spaces, a range upside down).
    case invalidDescriptor(path: String, type: String, problem: String)
    /// Two node types share a name: one from `path`, the other from `other` (another
    /// plugin's path, or "the built-in nodes").
    case duplicateType(name: String, path: String, other: String)
    /// The file, or the folder holding it, may be written by other users, so its code may not
    /// be the code its owner put there: `writable` is the file or folder, `mode` its bits.
    case writableByOthers(path: String, writable: String, mode: UInt32)
    /// The file, or a folder above it, belongs to another user (not this one, not root).
    case ownedByOthers(path: String, owned: String, owner: UInt32)

    /// The plugin file at fault.
    public var path: String {
        switch self {
        case .missingFile(let path), .notALibrary(let path, _), .missingEntry(let path), .invalidEntry(let path, _),
            .versionMismatch(let path, _, _), .initFailed(let path), .missingFactory(let path),
            .invalidDescriptor(let path, _, _), .duplicateType(_, let path, _), .writableByOthers(let path, _, _),
            .ownedByOthers(let path, _, _):
            path
        }
    }

    public var description: String {
        switch self {
        case .missingFile(let path):
            "plugin '\(path)' does not exist"
        case .notALibrary(let path, let reason):
            "plugin '\(path)' is not a shared library (\(reason)); a plugin is a .so built with -shared"
        case .missingEntry(let path):
            "'\(path)' is a shared library but not a Sluice plugin: it does not export 'sluice_plugin_entry' (see docs/plugins.md)"
        case .invalidEntry(let path, let problem):
            "plugin '\(path)': \(problem)"
        case .versionMismatch(let path, let found, let expected):
            "plugin '\(path)' was built for plugin ABI version \(found), but this sluice loads versions \(SLUICE_ABI_VERSION_MIN) to \(expected)"
                + (found > expected ? " (the plugin is newer); update sluice, or" : ";")
                + " rebuild it against this sluice's headers (pkg-config sluice-plugin)"
        case .initFailed(let path):
            "plugin '\(path)' failed to initialise (its init returned false)"
        case .missingFactory(let path):
            "plugin '\(path)' has no node factory ('sluice.node-factory/1')"
        case .invalidDescriptor(let path, let type, let problem):
            "plugin '\(path)', node type '\(type)': \(problem)"
        case .duplicateType(let name, let path, let other):
            "node type '\(name)' from plugin '\(path)' is already defined by \(other); remove one of them from the plugin search path"
        case .writableByOthers(let path, let writable, let mode):
            "plugin '\(path)' is not loaded: '\(writable)' may be written by other users (mode \(String(mode & 0o7777, radix: 8))); "
                + "run `chmod go-w '\(writable)'` if it is yours"
        case .ownedByOthers(let path, let owned, let owner):
            "plugin '\(path)' is not loaded: '\(owned)' belongs to uid \(owner), who could have put anything there; "
                + "install plugins where only you (or root) can write"
        }
    }
}
