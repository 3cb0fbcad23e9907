import Glibc
import SluiceGraph
import Testing

/// The debug-build thread-tag checks: a control function called on the audio thread, or two
/// threads in one real-time section, trap; the ordinary use does not.
@Suite struct ThreadTagCheckTests {
    @Test func enteringAndLeavingOnOneThreadPasses() {
        let check = ThreadTagCheck("test")
        for _ in 0..<3 {
            check.enter()
            check.exit()
            check.assertNotInside()
        }
        #expect(!check.isInside)
    }

    #if DEBUG
    @Test func aControlCallInsideTheSectionTraps() async {
        await #expect(processExitsWith: .failure) {
            let check = ThreadTagCheck("test")
            check.enter()
            check.assertNotInside()
        }
    }

    @Test func aSecondThreadInTheSectionTraps() async {
        await #expect(processExitsWith: .failure) {
            let check = ThreadTagCheck("test")
            check.enter()
            let other = GraphThread(name: "intruder") { check.enter() }
            other.join()
        }
    }
    #endif
}
