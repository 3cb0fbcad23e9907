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
    /// The event is encoded once, whoever and however many get it.
    public func emit(_ event: String, _ fields: [String: any Sendable] = [:]) {
        emit(EncodedEvent(event, fields))
    }

    /// Tells every listener that the control loop finished a look: one that holds events back
    /// to send several at once sends those that have waited long enough.
    public func lookEnded() {
        for listener in listeners.withLock({ $0 }) where listener.isListening { listener.lookEnded() }
    }

    /// Sends an event whose JSON may be written already (`EncodedEvent(_:_:json:)`).
    public func emit(_ encoded: EncodedEvent) {
        let event = encoded.name
        let isLevel = Self.levelEvents.contains(event)
        let receivers = watchers.withLock { watchers -> [ControlConnection] in
            watchers.removeAll { $0.connection.isClosed }
            return watchers.filter { !isLevel || $0.levels }.map(\.connection)
        }
        let listening = listeners.withLock { $0.filter { $0.isListening && (!isLevel || $0.wantsLevels) } }
        guard !receivers.isEmpty || !listening.isEmpty else { return }
        for connection in receivers { connection.send(event: encoded) }
        for listener in listening { listener.deliver(encoded) }
    }
}

/// One event as its receivers get it: its name and fields, and their JSON (`{"event":…}`),
/// encoded once on first use and shared by every receiver. Lives for one `emit`, on the
/// emitting thread.
public final class EncodedEvent {
    public let name: String
    public let fields: [String: any Sendable]
    private var encoded: String?

    public init(_ name: String, _ fields: [String: any Sendable]) {
        self.name = name
        self.fields = fields
    }

    /// An event whose JSON its sender wrote already (an event sent ten times a second, written
    /// without Foundation's encoder): `json` must be `fields` with `event` set to `name`, as
    /// one JSON object with sorted keys.
    public init(_ name: String, _ fields: [String: any Sendable], json: String) {
        self.name = name
        self.fields = fields
        encoded = json
    }

    /// The fields with the event's name as a JSON object, and `extra` when given (a receiver's
    /// own `dropped` count): shared when `extra` is empty.
    public func json(adding extra: [String: any Sendable] = [:]) -> String {
        if extra.isEmpty, let encoded { return encoded }
        var object: [String: Any] = fields.mapValues { $0 as Any }
        object["event"] = name
        for (key, value) in extra { object[key] = value }
        let json = ControlJSON.encode(object)
        if extra.isEmpty { encoded = json }
        return json
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
    func deliver(_ event: EncodedEvent)
    /// The control loop finished a look (several a second while the graph runs): events held
    /// back to go out together should not wait past the next one.
    func lookEnded()
}

extension EventListener {
    public func lookEnded() {}
}
