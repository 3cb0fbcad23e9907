import SluiceConfig
import SluiceGraph
import Testing

/// A link with settings: `{ chain: …, capacity: …, when-full: … }` (docs/graph-files.md, "Links").
extension GraphFileTests {
    @Test("a chain with settings gives them to every hop; plain chains block and keep the default")
    func linkSettings() throws {
        let graph = try parse("""
            nodes: { a: { type: x }, b: { type: x }, c: { type: x }, d: { type: x } }
            links:
              - a -> b
              - { chain: b -> c -> d, capacity: 0.02, when-full: drop-oldest }
              - chain: c.out2 -> d.in2
                capacity-frames: 960
                when-full: drop-newest
            """)
        #expect(graph.links.map(\.whenFull) == [.block, .dropOldest, .dropOldest, .dropNewest])
        #expect(graph.links.map(\.capacity) == [nil, .seconds(0.02), .seconds(0.02), .frames(960)])
        #expect(graph.links[1].optionsLocation?.line == 4)
        #expect(LinkCapacity.seconds(0.02).frames(at: 48_000) == 960)
    }

    @Test("bad link settings name the place and the fix")
    func badLinkSettings() {
        let head = "nodes: { a: { type: x }, b: { type: x } }\nlinks:\n"
        let seconds = "capacity: 0.02 (the seconds the link holds, 0.001…60)"
        let cases: [(item: String, message: String, column: Int, fix: String)] = [
            ("{ chain: a -> b, when-full: drop-oldset }",
             "a link's when-full must be one of block, drop-oldest, drop-newest, not 'drop-oldset'", 33, "did you mean 'drop-oldest'?"),
            ("{ chain: a -> b, capacity: 1e300 }", "a link's capacity must be between 0.001 and 60 seconds, not 1e300", 32, seconds),
            ("{ chain: a -> b, capacity: .nan }", "a link's capacity must be a number of seconds, not '.nan'", 32, seconds),
            ("{ chain: a -> b, capacity-frames: -1 }", "a link's capacity-frames must be between 1 and 2880000, not -1", 39,
             "capacity-frames: 960 (the frames the link holds, 1…2880000)"),
            ("{ chain: a -> b, capacity: 0.1, capacity-frames: 10 }",
             "a link takes capacity or capacity-frames, not both (the other at line 3)", 37,
             "keep one: `capacity: 0.02` (seconds) or `capacity-frames: 960`"),
            ("{ capacity: 0.1 }", "a link with settings needs its chain", 5,
             "write e.g. `- { chain: split.out2 -> meter, capacity: 0.02, when-full: drop-oldest }`"),
            ("{ chain: a -> b, leaky: true }", "unknown link setting 'leaky'", 22,
             "a link's settings are chain, capacity, capacity-frames and when-full"),
        ]
        for (item, message, column, fix) in cases {
            expectOne(errors(head + "  - \(item)\n"), message, line: 3, column: column, file: Self.file, fix: fix)
        }
    }
}
