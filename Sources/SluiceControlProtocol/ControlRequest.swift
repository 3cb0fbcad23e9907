import Foundation
import SluiceAudio
import SluiceGraph

/// One command to a running graph, as a JSON line on the control socket or an OSC message
/// (docs/control.md has both forms).
public enum ControlRequest: Sendable, Hashable {
    /// Changes a live parameter: `{"command":"set","node":"gain","parameter":"gain","value":0.5}`;
    /// with `at`, timed for that output frame of the node (`"at": 96000`).
    case set(node: String, parameter: String, value: Double, at: Int? = nil)
    /// Queues text for a text-driven source (the graph's only one when `node` is nil); it is
    /// spoken after what is queued before it, or, with `interrupt`, instead of it (a `cancel`
    /// first).
    /// With `more`, the text is a piece of a reply still coming (a language model's tokens):
    /// sentences are cut across pieces, and the last is spoken once a piece without `more`
    /// ends the reply.
    case speak(text: String, node: String?, interrupt: Bool = false, more: Bool = false)
    /// Changes a text-driven node's own parameters (a provider's voice, rate, pitch) for the
    /// text that follows; what it was still to speak is dropped, as by `cancel`. Values are
    /// given as text and checked as a graph file's are.
    case configure(node: String, parameters: [String: String])
    /// Turns the connection into an event stream as well (utterances started and ended,
    /// underruns, xruns, pauses, cancels; with `levels`, the output's peak level about ten
    /// times a second), one JSON object a line beside the replies.
    case watch(levels: Bool)
    /// Over OSC only: send the graph's events to the sender (at `port` of its address when
    /// given), levels and meters too unless `levels` is false; renewed by sending it again.
    case subscribe(port: Int?, levels: Bool)
    /// Over OSC only: stop sending events to the sender (at `port` when given).
    case unsubscribe(port: Int?)
    /// Joins (or with `connected` false, parts) one of the graph's JACK ports and any other.
    case route(String, String, connected: Bool)
    /// Barge-in: fades out what plays within 5 ms, drops the text and audio still queued, and
    /// answers with the text that was heard; the graph takes the next text at once.
    case cancel
    /// Where playback stands: position, underruns, xruns, live parameters.
    case status
    /// Every node's live parameters, with their types and units.
    case parameters
    /// Fades out and holds (silence; nothing torn down, nothing dropped) until `resume`.
    case pause
    /// Goes on where the pause stopped, fading in.
    case resume
    /// Fades out and ends the graph; `sluice serve` exits 0.
    case quit
    /// Reads the served graph's file again, checks it, and applies what changed in it as
    /// live changes; a file that does not check, or changes what cannot change while the
    /// graph plays, is refused and the graph plays on.
    case reload
    /// Writes a node's state as it is now (an `lv2` node's plugin state and controls) into a
    /// folder, as a `state:` a graph file restores: `{"command":"save-state","node":"eq",
    /// "path":"/home/me/eq-state"}`. On the control socket only: it writes files as the user
    /// who serves the graph.
    case saveState(node: String, path: String)

    /// The command's name, as the JSON form's `command` and the OSC address's last part.
    public var name: String {
        switch self {
        case .set: "set"
        case .speak: "speak"
        case .cancel: "cancel"
        case .configure: "configure"
        case .route(_, _, let connected): connected ? "connect" : "disconnect"
        case .watch: "watch"
        case .subscribe: "subscribe"
        case .unsubscribe: "unsubscribe"
        case .status: "status"
        case .parameters: "parameters"
        case .pause: "pause"
        case .resume: "resume"
        case .quit: "quit"
        case .reload: "reload"
        case .saveState: "save-state"
        }
    }
}

extension ControlRequest {
    /// The latest frame a timed `set` may name: about 650 years at 48 kHz, far past any run,
    /// and exact as a Double, so every client's number means the same frame.
    public static let latestFrame = 999_999_999_999_999

    /// A `set`'s `at`, from a JSON number or an OSC argument: a whole frame from 0 to
    /// `latestFrame`, or nil.
    static func frame(_ value: Double) -> Int? { ExternalNumber.wholeNumber(value, in: 0...latestFrame) }

    static let frameRule = "\"at\" is a frame of the node's output: a whole number from 0 to \(latestFrame)"
}

/// Why a request was refused: a stable code and a sentence naming the problem. The graph
/// keeps playing.
public struct ControlError: Error, Sendable, Hashable, CustomStringConvertible {
    public var code: String
    public var message: String

    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}

/// The JSON-lines form: one object a line in, one object a line out.
public enum ControlJSON {
    /// The longest request line taken; a longer one is refused and skipped to its newline.
    public static let maximumLineBytes = 64 * 1024

    /// Parses one line. The optional `id` (a string or number) is returned to echo in the
    /// reply, as JSON-RPC does, so a client can match replies to requests.
    public static func parse(_ line: some Collection<UInt8>) -> (request: Result<ControlRequest, ControlError>, id: Any?) {
        let object: [String: Any]
        do {
            guard let parsed = try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any] else {
                return (.failure(ControlError(code: "bad-json", message: "a request is one JSON object a line, like {\"command\":\"status\"}")), nil)
            }
            object = parsed
            if let key = firstDuplicateKey(line) {
                // Parsers keep the first or the last: `{"command":"status","command":"quit"}`
                // means what the client's parser thinks it means, not what ours does.
                return (.failure(ControlError(
                    code: "bad-json", message: "the key \"\(key)\" appears twice in one object; a request names each key once")), nil)
            }
        } catch {
            return (.failure(ControlError(
                code: "bad-json", message: "not JSON: a request is one JSON object a line, like {\"command\":\"status\"}")), nil)
        }
        let id = object["id"].flatMap { $0 is String || $0 is NSNumber ? $0 : nil }
        return (request(from: object), id)
    }

    /// The first key that appears twice in one object of `json` (already known to be valid
    /// JSON), compared as decoded strings (`"a"` and `"\u0061"` are the same key); nil if none.
    public static func firstDuplicateKey(_ json: some Collection<UInt8>) -> String? {
        let bytes = Array(json)
        // One entry per open container: the keys seen, or nil for an array.
        var containers: [Set<String>?] = []
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "{"): containers.append([])
            case UInt8(ascii: "["): containers.append(nil)
            case UInt8(ascii: "}"), UInt8(ascii: "]"): _ = containers.popLast()
            case UInt8(ascii: "\""):
                let start = index
                index += 1
                while index < bytes.count && bytes[index] != UInt8(ascii: "\"") {
                    index += bytes[index] == UInt8(ascii: "\\") ? 2 : 1
                }
                var next = index + 1
                while next < bytes.count && [0x20, 0x09, 0x0a, 0x0d].contains(bytes[next]) { next += 1 }
                // A string followed by ':' inside an object is a key.
                if next < bytes.count, bytes[next] == UInt8(ascii: ":"), var keys = containers.last ?? nil {
                    let token = Data(bytes[start...min(index, bytes.count - 1)])
                    let key = (try? JSONSerialization.jsonObject(with: token, options: .fragmentsAllowed)) as? String
                        ?? String(decoding: token, as: UTF8.self)
                    guard keys.insert(key).inserted else { return key }
                    containers[containers.count - 1] = keys
                }
            default: break
            }
            index += 1
        }
        return nil
    }

    static let commands = [
        "set", "speak", "cancel", "configure", "watch", "connect", "disconnect", "status", "parameters", "pause", "resume",
        "quit", "reload", "save-state",
    ]

    /// A JSON number as a Double; nil for anything else, `true` and `false` included (which
    /// Foundation may hand over as numbers).
    private static func number(_ value: Any?) -> Double? {
        guard let value, type(of: value) != Bool.self else { return nil }
        if let number = value as? NSNumber {
            // CFBoolean is an NSNumber too: only true and false report the "c" type.
            if String(cString: number.objCType) == "c" { return nil }
            return number.doubleValue
        }
        return (value as? Double) ?? (value as? Int).map(Double.init)
    }

    private static func request(from object: [String: Any]) -> Result<ControlRequest, ControlError> {
        guard let command = object["command"] as? String else {
            return .failure(ControlError(
                code: "no-command", message: "the request has no \"command\"; one of: \(commands.joined(separator: ", "))"))
        }
        func string(_ key: String) -> Result<String, ControlError> {
            guard let value = object[key] as? String, !value.isEmpty else {
                return .failure(ControlError(code: "missing-field", message: "'\(command)' needs \"\(key)\", a string"))
            }
            return .success(value)
        }
        switch command {
        case "set":
            return string("node").flatMap { node in
                string("parameter").flatMap { parameter in
                    guard let value = number(object["value"]) else {
                        return .failure(ControlError(code: "missing-field", message: "'set' needs \"value\", a number"))
                    }
                    var at: Int?
                    if object["at"] != nil {
                        guard let frame = number(object["at"]).flatMap(ControlRequest.frame) else {
                            return .failure(ControlError(code: "bad-value", message: ControlRequest.frameRule))
                        }
                        at = frame
                    }
                    return .success(.set(node: node, parameter: parameter, value: value, at: at))
                }
            }
        case "speak":
            let policy = object["policy"] as? String ?? "queue"
            guard policy == "queue" || policy == "interrupt" else {
                return .failure(ControlError(
                    code: "bad-policy", message: "\"policy\" is queue (after what is queued) or interrupt (instead of it), not '\(policy)'"))
            }
            let more = object["more"] as? Bool ?? false
            guard let text = object["text"] as? String, !text.isEmpty || !more else {
                return .failure(ControlError(code: "missing-field", message: "'speak' needs \"text\", a string"))
            }
            return .success(.speak(text: text, node: object["node"] as? String, interrupt: policy == "interrupt", more: more))
        case "cancel": return .success(.cancel)
        case "connect", "disconnect":
            return string("from").flatMap { from in
                string("to").map { to in .route(from, to, connected: command == "connect") }
            }
        case "watch": return .success(.watch(levels: object["levels"] as? Bool ?? false))
        case "configure":
            return string("node").flatMap { node in
                guard let given = object["parameters"] as? [String: Any], !given.isEmpty else {
                    return .failure(ControlError(
                        code: "missing-field", message: "'configure' needs \"parameters\", an object like {\"rate\":220}"))
                }
                var parameters: [String: String] = [:]
                for (name, value) in given {
                    if let text = value as? String {
                        parameters[name] = text
                    } else if let value = number(value) {
                        parameters[name] = ExternalNumber.text(value)
                    } else {
                        return .failure(ControlError(code: "bad-value", message: "parameter '\(name)' takes a number or a string"))
                    }
                }
                return .success(.configure(node: node, parameters: parameters))
            }
        case "status": return .success(.status)
        case "parameters": return .success(.parameters)
        case "pause": return .success(.pause)
        case "resume": return .success(.resume)
        case "quit": return .success(.quit)
        case "reload": return .success(.reload)
        case "save-state":
            return string("node").flatMap { node in
                string("path").flatMap { path in
                    guard path.hasPrefix("/"), !path.utf8.contains(0), path.utf8.count <= 4096 else {
                        return .failure(ControlError(
                            code: "bad-path", message: "'save-state' needs \"path\", an absolute folder path (sluice ctl resolves a relative one)"))
                    }
                    return .success(.saveState(node: node, path: path))
                }
            }
        default:
            let close = closestNames(to: command, among: commands, limit: 1)
            let hint = close.isEmpty ? "one of: \(commands.joined(separator: ", "))" : "did you mean '\(close[0])'?"
            return .failure(ControlError(code: "unknown-command", message: "no command '\(command)'; \(hint)"))
        }
    }

    /// A reply line (without its newline): `fields` with `ok`, the `command` and the `id`.
    public static func reply(_ result: Result<[String: any Sendable], ControlError>, command: String?, id: Any?) -> String {
        var object: [String: Any]
        switch result {
        case .success(let fields):
            object = fields.mapValues { $0 as Any }
            object["ok"] = true
        case .failure(let error):
            object = ["ok": false, "error": ["code": error.code, "message": error.message]]
        }
        if let command { object["command"] = command }
        if let id { object["id"] = id }
        return encode(object)
    }

    /// One line of JSON, each object's keys sorted by their bytes; a number that is not finite
    /// is `null`. Written by hand: replies and events go out many times a second, and
    /// Foundation's encoder sorts keys through a locale's collation, at many times the
    /// cost. A value of a type it does not know (none that Sluice sends) goes through
    /// Foundation's.
    public static func encode(_ object: [String: Any]) -> String {
        var writer = JSONWriter()
        if write(object, to: &writer) { return writer.text }
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else {
            return #"{"error":{"code":"internal","message":"the reply could not be encoded"},"ok":false}"#
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// Writes `value`; false for a value of a type it does not know.
    private static func write(_ value: Any, to writer: inout JSONWriter) -> Bool {
        // Swift's own scalars by their exact type first (a `Bool` or an `Int` may also cast to
        // NSNumber, and an NSNumber to either), classes last and by type: casting a Swift
        // dictionary to a class bridges all of it to an NSDictionary before it fails.
        switch value {
        case let text as String: writer.string(text)
        case let flag as Bool where type(of: value) == Bool.self: writer.bool(flag)
        case let number as Int where type(of: value) == Int.self: writer.integer(number)
        case let number as Double where type(of: value) == Double.self: writer.number(number)
        case let number as Float where type(of: value) == Float.self: writer.number(Double(number))
        case let number as Int64 where type(of: value) == Int64.self: writer.integer(number)
        case let number as UInt64 where type(of: value) == UInt64.self: writer.integer(number)
        case let number as Int32 where type(of: value) == Int32.self: writer.integer(number)
        case let number as UInt32 where type(of: value) == UInt32.self: writer.integer(number)
        case let object as [String: Any]:
            writer.raw("{")
            for (index, key) in object.keys.sorted().enumerated() {
                if index > 0 { writer.raw(",") }
                writer.key(key)
                guard write(object[key]!, to: &writer) else { return false }
            }
            writer.raw("}")
        case let items as [Any]:
            writer.raw("[")
            for (index, item) in items.enumerated() {
                if index > 0 { writer.raw(",") }
                guard write(item, to: &writer) else { return false }
            }
            writer.raw("]")
        case _ where type(of: value) is NSNumber.Type:
            // What Foundation's parser made: CFBoolean reports the "c" type, whole numbers
            // an integer type.
            let number = value as! NSNumber
            switch String(cString: number.objCType) {
            case "c": writer.bool(number.boolValue)
            case "q", "l", "i", "s": writer.integer(number.int64Value)
            case "Q", "L", "I", "S", "C": writer.integer(number.uint64Value)
            default: writer.number(number.doubleValue)
            }
        case let json as JSONValue: json.write(to: &writer)
        case _ where type(of: value) is NSNull.Type: writer.null()
        default:
            // An optional: nil is null, anything else what it holds.
            let mirror = Mirror(reflecting: value)
            guard mirror.displayStyle == .optional else { return false }
            guard let wrapped = mirror.children.first?.value else {
                writer.null()
                return true
            }
            return write(wrapped, to: &writer)
        }
        return true
    }
}

