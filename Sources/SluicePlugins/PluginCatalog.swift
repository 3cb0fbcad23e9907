import Glibc
import SluiceGraph

/// The plugins on a search path: every file named `libsluice-<name>.so` in each folder,
/// loaded in search-path order. A file name found in an earlier folder shadows the same name
/// in later ones (the later file is not loaded), so a graph's folder can carry its own
/// version of an installed plugin. Files that fail to load are kept with their error.
public struct PluginCatalog: Sendable {
    /// A plugin file's name starts with this…
    public static let filePrefix = "libsluice-"
    /// …and ends with this.
    public static let fileSuffix = ".so"

    /// One file found on the path.
    public struct Entry: Sendable {
        public var path: String
        public var folder: PluginSearchPath.Folder
        public var outcome: Outcome
    }

    public enum Outcome: Sendable {
        case loaded(PluginLibrary)
        case failed(PluginError)
        /// The same file name was found earlier on the path, at this path.
        case shadowed(by: String)
    }

    public let searchPath: PluginSearchPath
    /// Every plugin file found, in search-path order, then by name within a folder.
    public let entries: [Entry]

    /// Scans and loads.
    public init(searchPath: PluginSearchPath) {
        self.searchPath = searchPath
        var entries: [Entry] = []
        var seen: [String: String] = [:]
        for folder in searchPath.folders {
            for name in Self.pluginFiles(in: folder.path) {
                let path = (folder.path.hasSuffix("/") ? folder.path : folder.path + "/") + name
                if let first = seen[name] {
                    entries.append(Entry(path: path, folder: folder, outcome: .shadowed(by: first)))
                    continue
                }
                seen[name] = path
                do throws(PluginError) {
                    entries.append(Entry(path: path, folder: folder, outcome: .loaded(try PluginLibrary.load(path: path))))
                } catch {
                    entries.append(Entry(path: path, folder: folder, outcome: .failed(error)))
                }
            }
        }
        self.entries = entries
    }

    /// The libraries that loaded, in search-path order.
    public var libraries: [PluginLibrary] {
        entries.compactMap { entry in
            if case .loaded(let library) = entry.outcome { return library }
            return nil
        }
    }

    /// The files that failed, with why.
    public var errors: [PluginError] {
        entries.compactMap { entry in
            if case .failed(let error) = entry.outcome { return error }
            return nil
        }
    }

    /// Registers every loaded plugin's node types.
    ///
    /// - Throws: `PluginError.duplicateType` when a type name is taken, by a node already in
    ///   the registry (a built-in one) or by an earlier plugin. Types registered before the
    ///   duplicate stay registered.
    public func register(into registry: inout NodeRegistry) throws(PluginError) {
        try Self.register(libraries, into: &registry)
    }

    /// Registers the node types of `libraries`, in order (see `register(into:)`).
    public static func register(_ libraries: [PluginLibrary], into registry: inout NodeRegistry) throws(PluginError) {
        var owners: [String: String] = [:]
        for library in libraries {
            for type in library.graphNodeTypes {
                let name = type.descriptor.typeName
                do throws(NodeRegistry.RegistrationError) {
                    try registry.register(type)
                } catch {
                    throw .duplicateType(name: name, path: library.path, other: owners[name].map { "plugin '\($0)'" } ?? "the built-in nodes")
                }
                owners[name] = library.path
            }
        }
    }

    /// The plugin file names in `folder`, sorted; none when it cannot be read.
    public static func pluginFiles(in folder: String) -> [String] {
        guard let directory = opendir(folder) else { return [] }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            // SAFETY: `entry` is valid until the next `readdir`; `d_name` is a NUL-terminated
            // array inside it, read no further than its NUL.
            let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard name.hasPrefix(filePrefix), name.hasSuffix(fileSuffix), name.count > filePrefix.count + fileSuffix.count else {
                continue
            }
            var status = stat()
            let path = (folder.hasSuffix("/") ? folder : folder + "/") + name
            guard stat(path, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { continue }
            names.append(name)
        }
        return names.sorted()
    }
}
