import Testing
@testable import SluiceGraph
