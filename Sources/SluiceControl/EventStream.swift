import Foundation
import Synchronization

/// The events a served graph pushes to the connections that `watch` it: one JSON object a
/// line, written without waiting (a client that stops reading loses events, counted in the
/// `dropped` field of the next one it gets, rather than holding the graph's control thread).
///
/// Threading: [thread-safe].
public final class EventStream: Sendable {
    private struct Watcher: Sendable {
        let connection: ControlConnection
        let levels: Bool
        var dropped = 0
    }

    private let watchers = Mutex<[Watcher]>([])

    public init() {}

    /// Starts sending events to `connection` until it closes.
    public func add(_ connection: ControlConnection, levels: Bool) {
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
        watchers.withLock { watchers in
            watchers.removeAll { $0.connection.isClosed }
            for index in watchers.indices where event != "level" || watchers[index].levels {
                var line = object
                if watchers[index].dropped > 0 { line["dropped"] = watchers[index].dropped }
                if watchers[index].connection.send(ControlJSON.encode(line), dropIfFull: true) {
                    watchers[index].dropped = 0
                } else {
                    watchers[index].dropped += 1
                }
            }
        }
    }
}
