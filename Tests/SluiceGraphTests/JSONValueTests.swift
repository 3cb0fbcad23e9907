import SluiceGraph
import Testing

/// The JSON `sluice nodes --json` and `sluice schema` print: members in the order written,
/// strings escaped as JSON wants, numbers in their shortest form, the same text every run.
@Suite struct JSONValueTests {
    @Test("objects keep their order; arrays of scalars stay on one line; nesting indents by two")
    func layout() {
        let value: JSONValue = ["b": 1, "a": ["x", "y"], "c": ["d": true, "e": .null], "f": [["g": 2]], "h": [:], "i": []]
        #expect(value.text == """
            {
              "b": 1,
              "a": ["x", "y"],
              "c": {
                "d": true,
                "e": null
              },
              "f": [
                {
                  "g": 2
                }
              ],
              "h": {},
              "i": []
            }
            """)
    }

    @Test("strings: quotes, backslashes and control characters escaped; other text as it is")
    func strings() {
        #expect(JSONValue.string("a \"b\" \\ c\nd\te\u{1}…").text == #""a \"b\" \\ c\nd\te\u0001…""#)
    }

    @Test("numbers: whole ones without a fraction, others in the shortest form, none that JSON lacks")
    func numbers() {
        #expect(JSONValue.number(48_000).text == "48000")
        #expect(JSONValue.number(0.02).text == "0.02")
        #expect(JSONValue.number(-1.5).text == "-1.5")
        #expect(JSONValue.number(1e-5).text == "1e-05")
        #expect(JSONValue.number(.infinity).text == "null")
        #expect(JSONValue.number(.nan).text == "null")
        #expect(JSONValue.integer(-3).text == "-3")
    }

    @Test("object(_:) leaves out nil members; the subscript finds a member")
    func optionalMembers() {
        let value = JSONValue.object([("a", .integer(1)), ("b", nil), ("c", .string("z"))])
        #expect(value.text == "{\n  \"a\": 1,\n  \"c\": \"z\"\n}")
        #expect(value["c"] == .string("z") && value["b"] == nil)
    }

    @Test("NodeReference.json: a parameter's type, range, default, unit and live flag")
    func parameterJSON() {
        let gain = ParameterDescriptor("gain", .number(0...4), default: .number(1), unit: "x", live: true, summary: "Gain.")
        #expect(NodeReference.json(of: gain).text == """
            {
              "name": "gain",
              "type": "number",
              "minimum": 0,
              "maximum": 4,
              "default": 1,
              "required": false,
              "unit": "x",
              "live": true,
              "summary": "Gain."
            }
            """)
        let rate = ParameterDescriptor("rate", .rate(1_000...384_000), default: .auto, summary: "Rate.")
        #expect(NodeReference.json(of: rate)["auto"] == .bool(true))
        #expect(NodeReference.json(of: rate)["default"] == .string("auto"))
        let choice = ParameterDescriptor("q", .choice(["a", "b"]), default: .string("a"), summary: "Q.")
        #expect(NodeReference.json(of: choice)["choices"] == ["a", "b"])
        let list = ParameterDescriptor("l", .list, default: .list(["1", "2"]), summary: "L.")
        #expect(NodeReference.json(of: list)["default"] == ["1", "2"])
    }
}
