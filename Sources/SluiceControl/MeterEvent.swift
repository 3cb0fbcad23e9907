import Foundation
import SluiceGraph

/// A meter's reading as a `meter` event: levels in dB relative to full scale, silence as the
/// floor (JSON has no −∞), loudness in LUFS where there is any.
enum MeterEvent {
    /// The level silence reads.
    static let floor = -200.0

    static func decibels(_ linear: Double) -> Double {
        guard linear > 0, linear.isFinite else { return floor }
        return max(20 * log10(linear), floor)
    }

    static func fields(of reading: MeterReading, node: String) -> [String: any Sendable] {
        var fields: [String: any Sendable] = [
            "node": node, "frame": reading.frame,
            "channels": reading.channels.map { channel -> [String: any Sendable] in
                var levels: [String: any Sendable] = ["peak-db": decibels(channel.peak), "rms-db": decibels(channel.rms)]
                if let truePeak = channel.truePeak { levels["true-peak-db"] = decibels(truePeak) }
                return levels
            },
        ]
        if let momentary = reading.momentary { fields["momentary-lufs"] = momentary }
        if let shortTerm = reading.shortTerm { fields["short-term-lufs"] = shortTerm }
        if let integrated = reading.integrated { fields["integrated-lufs"] = integrated }
        return fields
    }
}
