import Foundation
import SluiceControlProtocol
import Testing

/// Replies and events as lines of JSON: written without Foundation's encoder, read back by it
/// as the same values, keys sorted.
@Suite struct ControlJSONTests {
    static func object(_ line: String) throws -> NSDictionary {
        try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? NSDictionary)
    }

    @Test("every kind of value a reply holds reads back as itself, each object's keys sorted")
    func values() throws {
        let nested: [String: any Sendable] = ["z": [1, 2], "a": ["text": "é\"\n", "none": Optional<Int>.none as any Sendable]]
        let object: [String: Any] = [
            "ok": true, "count": 3, "big": Int64.max, "position": 12.5, "whole": 2.0, "float": Float(0.25),
            "name": "a/b", "list": ["x", 1, false] as [Any], "nested": nested, "null": NSNull(),
            "some": Optional<String>.some("held") as Any,
        ]
        let line = ControlJSON.encode(object)
        #expect(!line.contains("\n"))
        let parsed = try Self.object(line)
        #expect(parsed["ok"] as? Bool == true)
        #expect((parsed["count"] as? NSNumber)?.intValue == 3)
        #expect((parsed["big"] as? NSNumber)?.int64Value == Int64.max)
        #expect((parsed["position"] as? NSNumber)?.doubleValue == 12.5)
        #expect(line.hasSuffix(#""whole":2}"#))
        #expect((parsed["float"] as? NSNumber)?.doubleValue == 0.25)
        #expect(parsed["name"] as? String == "a/b")
        #expect(parsed["null"] is NSNull)
        #expect(parsed["some"] as? String == "held")
        let inner = try #require(parsed["nested"] as? NSDictionary)
        #expect((inner["a"] as? NSDictionary)?["text"] as? String == "é\"\n")
        #expect((inner["a"] as? NSDictionary)?["none"] is NSNull)
        let keys = ["big", "count", "float", "list", "name", "nested", "null", "ok", "position", "some", "whole"]
        let offsets = keys.map { line.range(of: "\"\($0)\":")!.lowerBound }
        #expect(offsets == offsets.sorted(), "keys out of order: \(line)")
    }

    @Test("a number that is not finite is null, not a refused reply")
    func notFinite() throws {
        let line = ControlJSON.encode(["peak": Double.nan, "gain": -Double.infinity, "ok": true])
        #expect(line == #"{"gain":null,"ok":true,"peak":null}"#)
    }

    @Test("what Foundation's parser made (an id, booleans, numbers) is written back as it came")
    func parsedValues() throws {
        let parsed = try #require(JSONSerialization.jsonObject(with: Data(#"{"id":7,"f":0.5,"t":true,"n":false,"s":"x"}"#.utf8)) as? [String: Any])
        #expect(ControlJSON.encode(parsed) == #"{"f":0.5,"id":7,"n":false,"s":"x","t":true}"#)
    }

    @Test("a reply carries ok, the command and the id")
    func reply() {
        #expect(ControlJSON.reply(.success(["position": 1.5]), command: "status", id: "a") == #"{"command":"status","id":"a","ok":true,"position":1.5}"#)
        #expect(ControlJSON.reply(.failure(ControlError(code: "c", message: "m")), command: nil, id: 2) == #"{"error":{"code":"c","message":"m"},"id":2,"ok":false}"#)
    }

    @Test("a key named twice is found whatever its spelling; distinct keys, nested objects and strings with colons are not")
    func duplicateKeys() {
        #expect(ControlJSON.firstDuplicateKey(Array(#"{"command":"status","command":"quit"}"#.utf8)) == "command")
        #expect(ControlJSON.firstDuplicateKey(Array(#"{"command":"status","comm\u0061nd":"quit"}"#.utf8)) == "command")
        #expect(ControlJSON.firstDuplicateKey(Array(#"{"a":{"b":1,"b":2}}"#.utf8)) == "b")
        #expect(ControlJSON.firstDuplicateKey(Array(#"{"a":"x:y","b":{"a":1},"c":["a","a"]}"#.utf8)) == nil)
        #expect(ControlJSON.firstDuplicateKey(Array(#"{"a\"b":1,"a\\\"b":2}"#.utf8)) == nil)
    }

    @Test("numbers out of range never become integers: frames refused, values left to the parameter's range")
    func extremes() throws {
        for at in ["1e300", "-1e300", "-0.5", "0.5", "9223372036854775807", "1e15", "-1"] {
            let (request, _) = ControlJSON.parse(Array(#"{"command":"set","node":"n","parameter":"p","value":1,"at":\#(at)}"#.utf8))
            if case .failure(let error) = request { #expect(error.code == "bad-value", "\(at)") } else { Issue.record("at \(at) taken") }
        }
        let (zero, _) = ControlJSON.parse(Array(#"{"command":"set","node":"n","parameter":"p","value":1,"at":-0.0}"#.utf8))
        #expect(try zero.get() == .set(node: "n", parameter: "p", value: 1, at: 0))
        let (huge, _) = ControlJSON.parse(Array(#"{"command":"set","node":"n","parameter":"p","value":1e300}"#.utf8))
        #expect(try huge.get() == .set(node: "n", parameter: "p", value: 1e300, at: nil))
    }

    @Test("reload is a command; a misspelling is answered with it")
    func reload() throws {
        #expect(try ControlJSON.parse(Array(#"{"command":"reload"}"#.utf8)).0.get() == .reload)
        let (misspelt, _) = ControlJSON.parse(Array(#"{"command":"relaod"}"#.utf8))
        if case .failure(let error) = misspelt {
            #expect(error.code == "unknown-command" && error.message.contains("did you mean 'reload'?"), "\(error)")
        } else {
            Issue.record("'relaod' taken")
        }
    }

    @Test("save-state takes a node and an absolute folder on the socket; a relative or NUL-bearing path is refused, and OSC refuses it outright")
    func saveState() throws {
        #expect(try ControlJSON.parse(Array(#"{"command":"save-state","node":"eq","path":"/tmp/eq state"}"#.utf8)).0.get()
            == .saveState(node: "eq", path: "/tmp/eq state"))
        for line in [
            #"{"command":"save-state","node":"eq","path":"eq-state"}"#, #"{"command":"save-state","node":"eq","path":"/tmp/a\u0000b"}"#,
            #"{"command":"save-state","node":"eq","path":3}"#, #"{"command":"save-state","path":"/tmp/x"}"#,
        ] {
            let (parsed, _) = ControlJSON.parse(Array(line.utf8))
            guard case .failure(let error) = parsed else {
                Issue.record("taken: \(line)")
                continue
            }
            #expect(["bad-path", "missing-field"].contains(error.code), "\(line): \(error)")
        }
        let osc = try #require(OSCRequestTests.parse(OSCRequestTests.datagram("/sluice/save-state", [.string("eq"), .string("/tmp/x")])))
        guard case .failure(let error) = osc.1 else {
            Issue.record("OSC took save-state")
            return
        }
        #expect(error.code == "save-state-needs-socket")
    }
}
