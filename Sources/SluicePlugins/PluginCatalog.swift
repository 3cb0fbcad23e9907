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
        /// Not opened: the index says, for the file as it is, that it provides these types
        /// and the graph needs none of them.
        case known(types: [String])
        /// Not opened: the index says the file failed to load, as it is, with this message,
        /// and every type the graph needs is provided elsewhere.
        case knownFailure(String)
    }

    public let searchPath: PluginSearchPath
    /// Every plugin file found, in search-path order, then by name within a folder.
    public let entries: [Entry]

    /// Scans and loads.
    ///
    /// - Parameters:
    ///   - index: what each file provided on an earlier run; every file opened here is
    ///     remembered in it (and the index saved).
    ///   - needing: the plugin node types a graph uses. When the index's fresh records provide
    ///     all of them, a file whose record names none is not opened (`.known`), nor one that
    ///     failed before (`.knownFailure`). Otherwise — a type nobody is known to provide, a
    ///     file new or changed — every file is opened, so an error can name every type there
    ///     is and suggest the closest. Nil opens every file.
    public init(searchPath: PluginSearchPath, index: PluginIndex? = nil, needing: Set<String>? = nil) {
        self.searchPath = searchPath
        var found: [(path: String, folder: PluginSearchPath.Folder, shadowedBy: String?)] = []
        var seen: [String: String] = [:]
        for folder in searchPath.folders {
            for name in Self.pluginFiles(in: folder.path) {
                let path = (folder.path.hasSuffix("/") ? folder.path : folder.path + "/") + name
                found.append((path, folder, seen[name]))
                if seen[name] == nil { seen[name] = path }
            }
        }
        // What the index knows of the files as they are now.
        var records: [String: PluginIndex.Record] = [:]
        if let index, needing != nil {
            for file in found where file.shadowedBy == nil {
                if let record = index.freshRecord(for: PluginLibrary.absolute(file.path)) { records[file.path] = record }
            }
        }
        let provided = Set(records.values.filter { $0.error == nil }.flatMap(\.types))
        let unprovided = needing.map { !$0.isSubset(of: provided) } ?? true
            || found.contains { $0.shadowedBy == nil && records[$0.path] == nil }
        var entries: [Entry] = []
        for file in found {
            if let first = file.shadowedBy {
                entries.append(Entry(path: file.path, folder: file.folder, outcome: .shadowed(by: first)))
                continue
            }
            if let needing, !unprovided, let record = records[file.path] {
                if let error = record.error {
                    entries.append(Entry(path: file.path, folder: file.folder, outcome: .knownFailure(error)))
                    continue
                }
                if record.error == nil, needing.isDisjoint(with: record.types) {
                    entries.append(Entry(path: file.path, folder: file.folder, outcome: .known(types: record.types)))
                    continue
                }
            }
            let absolute = PluginLibrary.absolute(file.path)
            do throws(PluginError) {
                let library = try PluginLibrary.load(path: file.path)
                index?.remember(absolute, types: library.graphNodeTypes.map(\.descriptor.typeName), error: nil)
                entries.append(Entry(path: file.path, folder: file.folder, outcome: .loaded(library)))
            } catch {
                index?.remember(absolute, types: [], error: error.description)
                entries.append(Entry(path: file.path, folder: file.folder, outcome: .failed(error)))
            }
        }
        index?.save()
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

    /// Why each failing file failed, opened now or known to fail from the index.
    public var failureMessages: [String] {
        entries.compactMap { entry in
            switch entry.outcome {
            case .failed(let error): error.description
            case .knownFailure(let message): message
            default: nil
            }
        }
    }

    /// Registers every loaded plugin's node types.
    ///
    /// - Throws: `PluginError.duplicateType` when a type name is taken, by a node already in
    ///   the registry (a built-in one) or by an earlier plugin. Types registered before the
    ///   duplicate stay registered.
    ///   Types of files left unopened (`.known`) are checked for clashes too, by name.
    public func register(into registry: inout NodeRegistry) throws(PluginError) {
        try Self.register(libraries, into: &registry)
        var owners: [String: String] = [:]
        for entry in entries {
            if case .loaded(let library) = entry.outcome {
                for type in library.graphNodeTypes { owners[type.descriptor.typeName] = library.path }
            }
        }
        for entry in entries {
            guard case .known(let types) = entry.outcome else { continue }
            for name in types {
                if let owner = owners[name] {
                    throw .duplicateType(name: name, path: entry.path, other: "plugin '\(owner)'")
                }
                if registry.type(named: name) != nil {
                    throw .duplicateType(name: name, path: entry.path, other: "the built-in nodes")
                }
                owners[name] = entry.path
            }
        }
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
