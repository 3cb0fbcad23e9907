import Foundation
import SluiceNodes
import Testing
@testable import SluiceGraph

/// docs/graph-files.md carries the node reference `sluice nodes --markdown` prints; a node
/// or parameter added without updating the page fails here.
@Suite struct DocsTests {
    @Test func graphFilesReferenceMatchesTheNodeDescriptors() throws {
        let page = try String(
            contentsOf: GraphFilesTests.graphsFolder.deletingLastPathComponent().appendingPathComponent("docs/graph-files.md"),
            encoding: .utf8)
        let begin = try #require(page.range(of: "<!-- node-reference:begin -->\n"))
        let end = try #require(page.range(of: "<!-- node-reference:end -->"))
        let documented = String(page[begin.upperBound..<end.lowerBound])
        let expected = NodeReference.markdown(of: BuiltinNodes.types.map(\.descriptor))
        #expect(documented == expected, "regenerate with `sluice nodes --markdown`")
    }

    @Test func builtinTypeNamesAreDistinct() {
        let names = BuiltinNodes.types.map(\.descriptor.typeName)
        #expect(Set(names).count == names.count)
        #expect(BuiltinNodes.registry().all.count == names.count)
    }
}
