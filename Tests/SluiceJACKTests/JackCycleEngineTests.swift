@testable import SluiceJACK
import Testing

/// The engine's start: armed with the latest cycle's frame time once the ports are connected,
/// it renders from the first period that begins later (JACK's frame times wrap at 2³²).
@Suite struct RenderStateTests {
    @Test("an armed state keeps its frame, 32 bits and all; silent and rendering are not armed")
    func armedKeepsItsFrame() {
        for frame: UInt32 in [0, 1, 256, 0x7FFF_FFFF, 0x8000_0000, .max] {
            let state = RenderState.armed(after: frame)
            #expect(RenderState.armedFrame(state) == frame)
            #expect(state != RenderState.silent && state != RenderState.rendering)
        }
        #expect(RenderState.armedFrame(RenderState.silent) == nil)
        #expect(RenderState.armedFrame(RenderState.rendering) == nil)
    }

    @Test("only a period that begins after the frame starts rendering, across the wrap")
    func laterPeriodsOnly() {
        #expect(!RenderState.periodStart(1_024, isAfter: 1_024), "the cycle under way may still run the old graph")
        #expect(!RenderState.periodStart(768, isAfter: 1_024))
        #expect(RenderState.periodStart(1_280, isAfter: 1_024))
        #expect(RenderState.periodStart(255, isAfter: .max - 255), "the next period, past the wrap")
        #expect(!RenderState.periodStart(.max - 511, isAfter: .max - 255))
    }
}
