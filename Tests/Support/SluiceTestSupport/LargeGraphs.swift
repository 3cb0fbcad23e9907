/// Graph files of the sizes and shapes a hostile or careless sender might give, for the tests
/// (is the result right?) and the `sizes` benchmark (how long does it take?).
public enum LargeGraphs {
    /// `src -> n0 -> … -> n(count-1) -> out`: a tone through `count` faders, in one link chain.
    public static func faderChain(_ count: Int) -> String {
        var text = "name: chain\nnodes:\n  src: { type: tone, frequency: 440, duration: 0.01 }\n"
        for index in 0..<count { text += "  n\(index): { type: fader, length: 0 }\n" }
        text += "  out: { type: null.sink, rate: 48000 }\nlinks:\n  - src"
        for index in 0..<count { text += " -> n\(index)" }
        return text + " -> out\n"
    }

    /// A tree of 16-input mixers over tone sources, `total` nodes in all (sources, mixers and
    /// the sink), each link on its own line.
    public static func mixerTree(nodes total: Int) -> String {
        // Sources s, mixers m = ceil(s/16) + ceil(ceil(s/16)/16) + …, plus one sink.
        func mixers(over leaves: Int) -> Int {
            var count = 0, level = leaves
            while level > 1 { level = (level + 15) / 16; count += level }
            return count
        }
        var leaves = total - 1
        while leaves + mixers(over: leaves) + 1 > total { leaves -= 1 }
        var nodes = "name: tree\nnodes:\n", links = "links:\n"
        var level = (0..<leaves).map { "s\($0)" }
        for name in level { nodes += "  \(name): { type: tone, frequency: 440, duration: 0.01 }\n" }
        var next = 0
        while level.count > 1 {
            var upper: [String] = []
            for start in stride(from: 0, to: level.count, by: 16) {
                let group = level[start..<min(start + 16, level.count)]
                let mixer = "m\(next)"
                next += 1
                nodes += "  \(mixer): { type: mixer, inputs: \(group.count) }\n"
                for (port, input) in group.enumerated() { links += "  - \(input) -> \(mixer).in\(port + 1)\n" }
                upper.append(mixer)
            }
            level = upper
        }
        nodes += "  out: { type: null.sink, rate: 48000 }\n"
        links += "  - \(level[0]) -> out\n"
        return nodes + links
    }

    /// A small valid graph after `bytes` of comment lines.
    public static func commented(bytes: Int) -> String {
        let line = "# " + String(repeating: "c", count: 97) + "\n"
        return String(repeating: line, count: bytes / line.utf8.count) + faderChain(1)
    }

    /// A node given the same parameter `count` times.
    public static func repeatedParameter(_ count: Int) -> String {
        var text = "name: repeats\nnodes:\n  src: { type: tone"
        for _ in 0..<count { text += ", frequency: 440" }
        return text + " }\n  out: { type: null.sink, rate: 48000 }\nlinks:\n  - src -> out\n"
    }
}
