import Foundation
import Synchronization

/// The events a served graph pushes to the connections that `watch` it: one JSON object a
/// line, queued without waiting (a client that stops reading loses events, counted in the
/// `dropped` field of the next one it gets, rather than holding the graph's control thread;
/// `ControlConnection`). No lock is held while a connection writes.
///
/// Threading: [thread-safe].
public final class EventStream: Sendable {
    private struct Watcher: Sendable {
        let connection: ControlConnection
        let levels: Bool
    }

    private let watchers = Mutex<[Watcher]>([])

    public init() {}

    /// Starts sending events to `connection` until it closes.
    public func add(_ connection: ControlConnection, levels: Bool) {
        connection.startWatching()
        watchers.withLock { $0.append(Watcher(connection: connection, levels: levels)) }
    }

    /// Whether anyone watches levels (they are measured only then).
    public var wantsLevels: Bool { watchers.withLock { $0.contains { $0.levels } } }

    public var isEmpty: Bool { watchers.withLock { $0.isEmpty } }

    /// Sends `event` (its name, then its fields) to every watcher; `level` events only to
    /// those that asked for them.
    public func emit(_ event: String, _ fields: [String: any Sendable] = [:]) {
        var object: [String: Any] = fields.mapValues { $0 as Any }
        object["event"] = event
        let receivers = watchers.withLock { watchers -> [ControlConnection] in
            watchers.removeAll { $0.connection.isClosed }
            return watchers.filter { event != "level" || $0.levels }.map(\.connection)
        }
        for connection in receivers { connection.send(event: object) }
    }
}
