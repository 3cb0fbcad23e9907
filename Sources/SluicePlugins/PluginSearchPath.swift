import Glibc

/// The folders plugins are found in, in order:
///
/// 1. the graph file's folder (none for a one-line graph);
/// 2. each folder of `SLUICE_PLUGIN_PATH` (colon-separated; empty entries are skipped, so the
///    current directory is searched only when named, as `.`);
/// 3. the install's plugin folder: `<prefix>/lib/sluice/plugins` beside the tool's `bin`, or,
///    in a build tree where no such folder exists, the folder holding the tool itself (where
///    `swift build` puts the plugins it builds).
///
/// The current directory is never searched implicitly.
public struct PluginSearchPath: Sendable, Hashable {
    /// Where a folder on the path came from.
    public enum Origin: String, Sendable, Hashable {
        case graphFolder = "graph folder"
        case environment = "SLUICE_PLUGIN_PATH"
        case install = "install"
    }

    public struct Folder: Sendable, Hashable {
        public var path: String
        public var origin: Origin

        public init(_ path: String, origin: Origin) {
            self.path = path
            self.origin = origin
        }
    }

    public var folders: [Folder]

    public init(folders: [Folder]) {
        self.folders = folders
    }

    /// The standard order.
    ///
    /// - Parameters:
    ///   - graphFolder: the graph file's folder, or nil.
    ///   - environmentPath: `SLUICE_PLUGIN_PATH`'s value (by default read from the
    ///     environment), or nil.
    ///   - installFolder: the install's plugin folder (by default `installFolder()`), or nil.
    public static func standard(
        graphFolder: String?, environmentPath: String? = environmentValue(), installFolder: String? = installFolder()
    ) -> PluginSearchPath {
        var folders: [Folder] = []
        if let graphFolder, !graphFolder.isEmpty { folders.append(Folder(graphFolder, origin: .graphFolder)) }
        for entry in (environmentPath ?? "").split(separator: ":", omittingEmptySubsequences: true) {
            folders.append(Folder(String(entry), origin: .environment))
        }
        if let installFolder { folders.append(Folder(installFolder, origin: .install)) }
        return PluginSearchPath(folders: folders)
    }

    /// `SLUICE_PLUGIN_PATH`, or nil when unset.
    public static func environmentValue() -> String? {
        getenv("SLUICE_PLUGIN_PATH").map { String(cString: $0) }
    }

    /// The install's plugin folder for the running executable (see the type's documentation),
    /// or nil when the executable's path is unknown.
    public static func installFolder() -> String? {
        executableFolder().map(installFolder(forToolIn:))
    }

    /// `<folder>/../lib/sluice/plugins` when it exists, else `folder`.
    public static func installFolder(forToolIn folder: String) -> String {
        let installed = parent(of: folder) + "/lib/sluice/plugins"
        var status = stat()
        if stat(installed, &status) == 0, status.st_mode & S_IFMT == S_IFDIR { return installed }
        return folder
    }

    /// The folder of `/proc/self/exe`.
    public static func executableFolder() -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        let path = String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return parent(of: path)
    }

    /// The folder a path names its file in: "/a/b/c" → "/a/b", "c" → ".", "/c" → "/".
    static func parent(of path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return "." }
        return slash == trimmed.startIndex ? "/" : String(trimmed[..<slash])
    }
}
