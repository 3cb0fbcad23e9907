import SluiceAudio
import SluiceNodes
import SluiceTestSupport
import Testing

/// Every node's `process` and `receive` must run without touching the heap once the node is
/// made (docs/realtime-rules.md). Each test warms the node up, then counts allocations over
/// many blocks that cover its marker handling too.
@Suite("Nodes allocate nothing while processing", .enabled(if: AllocationCounter.testsEnabled))
struct RealtimeAllocationTests {
    static let block = 256

    /// Runs `body` once to warm up (first-use costs such as lazy metadata), then counts.
    private func allocations(_ body: () -> Void) throws -> UInt64 {
        try #require(AllocationCounter.isActive, "the allocation counter is not counting")
        body()
        return AllocationCounter.count(body)
    }

    @Test("aligner")
    func aligner() throws {
        let node = Aligner(inputFormat: PCMFormat(.s16le, channels: 2, sampleRate: 24_000))
        var bytes = [UInt8](repeating: 0x11, count: 1_001)
        var frames = [Float](repeating: 0, count: 2 * Self.block)
        let count = try bytes.withUnsafeMutableBytes { raw in
            try frames.withUnsafeMutableBufferPointer { output in
                try allocations {
                    var batch = MarkerBatch()
                    for round in 0..<200 {
                        _ = node.process(UnsafeRawBufferPointer(rebasing: raw[0..<(round % 7 + 990)]), into: output)
                        node.receive(Marker(position: round, event: .utteranceEnd(UtteranceID(1))), emitting: &batch)
                        batch.removeAll()
                    }
                }
            }
        }
        #expect(count == 0)
    }

    /// libsoxr's converters are not real-time safe (they allocate inside libsoxr), and say so;
    /// `converterSafety` below pins which ones are.
    @Test("resampler", arguments: ResamplerQuality.allCases.filter(\.isRealtimeSafe))
    func resampler(quality: ResamplerQuality) throws {
        let node = try Resampler(channels: 2, inputRate: 24_000, outputRate: 48_000, quality: quality)
        var input = Signals.noise(count: 2 * Self.block, seed: 1)
        var output = [Float](repeating: 0, count: 4 * Self.block)
        let count = try input.withUnsafeMutableBufferPointer { source in
            try output.withUnsafeMutableBufferPointer { target in
                try allocations {
                    var batch = MarkerBatch()
                    node.reset()
                    for _ in 0..<100 { _ = node.process(UnsafeBufferPointer(source), into: target) }
                    node.receive(Marker(position: 100 * Self.block, event: .endOfStream), emitting: &batch)
                    while !node.isFinished { _ = node.process(UnsafeBufferPointer(rebasing: source[0..<0]), into: target) }
                }
            }
        }
        #expect(count == 0)
    }

    @Test("crossfader")
    func crossfader() throws {
        let node = Crossfader(channels: 2, durationFrames: 480)
        var input = Signals.noise(count: 2 * Self.block, seed: 2)
        var output = [Float](repeating: 0, count: 2 * Self.block)
        let count = try input.withUnsafeMutableBufferPointer { source in
            try output.withUnsafeMutableBufferPointer { target in
                try allocations {
                    var batch = MarkerBatch()
                    for round in 0..<100 {
                        _ = node.process(UnsafeBufferPointer(source), into: target, emitting: &batch)
                        if round % 10 == 9 {
                            let id = UtteranceID(UInt32(round))
                            node.receive(Marker(position: 0, event: .utteranceEnd(id)), emitting: &batch)
                            node.receive(Marker(position: 0, event: .utteranceStart(id)), emitting: &batch)
                        }
                        batch.removeAll()
                    }
                    node.flush(emitting: &batch)
                    _ = node.process(UnsafeBufferPointer(rebasing: source[0..<0]), into: target, emitting: &batch)
                }
            }
        }
        #expect(count == 0)
    }

    @Test("fader")
    func fader() throws {
        let node = Fader(channels: 2)
        var input = Signals.noise(count: 2 * Self.block, seed: 3)
        var output = [Float](repeating: 0, count: 2 * Self.block)
        let count = try input.withUnsafeMutableBufferPointer { source in
            try output.withUnsafeMutableBufferPointer { target in
                try allocations {
                    var batch = MarkerBatch()
                    node.reset()
                    node.setGain(0.5, rampFrames: 1_000)
                    for round in 0..<100 {
                        _ = node.process(UnsafeBufferPointer(source), into: target)
                        if round % 10 == 9 {
                            node.receive(Marker(position: 0, event: .discontinuity), emitting: &batch)
                            batch.removeAll()
                        }
                    }
                    node.cancel()
                    _ = node.process(UnsafeBufferPointer(source), into: target)
                }
            }
        }
        #expect(count == 0)
    }

    @Test("mixer and channel map")
    func mixerAndChannelMap() throws {
        let mixer = Mixer(inputs: 3, channels: 2)
        let channelMap = ChannelMap.stereoToMono()
        var inputs = [Signals.noise(count: 2 * Self.block, seed: 4), Signals.noise(count: 2 * Self.block, seed: 5), Signals.noise(count: 2 * Self.block, seed: 6)]
        let pointers = (0..<3).map { index in inputs[index].withUnsafeMutableBufferPointer { UnsafePointer($0.baseAddress!) } }
        var mixed = [Float](repeating: 0, count: 2 * Self.block)
        var mono = [Float](repeating: 0, count: Self.block)
        let count = try withExtendedLifetime(inputs) {
            try pointers.withUnsafeBufferPointer { list in
                try mixed.withUnsafeMutableBufferPointer { mixedBuffer in
                    try mono.withUnsafeMutableBufferPointer { monoBuffer in
                        try allocations {
                            mixer.setGain(0.2, ofInput: 1, rampFrames: 300)
                            for _ in 0..<100 {
                                mixer.mix(list, frames: Self.block, into: mixedBuffer.baseAddress!)
                                channelMap.process(mixedBuffer.baseAddress!, frames: Self.block, into: monoBuffer.baseAddress!)
                            }
                        }
                    }
                }
            }
        }
        inputs.removeAll()
        #expect(count == 0)
    }

    /// Why soxr is flagged: it allocates when reset and on the first blocks after. Should a
    /// future libsoxr stop doing so, this fails and the flag can be reconsidered.
    @Test("soxr converters allocate, and are flagged as not real-time safe", arguments: ResamplerQuality.soxr)
    func soxrIsFlagged(quality: ResamplerQuality) throws {
        #expect(!quality.isRealtimeSafe)
        let node = try Resampler(channels: 2, inputRate: 24_000, outputRate: 48_000, quality: quality)
        var input = Signals.noise(count: 2 * Self.block, seed: 7)
        var output = [Float](repeating: 0, count: 4 * Self.block)
        let count = try input.withUnsafeMutableBufferPointer { source in
            try output.withUnsafeMutableBufferPointer { target in
                try allocations {
                    node.reset()
                    for _ in 0..<20 { _ = node.process(UnsafeBufferPointer(source), into: target) }
                }
            }
        }
        #expect(count > 0)
    }
}
