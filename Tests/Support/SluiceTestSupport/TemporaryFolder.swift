import Foundation

/// A fresh folder under the system's temporary folder, removed with everything in it when the
/// last reference goes (at the end of the test that made it).
public final class TemporaryFolder: Sendable {
    public let url: URL

    public init(_ label: String = "sluice-test") {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("\(label)-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    public var path: String { url.path }

    /// `name` inside the folder.
    public func file(_ name: String) -> URL { url.appendingPathComponent(name) }

    /// `name` inside the folder, as a path.
    public func path(_ name: String) -> String { file(name).path }

    /// Writes `text` to `name` in the folder; returns its URL.
    @discardableResult
    public func write(_ text: String, to name: String) throws -> URL {
        let target = file(name)
        try Data(text.utf8).write(to: target)
        return target
    }

    /// Copies the file at `source` into the folder as `name`; returns the copy's path.
    @discardableResult
    public func copy(_ source: String, as name: String) throws -> String {
        let target = path(name)
        try FileManager.default.copyItem(atPath: source, toPath: target)
        return target
    }
}
