import CLadspa
import Glibc
import SluiceAudio
import SluiceGraph

/// One plugin of a LADSPA library, read from its descriptor: its audio ports, and its
/// control inputs as Sluice parameters.
public final class LADSPAPlugin: @unchecked Sendable {
    // SAFETY (@unchecked Sendable): read-only after `init`; `descriptor` points into a library
    // that is never closed (`LADSPALibrary`).

    public let libraryPath: String
    public let label: String
    public let name: String
    public let maker: String
    public let uniqueID: UInt
    /// Port indices of the audio inputs and outputs, in the plugin's order.
    public let audioInputs: [Int]
    public let audioOutputs: [Int]
    /// The control inputs: the node's live parameters.
    public let controls: [LADSPAControl]
    /// Port indices and names of the control outputs (meters, a reported latency).
    public let controlOutputs: [(port: Int, name: String)]
    /// The plugin's `latency` control output (the LADSPA convention for a delay it adds), if any.
    public let latencyPort: Int?
    /// Whether the plugin says it must not be given one buffer as input and output.
    public let isInPlaceBroken: Bool
    /// Whether the plugin says it is safe in a hard real-time thread (LADSPA_PROPERTY_HARD_RT_CAPABLE).
    public let isHardRealtimeCapable: Bool
    let descriptor: UnsafePointer<LADSPA_Descriptor>

    init(library: String, descriptor: UnsafePointer<LADSPA_Descriptor>) throws(LADSPAError) {
        let plugin = descriptor.pointee
        guard let label = plugin.Label.map({ String(cString: $0) }), !label.isEmpty else {
            throw .invalid(path: library, reason: "a plugin without a label")
        }
        guard plugin.PortCount <= UInt(LADSPALibrary.portLimit) else {
            throw .invalid(path: library, reason: "plugin '\(label)' has \(plugin.PortCount) ports")
        }
        guard plugin.instantiate != nil, plugin.connect_port != nil, plugin.run != nil, plugin.cleanup != nil,
            plugin.PortCount == 0 || (plugin.PortDescriptors != nil && plugin.PortNames != nil && plugin.PortRangeHints != nil)
        else {
            throw .invalid(path: library, reason: "plugin '\(label)' lacks a function or its port tables")
        }
        libraryPath = library
        self.label = label
        name = plugin.Name.map { String(cString: $0) } ?? label
        maker = plugin.Maker.map { String(cString: $0) } ?? ""
        uniqueID = plugin.UniqueID
        isInPlaceBroken = plugin.Properties & LADSPA_PROPERTY_INPLACE_BROKEN != 0
        isHardRealtimeCapable = plugin.Properties & LADSPA_PROPERTY_HARD_RT_CAPABLE != 0
        self.descriptor = descriptor

        var audioInputs: [Int] = [], audioOutputs: [Int] = []
        var controls: [LADSPAControl] = [], controlOutputs: [(Int, String)] = []
        var latencyPort: Int?
        var symbols = Set(LADSPANodeType.pickingParameters)
        for port in 0..<Int(plugin.PortCount) {
            let kind = plugin.PortDescriptors[port]
            let portName = plugin.PortNames[port].map { String(cString: $0) } ?? "port \(port)"
            let isInput = kind & LADSPA_PORT_INPUT != 0
            if kind & LADSPA_PORT_AUDIO != 0 {
                if isInput { audioInputs.append(port) } else { audioOutputs.append(port) }
            } else if isInput {
                let symbol = Self.uniqueSymbol(for: portName, among: &symbols)
                controls.append(LADSPAControl(port: port, name: portName, symbol: symbol, hint: plugin.PortRangeHints[port]))
            } else {
                controlOutputs.append((port, portName))
                if portName.lowercased() == "latency" || portName.lowercased() == "_latency" { latencyPort = port }
            }
        }
        self.audioInputs = audioInputs
        self.audioOutputs = audioOutputs
        self.controls = controls
        self.controlOutputs = controlOutputs
        self.latencyPort = latencyPort
    }

    /// A port name as a parameter name: lowercase words joined by hyphens, as Sluice's own
    /// parameters are ("Delay (Seconds)" → `delay-seconds`); a name taken already (or one
    /// of the picking parameters) gets the port's position among its like added.
    static func symbol(for name: String) -> String {
        var symbol = ""
        var pendingHyphen = false
        for character in name.lowercased() {
            if character.isASCII && (character.isLetter || character.isNumber) {
                if pendingHyphen && !symbol.isEmpty { symbol.append("-") }
                symbol.append(character)
                pendingHyphen = false
            } else {
                pendingHyphen = true
            }
        }
        return symbol.isEmpty ? "control" : symbol
    }

    private static func uniqueSymbol(for name: String, among taken: inout Set<String>) -> String {
        let base = symbol(for: name)
        var candidate = base
        var suffix = 2
        while !taken.insert(candidate).inserted {
            candidate = "\(base)-\(suffix)"
            suffix += 1
        }
        return candidate
    }

    /// The plugin's one-line description for listings.
    public var summary: String {
        let ports = "\(audioInputs.count) in, \(audioOutputs.count) out"
        return "\(name) (LADSPA \(uniqueID), \(ports)\(maker.isEmpty ? "" : ", by \(maker)"))"
    }
}

/// One control input of a LADSPA plugin, as a Sluice parameter.
public struct LADSPAControl: Sendable {
    /// The port's index in the plugin.
    public let port: Int
    /// The name the plugin gives it ("Delay (Seconds)").
    public let name: String
    /// The parameter name in graph files and live changes (`delay-seconds`).
    public let symbol: String
    /// Whether the bounds are fractions of the sample rate (a frequency).
    public let isRateRelative: Bool
    /// The port's bounds as the plugin gives them (fractions of the rate when rate-relative).
    public let lowerBound: Double?
    public let upperBound: Double?
    public let isToggle: Bool
    public let isInteger: Bool
    public let isLogarithmic: Bool
    let defaultHint: Int32

    /// Rate-relative bounds are checked, before the rate is known, against the highest rate
    /// a graph may run at, and clamped to the node's own rate when it runs.
    static let checkingRateRange = 1_000...384_000

    init(port: Int, name: String, symbol: String, hint: LADSPA_PortRangeHint) {
        self.port = port
        self.name = name
        self.symbol = symbol
        let flags = hint.HintDescriptor
        isRateRelative = flags & LADSPA_HINT_SAMPLE_RATE != 0
        lowerBound = flags & LADSPA_HINT_BOUNDED_BELOW != 0 && hint.LowerBound.isFinite ? Double(hint.LowerBound) : nil
        upperBound = flags & LADSPA_HINT_BOUNDED_ABOVE != 0 && hint.UpperBound.isFinite ? Double(hint.UpperBound) : nil
        isToggle = flags & LADSPA_HINT_TOGGLED != 0
        isInteger = flags & LADSPA_HINT_INTEGER != 0
        isLogarithmic = flags & LADSPA_HINT_LOGARITHMIC != 0
        defaultHint = flags & LADSPA_HINT_DEFAULT_MASK
    }

    /// The range values are checked against: the bounds (at the rate, for rate-relative
    /// ones), or the whole finite range of a Float where the plugin gives none.
    func range(rate: Int?) -> ClosedRange<Double> {
        let largest = Double(Float.greatestFiniteMagnitude)
        var low = lowerBound ?? -largest
        var high = upperBound ?? largest
        if isRateRelative {
            let lowRate = Double(rate ?? Self.checkingRateRange.lowerBound)
            let highRate = Double(rate ?? Self.checkingRateRange.upperBound)
            if let lowerBound { low = lowerBound * (lowerBound < 0 ? highRate : lowRate) }
            if let upperBound { high = upperBound * (upperBound < 0 ? lowRate : highRate) }
        }
        return min(low, high)...max(low, high)
    }

    /// The default the plugin's hint gives (LADSPA's DEFAULT_* rules), at `rate` for
    /// rate-relative ports; 0 where it gives none and 0 is in range, else the lower bound.
    public func defaultValue(rate: Int) -> Double {
        let scale = isRateRelative ? Double(rate) : 1
        let low = lowerBound.map { $0 * scale }
        let high = upperBound.map { $0 * scale }
        func between(_ weightOfLow: Double) -> Double? {
            guard let low, let high else { return nil }
            if isLogarithmic && low > 0 && high > 0 {
                return exp(log(low) * weightOfLow + log(high) * (1 - weightOfLow))
            }
            return low * weightOfLow + high * (1 - weightOfLow)
        }
        let value: Double? = switch defaultHint {
        case LADSPA_HINT_DEFAULT_MINIMUM: low
        case LADSPA_HINT_DEFAULT_LOW: between(0.75)
        case LADSPA_HINT_DEFAULT_MIDDLE: between(0.5)
        case LADSPA_HINT_DEFAULT_HIGH: between(0.25)
        case LADSPA_HINT_DEFAULT_MAXIMUM: high
        case LADSPA_HINT_DEFAULT_0: 0
        case LADSPA_HINT_DEFAULT_1: 1
        case LADSPA_HINT_DEFAULT_100: 100
        case LADSPA_HINT_DEFAULT_440: 440
        default: nil
        }
        let range = self.range(rate: rate)
        let chosen = value ?? (range.contains(0) ? 0 : range.lowerBound)
        return isInteger || isToggle ? chosen.rounded() : chosen
    }

    /// This control as a live Sluice parameter. A rate-relative control has no default here:
    /// the node computes the plugin's at its own rate when the file gives none.
    var parameter: ParameterDescriptor {
        let type: ParameterType
        var defaultValue: ParameterValue?
        if isToggle {
            type = .integer(0...1)
            defaultValue = .integer(self.defaultValue(rate: 48_000) == 0 ? 0 : 1)
        } else if isInteger, let range = Self.integerRange(range(rate: nil)) {
            type = .integer(range)
            defaultValue = .integer(Int(self.defaultValue(rate: 48_000).clamped(to: Double(range.lowerBound)...Double(range.upperBound))))
        } else {
            type = .number(range(rate: nil))
            defaultValue = .number(self.defaultValue(rate: 48_000))
        }
        var summary = "LADSPA control \"\(name)\""
        if isRateRelative {
            // Its default depends on the node's rate: left absent, the node computes it.
            defaultValue = nil
        }
        if isToggle { summary += ", a toggle (0 off, 1 on)" }
        if isLogarithmic { summary += ", logarithmic" }
        if isRateRelative {
            summary += "; its limits scale with the sample rate (checked at 384 kHz, clamped at the node's)"
            if defaultHint != 0 { summary += ", default \(ExternalNumber.text(self.defaultValue(rate: 48_000))) Hz at 48 kHz" }
        }
        return ParameterDescriptor(
            symbol, type, default: defaultValue, unit: isRateRelative ? "Hz" : nil, live: true, summary: summary)
    }

    private static func integerRange(_ range: ClosedRange<Double>) -> ClosedRange<Int>? {
        let limit = Double(1 << 52)
        guard range.lowerBound >= -limit, range.upperBound <= limit else { return nil }
        return Int(range.lowerBound.rounded(.up))...Int(range.upperBound.rounded(.down))
    }
}

extension Double {
    func clamped(to range: ClosedRange<Double>) -> Double { Swift.min(Swift.max(self, range.lowerBound), range.upperBound) }
}
