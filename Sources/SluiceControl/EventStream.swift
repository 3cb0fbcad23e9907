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
    private let listeners = Mutex<[any EventListener]>([])

    public init() {}

    /// Starts sending events to `connection` until it closes.
    public func add(_ connection: ControlConnection, levels: Bool) {
        connection.startWatching()
        watchers.withLock { $0.append(Watcher(connection: connection, levels: levels)) }
    }

    /// Sends events to `listener` too (the OSC subscribers), for as long as the stream lives.
    public func add(_ listener: any EventListener) {
        listeners.withLock { $0.append(listener) }
    }

    /// Whether anyone watches levels (they are measured only then).
    public var wantsLevels: Bool {
        watchers.withLock { $0.contains { $0.levels } } || listeners.withLock { $0.contains { $0.wantsLevels } }
    }

    public var isEmpty: Bool { watchers.withLock { $0.isEmpty } && listeners.withLock { !$0.contains { $0.isListening } } }

    /// The events only those who asked for levels get.
    public static let levelEvents: Set<String> = ["level", "meter", "control-output"]

    /// Sends `event` (its name, then its fields) to every watcher and listener; `level` and
    /// `meter` events only to those that asked for levels.
    public func emit(_ event: String, _ fields: [String: any Sendable] = [:]) {
        let isLevel = Self.levelEvents.contains(event)
        var object: [String: Any] = fields.mapValues { $0 as Any }
        object["event"] = event
        let receivers = watchers.withLock { watchers -> [ControlConnection] in
            watchers.removeAll { $0.connection.isClosed }
            return watchers.filter { !isLevel || $0.levels }.map(\.connection)
        }
        for connection in receivers { connection.send(event: object) }
        let listening = listeners.withLock { $0.filter { $0.isListening && (!isLevel || $0.wantsLevels) } }
        for listener in listening { listener.deliver(event, fields) }
    }
}

/// Something beyond the socket's watchers that takes a served graph's events (the OSC
/// subscribers). `deliver` is called on the thread that emits, so it must not wait: queue
/// or send without blocking.
public protocol EventListener: AnyObject, Sendable {
    /// Whether anyone listens now.
    var isListening: Bool { get }
    /// Whether anyone listening wants `level` and `meter` events.
    var wantsLevels: Bool { get }
    func deliver(_ event: String, _ fields: [String: any Sendable])
}
