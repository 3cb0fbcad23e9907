import Testing
@testable import SluiceConfig
