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
        expectOne(errors(head + "  - { chain: a -> b, when-full: drop-oldset }\n"),
                  "a link's when-full must be one of block, drop-oldest, drop-newest, not 'drop-oldset'", line: 3, column: 33,
                  file: Self.file, fix: "did you mean 'drop-oldest'?")
        expectOne(errors(head + "  - { chain: a -> b, capacity: 1e300 }\n"),
                  "a link's capacity must be between 0.001 and 60 seconds, not 1e300", line: 3, column: 32, file: Self.file,
                  fix: "capacity: 0.02 (the seconds the link holds, 0.001…60)")
        expectOne(errors(head + "  - { chain: a -> b, capacity: .nan }\n"),
                  "a link's capacity must be a number of seconds, not '.nan'", line: 3, column: 32, file: Self.file,
                  fix: "capacity: 0.02 (the seconds the link holds, 0.001…60)")
        expectOne(errors(head + "  - { chain: a -> b, capacity-frames: -1 }\n"),
                  "a link's capacity-frames must be between 1 and 2880000, not -1", line: 3, column: 39, file: Self.file,
                  fix: "capacity-frames: 960 (the frames the link holds, 1…2880000)")
        expectOne(errors(head + "  - { chain: a -> b, capacity: 0.1, capacity-frames: 10 }\n"),
                  "a link takes capacity or capacity-frames, not both (the other at line 3)", line: 3, column: 37, file: Self.file,
                  fix: "keep one: `capacity: 0.02` (seconds) or `capacity-frames: 960`")
        expectOne(errors(head + "  - { capacity: 0.1 }\n"),
                  "a link with settings needs its chain", line: 3, column: 5, file: Self.file,
                  fix: "write e.g. `- { chain: split.out2 -> meter, capacity: 0.02, when-full: drop-oldest }`")
        expectOne(errors(head + "  - { chain: a -> b, leaky: true }\n"),
                  "unknown link setting 'leaky'", line: 3, column: 22, file: Self.file,
                  fix: "a link's settings are chain, capacity, capacity-frames and when-full")
    }
}
