import CLiblo
import Glibc
import SluiceAudio

/// The OSC form of the control commands, parsed with liblo (docs/control.md has the address
/// space). `OSCServer` (SluiceControl) receives the datagrams and answers them.
public enum OSCRequest {
    /// The message's address and the request it makes, or why it makes none; nil when
    /// `secret` is set and the message does not begin with it (it gets no reply at all).
    public static func parse(
        _ buffer: inout [UInt8], count: Int, secret: [UInt8]? = nil
    ) -> (String, Result<ControlRequest, ControlError>)? {
        if count >= 8, buffer.starts(with: Array("#bundle\0".utf8)) {
            if secret != nil { return nil }
            return ("#bundle", .failure(ControlError(code: "osc-bundle", message: "OSC bundles are not taken; send each message on its own")))
        }
        var result: Int32 = 0
        // SAFETY: liblo reads `count` bytes of `buffer` and copies what it keeps.
        let message = buffer.withUnsafeMutableBytes { lo_message_deserialise($0.baseAddress, count, &result) }
        guard let message, result == 0 else {
            if secret != nil { return nil }
            return ("", .failure(ControlError(code: "osc-malformed", message: "not an OSC message (liblo error \(result))")))
        }
        defer { lo_message_free(message) }
        // The address is the message's first OSC string, NUL-terminated (liblo checked it).
        let address = String(decoding: buffer[0..<count].prefix { $0 != 0 }, as: UTF8.self)
        var types = Array(String(cString: lo_message_get_types(message)).utf8)
        var arguments = lo_message_get_argv(message)
        if let secret {
            // SAFETY: as `string` below: an 's' argument points at its NUL-terminated string.
            guard types.first == UInt8(ascii: "s"), let first = arguments?[0] else { return nil }
            let given = UnsafeRawPointer(first).assumingMemoryBound(to: UInt8.self)
            let length = strlen(UnsafeRawPointer(first).assumingMemoryBound(to: CChar.self))
            guard Self.sameBytes(UnsafeBufferPointer(start: given, count: length), secret) else { return nil }
            types.removeFirst()
            arguments = arguments?.advanced(by: 1)
        }
        func string(_ index: Int) -> String? {
            guard index < types.count, types[index] == UInt8(ascii: "s") || types[index] == UInt8(ascii: "S"),
                let argument = arguments?[index]
            else { return nil }
            // SAFETY: liblo's argv entry for an 's' or 'S' argument points at the string itself,
            // NUL-terminated inside the deserialised message, which lives until `message` is freed
            // at the end of this function. (`argument.pointee.s` is the union's first byte,
            // copied: a pointer to it is not a pointer into the message.)
            return String(cString: UnsafeRawPointer(argument).assumingMemoryBound(to: CChar.self))
        }
        func number(_ index: Int) -> Double? {
            guard index < types.count, let argument = arguments?[index] else { return nil }
            // SAFETY: liblo's argv entry points at the argument's own bytes in the message: 4
            // for 'f' and 'i', 8 for 'd' and 'h' (host order once deserialised). Each is read
            // at its own size: `argument.pointee` would load the whole 8-byte union, past the
            // end of a 4-byte argument at the end of the message (the `osc` fuzz target found
            // it).
            let bytes = UnsafeRawPointer(argument)
            switch types[index] {
            case UInt8(ascii: "f"): return Double(bytes.loadUnaligned(as: Float.self))
            case UInt8(ascii: "d"): return bytes.loadUnaligned(as: Double.self)
            case UInt8(ascii: "i"): return Double(bytes.loadUnaligned(as: Int32.self))
            case UInt8(ascii: "h"): return Double(bytes.loadUnaligned(as: Int64.self))
            default: return nil
            }
        }
        let typeText = String(decoding: types, as: UTF8.self)
        func wrongArguments(_ expected: String) -> (String, Result<ControlRequest, ControlError>) {
            (address, .failure(ControlError(
                code: "osc-arguments", message: "\(address) takes \(expected), not '\(typeText)'")))
        }
        let parts = address.split(separator: "/", omittingEmptySubsequences: false)
        // "", "sluice", "node", node, parameter
        if parts.count == 5, parts[1] == "sluice", parts[2] == "node", !parts[3].isEmpty, !parts[4].isEmpty {
            guard types.count == 1 || types.count == 2, let value = number(0) else {
                return wrongArguments("one number (f, d, i or h), and optionally the frame to apply it at (i or h)")
            }
            var at: Int?
            if types.count == 2 {
                guard types[1] == UInt8(ascii: "i") || types[1] == UInt8(ascii: "h") else {
                    return wrongArguments("one number (f, d, i or h), and optionally the frame to apply it at (i or h)")
                }
                guard let frame = number(1).flatMap(ControlRequest.frame) else {
                    return (address, .failure(ControlError(code: "bad-value", message: ControlRequest.frameRule)))
                }
                at = frame
            }
            return (address, .success(.set(node: String(parts[3]), parameter: String(parts[4]), value: value, at: at)))
        }
        if parts.count == 5, parts[1] == "sluice", parts[2] == "configure", !parts[3].isEmpty, !parts[4].isEmpty {
            guard types.count == 1 else { return wrongArguments("one value (s, f, d, i or h)") }
            let text: String
            if let value = string(0) {
                text = value
            } else if let value = number(0) {
                text = ExternalNumber.text(value)
            } else {
                return wrongArguments("one value (s, f, d, i or h)")
            }
            return (address, .success(.configure(node: String(parts[3]), parameters: [String(parts[4]): text])))
        }
        switch address {
        case "/sluice/speak", "/sluice/interrupt":
            guard types.count == 1 || types.count == 2, let text = string(0) else {
                return wrongArguments("a string, and optionally the node's name (s or ss)")
            }
            let interrupt = address == "/sluice/interrupt"
            if types.count == 2 {
                guard let node = string(1) else { return wrongArguments("a string, and optionally the node's name (s or ss)") }
                return (address, .success(.speak(text: text, node: node, interrupt: interrupt)))
            }
            return (address, .success(.speak(text: text, node: nil, interrupt: interrupt)))
        case "/sluice/connect", "/sluice/disconnect":
            guard types.count == 2, let first = string(0), let second = string(1) else { return wrongArguments("two port names (ss)") }
            return (address, .success(.route(first, second, connected: address == "/sluice/connect")))
        case "/sluice/subscribe", "/sluice/unsubscribe":
            // [port] [what]: the port (0 or none: the sender's own), then "all" or "events".
            let usage = address == "/sluice/subscribe"
                ? "optionally the port to send to (i or h; 0: the sender's), then optionally \"all\" or \"events\" (s)"
                : "optionally the port events were sent to (i or h)"
            var port: Int?
            var levels = true
            var index = 0
            if index < types.count, types[index] == UInt8(ascii: "i") || types[index] == UInt8(ascii: "h") {
                guard let value = number(index), value == value.rounded(), (0...65_535).contains(value) else {
                    return (address, .failure(ControlError(code: "bad-value", message: "a port is 0…65535 (0: the sender's own)")))
                }
                port = value == 0 ? nil : Int(value)
                index += 1
            }
            if address == "/sluice/subscribe", index < types.count, let what = string(index) {
                switch what {
                case "all": levels = true
                case "events": levels = false
                default:
                    return (address, .failure(ControlError(code: "bad-value", message: "subscribe to \"all\" (levels and meters too) or \"events\", not '\(what)'")))
                }
                index += 1
            }
            guard index == types.count else { return wrongArguments(usage) }
            return (address, .success(address == "/sluice/subscribe" ? .subscribe(port: port, levels: levels) : .unsubscribe(port: port)))
        case "/sluice/status", "/sluice/parameters", "/sluice/pause", "/sluice/resume", "/sluice/quit", "/sluice/cancel",
            "/sluice/reload":
            guard types.isEmpty else { return wrongArguments("no arguments") }
            let requests: [String: ControlRequest] = [
                "status": .status, "parameters": .parameters, "pause": .pause, "resume": .resume, "quit": .quit,
                "cancel": .cancel, "reload": .reload,
            ]
            return (address, .success(requests[String(address.dropFirst("/sluice/".count))]!))
        case "/sluice/save-state":
            return (address, .failure(ControlError(
                code: "save-state-needs-socket",
                message: "save-state writes files as the user who serves the graph, so it is taken on the control socket only (sluice ctl save-state), never from a UDP port")))
        default:
            let known = [
                "/sluice/node/<node>/<parameter>", "/sluice/configure/<node>/<parameter>", "/sluice/speak",
                "/sluice/interrupt", "/sluice/cancel", "/sluice/connect", "/sluice/disconnect",
                "/sluice/status", "/sluice/parameters", "/sluice/subscribe", "/sluice/unsubscribe",
                "/sluice/pause", "/sluice/resume", "/sluice/quit", "/sluice/reload",
            ]
            return (address, .failure(ControlError(
                code: "osc-unknown-address", message: "no OSC address '\(address)'; addresses: \(known.joined(separator: ", "))")))
        }
    }

    /// Whether `given` equals `secret`, in a time that does not depend on where they differ.
    static func sameBytes(_ given: UnsafeBufferPointer<UInt8>, _ secret: [UInt8]) -> Bool {
        var difference = UInt8(given.count == secret.count ? 0 : 1)
        for index in 0..<secret.count {
            difference |= secret[index] ^ (index < given.count ? given[index] : 0)
        }
        return difference == 0
    }

}
