import Foundation
import Testing

/// docs/graph-files.md carries the node reference `sluice nodes --markdown --builtin` prints; a node
/// or parameter added without updating the page fails here.
@Suite struct NodeReferenceDocsTests {
    @Test func graphFilesReferenceMatchesSluiceNodes() throws {
        let page = try String(contentsOf: CLI.packageRoot.appendingPathComponent("docs/graph-files.md"), encoding: .utf8)
        let begin = try #require(page.range(of: "<!-- node-reference:begin -->\n"))
        let end = try #require(page.range(of: "<!-- node-reference:end -->"))
        let outcome = try CLI.sluice(["nodes", "--markdown", "--builtin"])
        #expect(outcome.status == 0)
        #expect(String(page[begin.upperBound..<end.lowerBound]) == outcome.standardOutput,
                "regenerate the section with `sluice nodes --markdown --builtin`")
    }
}
