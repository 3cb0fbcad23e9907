import Foundation
import SluiceConfig
import SluiceGraph
import SluiceNodes
import SluiceTestSupport
import Testing

/// `meter:` on a sink (SinkMeters.swift): the meter node the compiler puts in front of it.
@Suite struct SinkMeterTests {
    @Test("`meter:` on a sink puts a meter node named <sink>-meter in front of it; a bad value is the sink's error")
    func meterOptionOnSinks() throws {
        let registry = BuiltinNodes.registry()
        #expect(registry.type(named: "wav.sink")?.descriptor.parameter(named: "meter") != nil)
        #expect(registry.type(named: "null.sink")?.descriptor.parameter(named: "meter") != nil)
        #expect(registry.type(named: "fader")?.descriptor.parameter(named: "meter") == nil)
        let graph = try GraphCompiler(registry: registry).compile(GraphFile.parse(
            """
            nodes:
              tone: { type: tone, frequency: 997, amplitude: 0.5, duration: 1 }
              out:  { type: null.sink, meter: 0.25 }
            links: [tone -> out]
            playback: { strategy: stream }
            """, file: "metered.yaml"))
        let meter = try #require(graph.node(named: "out-meter")?.instance as? MeterNode)
        // Taken while the render runs, as a served graph's control thread takes them.
        var readings: [MeterReading] = []
        let (samples, _) = try GraphRendering.render(graph) { _ in readings += meter.takeReadings() }
        readings += meter.takeReadings()
        #expect(samples.count == 48_000)
        #expect(readings.count == 4, "\(readings.map(\.frame))")
        #expect(readings.allSatisfy { abs(20 * log10($0.channels[0].peak) - -6.02) < 0.05 }, "\(readings)")

        do {
            _ = try GraphCompiler(registry: registry).compile(GraphFile.parse(
                """
                nodes:
                  tone: { type: tone }
                  out:  { type: null.sink, meter: 30 }
                links: [tone -> out]
                """, file: "metered.yaml"))
            Issue.record("meter: 30 was accepted")
        } catch {
            let message = error.diagnostics.map(\.description).joined(separator: "\n")
            #expect(message.contains("metered.yaml:3:") && message.contains("parameter 'meter' (s) of node 'out'"), "\(message)")
        }
    }
}
