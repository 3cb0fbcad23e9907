import Foundation
import Glibc
import SluiceTestSupport
import Testing

/// The `lv2` node from the command line: what reads the LV2 bundles (only what uses them),
/// a plugin Sluice cannot host refused by `check`, the listings, and the shipped graph.
@Suite struct LV2CommandTests {
    /// A bundle of the test's own: eg-amp's library, declared under another URI as requiring
    /// buf-size:fixedBlockLength (which Sluice does not provide).
    static func makeBundle(in folder: TemporaryFolder) throws -> String {
        let bundle = folder.path("refused.lv2")
        try FileManager.default.createDirectory(atPath: bundle, withIntermediateDirectories: true)
        _ = try folder.copy("/usr/lib/lv2/eg-amp.lv2/amp.so", as: "refused.lv2/amp.so")
        _ = try folder.write("""
            @prefix lv2: <http://lv2plug.in/ns/lv2core#> .
            @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
            <urn:sluice:test:fixed-block-amp> a lv2:Plugin ; lv2:binary <amp.so> ; rdfs:seeAlso <amp.ttl> .
            """, to: "refused.lv2/manifest.ttl")
        _ = try folder.write("""
            @prefix doap: <http://usefulinc.com/ns/doap#> .
            @prefix lv2: <http://lv2plug.in/ns/lv2core#> .
            <urn:sluice:test:fixed-block-amp> a lv2:Plugin ; doap:name "Fixed-block amp" ;
                lv2:requiredFeature <http://lv2plug.in/ns/ext/buf-size#fixedBlockLength> ;
                lv2:port [ a lv2:AudioPort, lv2:InputPort ; lv2:index 1 ; lv2:symbol "in" ; lv2:name "In" ] ,
                         [ a lv2:AudioPort, lv2:OutputPort ; lv2:index 2 ; lv2:symbol "out" ; lv2:name "Out" ] ,
                         [ a lv2:ControlPort, lv2:InputPort ; lv2:index 0 ; lv2:symbol "gain" ; lv2:name "Gain" ;
                           lv2:default 0.0 ; lv2:minimum -90.0 ; lv2:maximum 24.0 ] .
            """, to: "refused.lv2/amp.ttl")
        return bundle
    }

    @Test("check reads no LV2 bundle for a graph without an `lv2` node; a graph with one does")
    func bundlesReadOnlyWhenUsed() throws {
        let folder = TemporaryFolder("sluice-lv2-lazy")
        let bundle = try Self.makeBundle(in: folder)
        let environment = ["LV2_PATH": folder.path + ":/usr/lib/lv2"]

        let without = try FileOpenings.count(in: bundle) {
            let outcome = try CLI.sluice(["check", "graphs/morse.yaml"], environment: environment)
            #expect(outcome.status == 0, "\(outcome.standardError)")
        }
        #expect(without == 0, "check of a graph without an lv2 node opened \(without) files of the bundle")

        let with = try FileOpenings.count(in: bundle) {
            let outcome = try CLI.sluice(["check", "graphs/lv2-eq.yaml"], environment: environment)
            #expect(outcome.status == 0, "\(outcome.standardError)")
        }
        #expect(with > 0, "the watch saw nothing: it cannot tell the difference")
    }

    @Test("a plugin requiring a feature Sluice does not provide is refused by check, naming it, the line and the fix")
    func unsupportedFeatureRefused() throws {
        let folder = TemporaryFolder("sluice-lv2-refused")
        _ = try Self.makeBundle(in: folder)
        _ = try folder.write("""
            nodes:
              key: { type: morse }
              amp: { type: lv2, uri: "urn:sluice:test:fixed-block-amp", gain: -6 }
              out: { type: null.sink }
            links: [key -> amp -> out]
            """, to: "refused.yaml")
        let outcome = try CLI.sluice(["check", folder.path("refused.yaml")], environment: ["LV2_PATH": folder.path])
        #expect(outcome.status == 1)
        #expect(outcome.standardError.contains("refused.yaml:3:"), "\(outcome.standardError)")
        #expect(
            outcome.standardError.contains(
                "LV2 plugin <urn:sluice:test:fixed-block-amp> requires <http://lv2plug.in/ns/ext/buf-size#fixedBlockLength>, which Sluice does not provide"),
            "\(outcome.standardError)")
        #expect(outcome.standardError.contains("fix: pick another plugin"), "\(outcome.standardError)")

        // The listing says so too, and still lists it.
        let listing = try CLI.sluice(["nodes", "--lv2"], environment: ["LV2_PATH": folder.path])
        #expect(listing.standardOutput.contains("urn:sluice:test:fixed-block-amp"), "\(listing.standardOutput)")
        #expect(listing.standardOutput.contains("[not hostable: requires http://lv2plug.in/ns/ext/buf-size#fixedBlockLength]"))
    }

    @Test("nodes --lv2 lists the installed plugins; nodes lv2:<uri> shows one's parameters and presets")
    func listings() throws {
        let listing = try CLI.sluice(["nodes", "--lv2"])
        #expect(listing.status == 0)
        #expect(listing.standardOutput.split(separator: "\n").contains { $0.hasPrefix("http://lv2plug.in/plugins/eg-amp ") && $0.contains("Simple Amplifier") })
        let json = try CLI.sluice(["nodes", "--lv2", "--json"])
        let entries = try #require(try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [[String: Any]])
        let amp = try #require(entries.first { $0["uri"] as? String == "http://lv2plug.in/plugins/eg-amp" })
        #expect(amp["parameters"] as? [String] == ["gain"])

        let one = try CLI.sluice(["nodes", "lv2:http://gareus.org/oss/lv2/zeroconvolv#Mono"])
        #expect(one.status == 0, "\(one.standardError)")
        #expect(one.standardOutput.contains("presets (preset: <label>)\n    No-OP Mono  <http://gareus.org/oss/lv2/zeroconvolv/pset#noopMono>"), "\(one.standardOutput)")
        let unknown = try CLI.sluice(["nodes", "lv2:http://example.org/none"])
        #expect(unknown.status == 1)
        #expect(unknown.standardError.contains("no LV2 plugin <http://example.org/none> is installed"), "\(unknown.standardError)")
    }

    @Test("graphs/lv2-eq.yaml renders: Morse through x42's equaliser")
    func shippedGraphRenders() throws {
        let folder = TemporaryFolder("sluice-lv2-render")
        let outcome = try CLI.sluice(["render", "graphs/lv2-eq.yaml", "--text", "SOS", "--output", folder.path("eq.wav")])
        #expect(outcome.status == 0, "\(outcome.standardError)")
        let size = (try? FileManager.default.attributesOfItem(atPath: folder.path("eq.wav"))[.size] as? Int) ?? 0
        #expect(size > 100_000)
    }
}

/// Counts the files opened inside a folder while something runs (inotify's IN_OPEN), to tell
/// whether a command read them.
enum FileOpenings {
    static func count(in folder: String, while body: () throws -> Void) throws -> Int {
        let descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        try #require(descriptor >= 0, "inotify_init1: \(String(cString: strerror(errno)))")
        defer { close(descriptor) }
        try #require(inotify_add_watch(descriptor, folder, UInt32(IN_OPEN)) >= 0)
        try body()
        var opened = 0
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let length = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            guard length > 0 else { break }
            var offset = 0
            while offset < length {
                let event = buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: inotify_event.self) }
                if event.mask & UInt32(IN_OPEN) != 0 { opened += 1 }
                offset += MemoryLayout<inotify_event>.size + Int(event.len)
            }
        }
        return opened
    }
}
