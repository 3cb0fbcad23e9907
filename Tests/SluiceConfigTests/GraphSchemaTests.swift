import SluiceGraph
import Testing
@testable import SluiceConfig

/// The graph-file schema made from descriptors: each parameter type's JSON Schema, each node
/// type's keys closed, the reader's top level and playback settings.
@Suite struct GraphSchemaTests {
    static let tone = NodeDescriptor(
        typeName: "tone", kind: .source, summary: "A tone.",
        outputs: [PortDescriptor("out", .frames)],
        parameters: [
            ParameterDescriptor("frequency", .number(1...20_000), default: .number(440), unit: "Hz", summary: "Pitch."),
            ParameterDescriptor("channels", .integer(1...8), default: .integer(1), summary: "Channels"),
            ParameterDescriptor("path", .path, default: nil, required: true, summary: "Where."),
            ParameterDescriptor("gain", .number(0...4), default: .number(1), live: true, summary: "Gain."),
        ])
    static let sink = NodeDescriptor(typeName: "wav.sink", kind: .sink, summary: "A sink.", inputs: [PortDescriptor("in", .frames)])

    @Test("number and integer: the type and the inclusive range; the description carries unit, required and live")
    func numbers() {
        let parameters = Self.tone.parameters
        #expect(GraphSchema.schema(of: parameters[0]).text == """
            {
              "description": "Pitch. Unit: Hz.",
              "type": "number",
              "minimum": 1,
              "maximum": 20000,
              "default": 440
            }
            """)
        #expect(GraphSchema.schema(of: parameters[1])["type"] == "integer")
        #expect(GraphSchema.schema(of: parameters[1])["description"] == "Channels.")
        #expect(GraphSchema.schema(of: parameters[2])["description"] == "Where. Required.")
        #expect(GraphSchema.schema(of: parameters[2])["default"] == nil)
        #expect(GraphSchema.schema(of: parameters[3])["description"]
            == "Gain. Live: may change while the graph plays (sluice ctl set, OSC).")
    }

    @Test("rate: an integer in range or auto; choice: an enum (a name YAML reads as a number or boolean also as one); list; boolean; text")
    func otherTypes() {
        let rate = GraphSchema.schema(of: ParameterDescriptor("rate", .rate(1_000...384_000), default: .auto, summary: "R."))
        #expect(rate["anyOf"] == [["type": "integer", "minimum": 1_000, "maximum": 384_000], ["const": "auto"]])
        #expect(rate["default"] == "auto")
        let choice = GraphSchema.schema(of: ParameterDescriptor("q", .choice(["low", "8", "on"]), default: .string("low"), summary: "Q."))
        #expect(choice["enum"] == ["low", "8", 8, "on", true])
        let list = GraphSchema.schema(of: ParameterDescriptor("l", .list, default: nil, summary: "L."))
        #expect(list["type"] == ["array", "string", "number", "boolean"])
        #expect(list["items"] == ["type": ["string", "number", "boolean"]])
        let boolean = GraphSchema.schema(of: ParameterDescriptor("b", .boolean, default: .boolean(false), summary: "B."))
        #expect(boolean["enum"] == [true, false, "true", "false", "yes", "no", "on", "off"])
        #expect(boolean["default"] == false)
        let text = GraphSchema.schema(of: ParameterDescriptor("t", .string, default: nil, summary: "T."))
        #expect(text["type"] == ["string", "number", "boolean"])
    }

    @Test("a node type: its own keys only, `type` fixed, the required parameters required")
    func nodeType() throws {
        let document = GraphSchema.document(for: [Self.sink, Self.tone])
        let definitions = try #require(document["$defs"])
        let tone = try #require(definitions["node.tone"])
        #expect(tone["additionalProperties"] == false)
        #expect(tone["required"] == ["type", "path"])
        #expect(tone["properties"]?["type"] == ["const": "tone"])
        guard case .object(let members)? = tone["properties"] else { Issue.record("no properties"); return }
        #expect(members.map(\.key) == ["type", "frequency", "channels", "path", "gain"])
        // Any node: a known type, each type's definition applied by an if/then on it.
        let node = try #require(definitions["node"])
        #expect(node["properties"]?["type"]?["enum"] == ["tone", "wav.sink"])
        #expect(node["allOf"] == [
            ["if": ["properties": ["type": ["const": "tone"]], "required": ["type"]], "then": ["$ref": "#/$defs/node.tone"]],
            ["if": ["properties": ["type": ["const": "wav.sink"]], "required": ["type"]], "then": ["$ref": "#/$defs/node.wav.sink"]],
        ])
    }

    @Test("the top level and playback take only the reader's keys; node names follow the reader's rule")
    func topLevel() throws {
        let document = GraphSchema.document(for: [Self.tone])
        #expect(document["$schema"] == "https://json-schema.org/draft/2020-12/schema")
        #expect(document["additionalProperties"] == false)
        #expect(document["required"] == ["nodes"])
        guard case .object(let top)? = document["properties"] else { Issue.record("no properties"); return }
        #expect(top.map(\.key) == YAMLGraphReader.topLevelKeys)
        guard case .object(let playback)? = document["properties"]?["playback"]?["properties"] else { Issue.record("no playback"); return }
        #expect(playback.map(\.key) == YAMLGraphReader.playbackKeys)
        #expect(document["properties"]?["playback"]?["additionalProperties"] == false)
        #expect(document["properties"]?["nodes"]?["propertyNames"] == ["pattern": "^[A-Za-z_][A-Za-z0-9_-]*$"])
    }

    @Test("the same descriptors in any order make the same text")
    func deterministic() {
        #expect(GraphSchema.document(for: [Self.tone, Self.sink]).text == GraphSchema.document(for: [Self.sink, Self.tone]).text)
    }
}
