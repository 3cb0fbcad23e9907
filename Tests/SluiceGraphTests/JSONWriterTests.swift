import Foundation
import SluiceGraph
import Testing

/// The writer behind every event and reply a served graph sends: valid JSON for any text,
/// byte for byte what the text holds.
@Suite struct JSONWriterTests {
    @Test("strings: quotes, backslashes and every control character escaped; other text, UTF-8 included, as it is")
    func strings() throws {
        var writer = JSONWriter()
        writer.string("a \"b\" \\ c\nd\te\u{1}…🎧")
        #expect(writer.text == #""a \"b\" \\ c\nd\te\u0001…🎧""#)

        let every = String(decoding: (0..<0x80).map { UInt8($0) }, as: UTF8.self) + "ünïcødé 日本語 \u{10FFFF}"
        var all = JSONWriter()
        all.string(every)
        let parsed = try JSONSerialization.jsonObject(with: Data(all.bytes), options: .fragmentsAllowed) as? String
        #expect(parsed == every)

        var empty = JSONWriter()
        empty.string("")
        #expect(empty.text == #""""#)
    }

    @Test("numbers as JSONValue prints them; none that JSON lacks")
    func numbers() {
        var writer = JSONWriter()
        for value in [48_000, 0.02, -1.5, 1e-5, 1e300, -.infinity, .nan] {
            writer.number(value)
            writer.raw(" ")
        }
        writer.integer(-3)
        writer.raw(" ")
        writer.integer(UInt64.max)
        #expect(writer.text == "48000 0.02 -1.5 1e-05 1e+300 null null -3 18446744073709551615")
    }

    @Test("compactText of a nested value is one line with no spaces")
    func compact() {
        let value: JSONValue = ["b": 1, "a": ["x", "y\n"], "c": ["d": true, "e": .null], "f": .number(.nan)]
        #expect(value.compactText == #"{"b":1,"a":["x","y\n"],"c":{"d":true,"e":null},"f":null}"#)
    }
}
