@testable import SluiceJACK
import Testing

/// The engine's start: armed with the latest cycle's frame time once the ports are connected,
/// it renders from the first period that begins later.
@Suite struct RenderStateTests {
    @Test("an armed state keeps its frame, 32 bits and all, and the periods it skips; silent and rendering are not armed")
    func armedKeepsItsFrame() {
        for frame: UInt32 in [0, 1, 256, 0x7FFF_FFFF, 0x8000_0000, .max] {
            for skipping in [0, 1, 63] {
                let state = RenderState.armed(after: frame, thenSkipping: skipping)
                #expect(RenderState.armedFrame(state)?.frame == frame)
                #expect(RenderState.armedFrame(state)?.skipping == skipping)
                #expect(state != RenderState.silent && state != RenderState.rendering)
            }
        }
        #expect(RenderState.armedFrame(RenderState.silent) == nil)
        #expect(RenderState.armedFrame(RenderState.rendering) == nil)
    }

    @Test("any period but the one armed in renders: later ones, and ones a bogus frame (0) cannot order")
    func laterPeriodsOnly() {
        #expect(!RenderState.startsRendering(periodStart: 1_024, armedAt: 1_024), "the cycle under way may still run the old graph")
        #expect(RenderState.startsRendering(periodStart: 1_280, armedAt: 1_024))
        #expect(RenderState.startsRendering(periodStart: 255, armedAt: .max - 255), "the next period, past the wrap")
        // PipeWire's JACK layer reads 0 before the client's first cycle; its clock is far on.
        #expect(RenderState.startsRendering(periodStart: 0x9000_0000, armedAt: 0))
    }
}
