import SluiceNodes
import Testing
@testable import SluiceGraph

/// The built-in node types register together.
@Suite struct BuiltinNodesTests {
    @Test func builtinTypeNamesAreDistinct() {
        let names = BuiltinNodes.types.map(\.descriptor.typeName)
        #expect(Set(names).count == names.count)
        #expect(BuiltinNodes.registry().all.count == names.count)
    }
}
