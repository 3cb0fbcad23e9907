import Glibc
import SluiceAudio
import SluiceGraph
import Synchronization

/// The `tone` node: a test signal of known samples, optionally paced or stalled like a speech
/// provider, so graphs can be tried and tested without one.
///
/// Every sample is a function of its absolute frame index `n` (from 0), computed in Double and
/// rounded once to Float, so the output never depends on how the runtime slices it into
/// calls. With `A` the amplitude, `f` the frequency, `r` the rate and `frac(x) = x − ⌊x⌋`:
///
/// - `sine`: `A · sin(2π · frac(f·n/r))` (the phase is reduced to one cycle first so hours
///   of tone keep full precision; equal to `A · sin(2π·f·n/r)` to within rounding).
/// - `square`: `A` when `frac(f·n/r) < 0.5`, else `−A`.
/// - `noise`: `A · (2u − 1)` with `u = (x >> 11) · 2⁻⁵³`, where `x` is the (n+1)-th output
///   of SplitMix64 started from state `seed` (state += 0x9E3779B97F4A7C15, then the usual
///   mix). Uniform in [−A, A), the same for every run, and computable at any `n`.
/// - `clicks`: `A` at frame 0 and wherever `⌊f·n/r⌋ > ⌊f·(n−1)/r⌋` (the frames `⌈k·r/f⌉`),
///   0 elsewhere: `f` one-sample clicks per second.
///
/// Every channel carries the same signal. The stream holds `round(duration · rate)` frames.
/// Pacing and stalls follow `SourcePacing`.
///
/// Live: `frequency` and `amplitude` may change while the graph plays. A new frequency takes
/// over at the frame the change applies at, `n₀`, with the phase continuing: from there
/// `frac(f·n/r)` becomes `frac(φ₀ + f′·(n − n₀)/r)`, `φ₀` the phase reached at `n₀`. A new
/// amplitude is reached in a straight line over `amplitudeRampSeconds` from `n₀`, so neither
/// clicks.
public final class ToneSource: LiveParameterSource, @unchecked Sendable {
    // SAFETY (@unchecked Sendable): `cancelled` is atomic; everything else is set on the
    // control thread before the run and then touched only by the source thread.

    public enum Waveform: String, Sendable, Hashable, CaseIterable {
        case sine, square, noise, clicks
    }

    public static let type = NodeType(
        NodeDescriptor(
            typeName: "tone", kind: .source,
            summary: "A test signal (sine, square, noise or clicks), optionally paced like a slow provider.",
            outputs: [PortDescriptor("out", .frames, summary: "Float32 frames at `rate`, `channels` channels")],
            parameters: [
                ParameterDescriptor(
                    "waveform", .choice(Waveform.allCases.map(\.rawValue)), default: .string("sine"),
                    summary: "What to generate."),
                ParameterDescriptor(
                    "frequency", .number(1...20_000), default: .number(440), unit: "Hz", live: true,
                    summary: "Pitch of sine and square; clicks per second for clicks."),
                ParameterDescriptor(
                    "amplitude", .number(0...1), default: .number(0.5), live: true,
                    summary: "Peak value (full scale is 1)."),
                ParameterDescriptor(
                    "duration", .number(0...86_400), default: .number(1), unit: "s",
                    summary: "Length of the stream; it holds round(duration × rate) frames."),
                SourceParameters.rate,
                SourceParameters.channels,
                ParameterDescriptor(
                    "seed", .integer(0...Int(Int32.max)), default: .integer(1),
                    summary: "Seed of the noise generator; the same seed gives the same noise."),
                SourceParameters.pace,
                ParameterDescriptor(
                    "stall-at", .number(0...86_400), default: nil, unit: "s",
                    summary: "Graph time at which to stop producing for stall-for seconds, like a stalled provider."),
                ParameterDescriptor(
                    "stall-for", .number(0...86_400), default: .number(0), unit: "s",
                    summary: "Length of the stall that starts at stall-at."),
            ])
    ) { parameters in
        let stall: Range<Double>? = parameters["stall-at"].map { _ in
            let start = parameters.double("stall-at")
            return start..<(start + parameters.double("stall-for"))
        }
        return ToneSource(
            waveform: Waveform(rawValue: parameters.string("waveform") ?? "sine") ?? .sine,
            frequency: parameters.double("frequency"), amplitude: parameters.double("amplitude"),
            duration: parameters.double("duration"), rate: parameters.rate("rate"),
            channels: parameters.integer("channels"), seed: UInt64(parameters.integer("seed")),
            pace: parameters.double("pace"), stall: stall)
    }

    public let waveform: Waveform
    /// The frequency and amplitude now (after live changes; during a ramp, the amplitude of
    /// the next frame).
    public private(set) var frequency: Double
    public private(set) var amplitude: Double
    public let duration: Double
    /// The rate asked for, or nil for `auto`.
    public let requestedRate: Int?
    public let channels: Int
    public let seed: UInt64
    public let pace: Double
    public let stall: Range<Double>?

    private var rate = 0
    private var totalFrames = 0
    private var produced = 0
    private let cancelled = Atomic<Bool>(false)
    /// What the graph gave, for `reset`.
    private let initialFrequency: Double
    private let initialAmplitude: Double
    /// Where the current frequency took over, and the phase (in cycles, below 1) reached there.
    private var phaseOrigin = 0
    private var phaseAtOrigin = 0.0
    /// The amplitude ramp: its end, its step a frame, frames left.
    private var amplitudeTarget = 0.0
    private var amplitudeStep = 0.0
    private var amplitudeFramesLeft = 0

    /// `frequency`'s and `amplitude`'s indices among the type's parameters.
    public static let frequencyParameter = 1
    public static let amplitudeParameter = 2
    /// How long a live amplitude change takes.
    public static let amplitudeRampSeconds = 0.02

    public init(
        waveform: Waveform = .sine, frequency: Double = 440, amplitude: Double = 0.5, duration: Double = 1,
        rate: Int? = 48_000, channels: Int = 1, seed: UInt64 = 1, pace: Double = 0, stall: Range<Double>? = nil
    ) {
        precondition(channels > 0, "a tone needs at least one channel")
        self.waveform = waveform
        self.frequency = frequency
        self.amplitude = amplitude
        initialFrequency = frequency
        initialAmplitude = amplitude
        amplitudeTarget = amplitude
        self.duration = duration
        requestedRate = rate
        self.channels = channels
        self.seed = seed
        self.pace = pace
        self.stall = stall
    }

    public var expectedDuration: Double? { duration }

    /// Frames in the whole stream, once prepared.
    public var frameCount: Int { totalFrames }

    public func outputFormats(for inputs: [StreamFormat], context: FormatContext) throws(FormatMismatch) -> [StreamFormat] {
        [.frames(rate: requestedRate ?? context.downstreamRate ?? 48_000, channels: channels)]
    }

    public func prepare(_ context: PrepareContext) throws {
        guard let output = context.outputFormats.first else {
            throw NodeCreationError("'tone' was prepared without an output format")
        }
        rate = output.sampleRate
        totalFrames = Int((duration * Double(rate)).rounded())
        reset()
    }

    /// The phase at frame `n`, in cycles, with the current frequency.
    private func cycles(at n: Int) -> Double {
        phaseAtOrigin + frequency * Double(n - phaseOrigin) / Double(rate)
    }

    public func apply(_ change: ParameterChange) {
        guard change.value.isFinite, rate > 0 else { return }
        switch change.parameter {
        case Self.frequencyParameter:
            let phase = cycles(at: produced)
            phaseAtOrigin = phase - phase.rounded(.down)
            phaseOrigin = produced
            frequency = min(max(change.value, 1), 20_000)
        case Self.amplitudeParameter:
            amplitudeTarget = min(max(change.value, 0), 1)
            amplitudeFramesLeft = max(1, Int((Self.amplitudeRampSeconds * Double(rate)).rounded()))
            amplitudeStep = (amplitudeTarget - amplitude) / Double(amplitudeFramesLeft)
        default:
            break
        }
    }

    /// Sample `n` of the stream (before the Float rounding), as documented on the type, with
    /// the current frequency and amplitude.
    public func sample(at n: Int) -> Double {
        let cycles = cycles(at: n)
        switch waveform {
        case .sine:
            return amplitude * sin(2 * Double.pi * (cycles - cycles.rounded(.down)))
        case .square:
            return cycles - cycles.rounded(.down) < 0.5 ? amplitude : -amplitude
        case .noise:
            let u = Double(Self.splitMix64(seed &+ UInt64(n + 1) &* Self.golden) >> 11) * 0x1p-53
            return amplitude * (2 * u - 1)
        case .clicks:
            if n == 0 { return amplitude }
            let previous = self.cycles(at: n - 1)
            return cycles.rounded(.down) > previous.rounded(.down) ? amplitude : 0
        }
    }

    static let golden: UInt64 = 0x9E37_79B9_7F4A_7C15

    /// SplitMix64's output function, applied to a state.
    static func splitMix64(_ state: UInt64) -> UInt64 {
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }

    public func produce(_ io: inout ProcessIO, at time: Double) -> SourceStatus {
        if cancelled.load(ordering: .acquiring) || produced >= totalFrames { return .finished }
        var allowed = totalFrames - produced
        var paced = false
        switch SourcePacing(pace: pace, rate: rate, stall: stall).allowance(produced: produced, at: time) {
        case .waiting(let until):
            return .waiting(until: until)
        case .frames(let frames):
            if frames < allowed {
                allowed = frames
                paced = true
            }
        }
        let count = min(io.room(output: 0), allowed)
        let out = io.frames(output: 0)
        for frame in 0..<count {
            if amplitudeFramesLeft > 0 {
                amplitudeFramesLeft -= 1
                // Land exactly on the target, whatever the steps accumulated.
                amplitude = amplitudeFramesLeft == 0 ? amplitudeTarget : amplitude + amplitudeStep
            }
            let value = Float(sample(at: produced + frame))
            for channel in 0..<channels { out[frame * channels + channel] = value }
        }
        io.produce(count, output: 0)
        produced += count
        if produced >= totalFrames { return .finished }
        if paced && count == allowed {
            return .waiting(until: SourcePacing(pace: pace, rate: rate).nextDue(after: produced))
        }
        return .more
    }

    public func cancel() {
        cancelled.store(true, ordering: .releasing)
    }

    public func reset() {
        produced = 0
        cancelled.store(false, ordering: .releasing)
        frequency = initialFrequency
        amplitude = initialAmplitude
        amplitudeTarget = initialAmplitude
        amplitudeFramesLeft = 0
        phaseOrigin = 0
        phaseAtOrigin = 0
    }
}
