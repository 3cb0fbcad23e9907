import SluiceGraph
import Testing

/// The diagnostics a parse throws, or a recorded failure when it does not throw.
func diagnostics(_ parse: () throws(GraphDiagnostics) -> GraphDescription, sourceLocation: Testing.SourceLocation = #_sourceLocation) -> [GraphDiagnostic] {
    do {
        let description = try parse()
        Issue.record("expected diagnostics, got \(description)", sourceLocation: sourceLocation)
        return []
    } catch {
        return error.diagnostics
    }
}

/// Expects exactly one diagnostic, containing `message`, at `line`:`column` of `file`.
func expectOne(
    _ found: [GraphDiagnostic], _ message: String, line: Int, column: Int, file: String,
    fix: String? = nil, sourceLocation: Testing.SourceLocation = #_sourceLocation
) {
    #expect(found.count == 1, "\(found)", sourceLocation: sourceLocation)
    guard let diagnostic = found.first else { return }
    #expect(diagnostic.message.contains(message), "message: \(diagnostic.message)", sourceLocation: sourceLocation)
    #expect(diagnostic.location == SluiceGraph.SourceLocation(file: file, line: line, column: column),
            "location: \(String(describing: diagnostic.location))", sourceLocation: sourceLocation)
    if let fix {
        #expect(diagnostic.fix?.contains(fix) == true, "fix: \(String(describing: diagnostic.fix))", sourceLocation: sourceLocation)
    }
}
