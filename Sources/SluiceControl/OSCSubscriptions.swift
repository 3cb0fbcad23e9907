import Foundation
import Glibc
import SluiceGraph
import Synchronization

/// The OSC senders that subscribed to a served graph's events, as Ardour's control surfaces
/// subscribe to feedback: each event goes to each subscriber as it happens, sent without
/// waiting from the OSC socket (a subscriber that does not read loses messages; nothing
/// else waits for it).
///
/// - `/sluice/meter s:node h:frame f:momentary f:short-term f:integrated` then, per channel,
///   `f:peak f:rms f:true-peak`: every `meter` reading, in dB (LUFS for loudness); silence,
///   and what is not measured, read −200.
/// - `/sluice/event s:name s:json-fields` for every other event (utterances, words,
///   parameter changes with their frame, underruns, xruns, levels, pause, resume).
///
/// A subscription lasts a minute; sending `/sluice/subscribe` again renews it. Events go only
/// to the sender's own address (its port, or the one it names), at most `limit` of them: a
/// forged sender cannot point the stream at a third machine, and beyond loopback every
/// message needs the shared secret first.
public final class OSCSubscriptions: EventListener, @unchecked Sendable {
    // SAFETY (@unchecked Sendable): `descriptor` is immutable (the OSC server's socket);
    // `subscribers` is behind its mutex.

    struct Subscriber {
        var address: sockaddr_in
        var levels: Bool
        var expires: Double

        func isAt(_ other: sockaddr_in) -> Bool {
            address.sin_addr.s_addr == other.sin_addr.s_addr && address.sin_port == other.sin_port
        }
    }

    public static let limit = 16
    public static let lifetime = 60.0
    private let descriptor: Int32
    private let subscribers = Mutex<[Subscriber]>([])
    /// Event messages the socket would not take at once (dropped).
    public let dropped = Atomic<Int>(0)

    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Subscribes or unsubscribes `sender`; nil for any other request.
    func handle(_ request: ControlRequest, from sender: sockaddr_in) -> Result<[String: any Sendable], ControlError>? {
        switch request {
        case .subscribe(let port, let levels):
            var address = sender
            if let port { address.sin_port = in_port_t(UInt16(port)).bigEndian }
            let now = monotonicSeconds()
            let added = subscribers.withLock { subscribers -> Bool in
                subscribers.removeAll { $0.expires < now }
                if let index = subscribers.firstIndex(where: { $0.isAt(address) }) {
                    subscribers[index].levels = levels
                    subscribers[index].expires = now + Self.lifetime
                    return true
                }
                guard subscribers.count < Self.limit else { return false }
                subscribers.append(Subscriber(address: address, levels: levels, expires: now + Self.lifetime))
                return true
            }
            guard added else {
                return .failure(ControlError(
                    code: "too-many-subscribers",
                    message: "\(Self.limit) senders subscribe already; one must unsubscribe or let its subscription lapse (\(Int(Self.lifetime)) s)"))
            }
            return .success([
                "port": Int(UInt16(bigEndian: address.sin_port)), "levels": levels, "expires-in": Self.lifetime,
            ])
        case .unsubscribe(let port):
            var address = sender
            if let port { address.sin_port = in_port_t(UInt16(port)).bigEndian }
            let removed = subscribers.withLock { subscribers -> Bool in
                let before = subscribers.count
                subscribers.removeAll { $0.isAt(address) }
                return subscribers.count < before
            }
            return .success(["port": Int(UInt16(bigEndian: address.sin_port)), "subscribed": removed])
        default:
            return nil
        }
    }

    /// The subscribers now (expired ones dropped).
    private func current() -> [Subscriber] {
        let now = monotonicSeconds()
        return subscribers.withLock { subscribers in
            subscribers.removeAll { $0.expires < now }
            return subscribers
        }
    }

    public var isListening: Bool { !current().isEmpty }
    public var wantsLevels: Bool { current().contains { $0.levels } }

    public func deliver(_ encoded: EncodedEvent) {
        let event = encoded.name, fields = encoded.fields
        let isLevel = EventStream.levelEvents.contains(event)
        let receivers = current().filter { !isLevel || $0.levels }
        guard !receivers.isEmpty else { return }
        let bytes = event == "meter" ? Self.meterMessage(fields) : OSCMessage.serialise(
            "/sluice/event", [.string(event), .string(ControlJSON.encode(fields.mapValues { $0 as Any }))])
        for receiver in receivers where !OSCMessage.send(bytes, from: descriptor, to: receiver.address) {
            dropped.add(1, ordering: .relaxed)
        }
    }

    /// `/sluice/meter`: the node, the frame, loudness, then each channel's levels.
    static func meterMessage(_ fields: [String: any Sendable]) -> [UInt8] {
        func level(_ value: Any?) -> Float { Float((value as? Double) ?? MeterEvent.floor) }
        var arguments: [OSCMessage.Argument] = [
            .string(fields["node"] as? String ?? ""), .int64(Int64(fields["frame"] as? Int ?? 0)),
            .float(level(fields["momentary-lufs"])), .float(level(fields["short-term-lufs"])),
            .float(level(fields["integrated-lufs"])),
        ]
        for channel in fields["channels"] as? [[String: any Sendable]] ?? [] {
            arguments += [.float(level(channel["peak-db"])), .float(level(channel["rms-db"])), .float(level(channel["true-peak-db"]))]
        }
        return OSCMessage.serialise("/sluice/meter", arguments)
    }
}
