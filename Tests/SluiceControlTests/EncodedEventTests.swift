import Foundation
@testable import SluiceControl
@testable import SluiceGraph
import Testing

/// Events as watchers and pages read them: encoded once, and the `level` event written by hand
/// reads as the encoder would write it.
@Suite("encoded events")
struct EncodedEventTests {
    static func object(_ json: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any], "not an object: \(json)")
    }

    @Test("the level event written by hand is the encoder's, keys sorted, a non-finite peak as 0")
    func levelEventByHand() throws {
        var status = PlaybackStatus(state: .playing, position: 12.41, bufferedSeconds: 0.43, secondsToBuffer: 0, scheduledSeconds: 13)
        status.watermarkSeconds = 0.5
        let fills = [(link: "b.out -> c.in", heldSeconds: 0.43, capacitySeconds: 0.5), (link: "a.out -> b.\"in\"", heldSeconds: 0.085_23, capacitySeconds: 0.1)]
        let event = ServedGraph.levelEvent(peak: 0.5, status: status, fills: fills)
        let byHand = event.json()
        var fields = event.fields.mapValues { $0 as Any }
        fields["event"] = "level"
        let encoded = ControlJSON.encode(fields)
        #expect(NSDictionary(dictionary: try Self.object(byHand)).isEqual(to: try Self.object(encoded)), "\(byHand)\n\(encoded)")
        #expect(byHand == #"{"buffered":0.43,"event":"level","links":{"a.out -> b.\"in\"":0.0852,"b.out -> c.in":0.43},"peak":0.5,"position":12.41,"watermark":0.5}"#)
        // A watcher that lost events gets them counted, in an encoding of its own.
        #expect(try Self.object(event.json(adding: ["dropped": 3]))["dropped"] as? Int == 3)
        #expect(event.json() == byHand)

        status.watermarkSeconds = nil
        let sizing = ServedGraph.levelEvent(peak: .nan, status: status, fills: [])
        #expect(sizing.json() == #"{"buffered":0.43,"event":"level","peak":0,"position":12.41}"#)
    }
}
