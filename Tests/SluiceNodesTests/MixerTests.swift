import SluiceNodes
import SluiceTestSupport
import Testing

@Suite("Mixer")
struct MixerTests {
    /// Mixes `inputs`, each held in memory of its own for the call: a pointer taken inside
    /// `withUnsafeBufferPointer` is valid only in that closure, so the inputs are copied into
    /// buffers this function owns instead.
    private func mix(_ mixer: Mixer, _ inputs: [[Float]], frames: Int) -> [Float] {
        var output = [Float](repeating: .nan, count: frames * mixer.channels)
        let buffers = inputs.map { input in
            let buffer = UnsafeMutableBufferPointer<Float>.allocate(capacity: input.count)
            _ = buffer.initialize(from: input)
            return buffer
        }
        defer { for buffer in buffers { buffer.deallocate() } }
        let pointers = buffers.map { UnsafePointer<Float>($0.baseAddress!) }
        pointers.withUnsafeBufferPointer { list in
            output.withUnsafeMutableBufferPointer { mixer.mix(list, frames: frames, into: $0.baseAddress!) }
        }
        return output
    }

    @Test("sums inputs with their gains")
    func weightedSum() {
        let mixer = Mixer(inputs: 2, channels: 2)
        mixer.setGain(0.5, ofInput: 0)
        mixer.setGain(0.25, ofInput: 1)
        let a = Signals.noise(count: 2_000, seed: 1)
        let b = Signals.noise(count: 2_000, seed: 2)
        let output = mix(mixer, [a, b], frames: 1_000)
        let expected = zip(a, b).map { 0 + $0 * 0.5 + $1 * 0.25 }
        #expect(firstDifference(output, expected) == nil)
    }

    @Test("a gain change ramps over the frames asked for")
    func ramp() {
        let mixer = Mixer(inputs: 1, channels: 1)
        mixer.setGain(0, ofInput: 0, rampFrames: 100)
        let output = mix(mixer, [[Float](repeating: 1, count: 200)], frames: 200)
        #expect(abs(output[0] - 0.99) < 1e-6)
        #expect(abs(output[49] - 0.5) < 1e-5)
        #expect(output[99] == 0)
        #expect(output[100...].allSatisfy { $0 == 0 })
        #expect(mixer.gain(ofInput: 0) == 0)
    }
}

@Suite("Channel map")
struct ChannelMapTests {
    private func map(_ channelMap: ChannelMap, _ input: [Float]) -> [Float] {
        let frames = input.count / channelMap.inputChannels
        var output = [Float](repeating: .nan, count: frames * channelMap.outputChannels)
        input.withUnsafeBufferPointer { source in
            output.withUnsafeMutableBufferPointer { channelMap.process(source.baseAddress!, frames: frames, into: $0.baseAddress!) }
        }
        return output
    }

    @Test("mono to stereo copies exactly")
    func monoToStereo() {
        let input = Signals.noise(count: 1_000, seed: 1)
        #expect(firstDifference(map(.monoToStereo(), input), interleave([input, input])) == nil)
    }

    @Test("stereo to mono averages")
    func stereoToMono() {
        let left = Signals.noise(count: 1_000, seed: 1)
        let right = Signals.noise(count: 1_000, seed: 2)
        let expected = zip(left, right).map { 0 + 0.5 * $0 + 0.5 * $1 }
        #expect(firstDifference(map(.stereoToMono(), interleave([left, right])), expected) == nil)
    }

    @Test("a routing list swaps, duplicates and silences channels")
    func routing() throws {
        let left = Signals.noise(count: 500, seed: 1)
        let right = Signals.noise(count: 500, seed: 2)
        let silence = [Float](repeating: 0, count: 500)
        let channelMap = try ChannelMap(inputChannels: 2, routing: [1, 0, nil, 0])
        #expect(firstDifference(map(channelMap, interleave([left, right])), interleave([right, left, silence, left])) == nil)
    }

    @Test("a matrix mixes")
    func matrix() throws {
        let channelMap = try ChannelMap(matrix: [[1, 0.5], [0, -1]])
        #expect(map(channelMap, [0.5, 0.25, -1, 1]) == [0.625, -0.25, -0.5, -1])
    }

    @Test("bad maps are refused with the reason")
    func errors() {
        #expect(throws: ChannelMapError.ragged(row: 1, expected: 2, found: 1)) { try ChannelMap(matrix: [[1, 0], [1]]) }
        #expect(throws: ChannelMapError.noChannels) { try ChannelMap(matrix: []) }
        #expect(throws: ChannelMapError.sourceOutOfRange(output: 1, source: 2, inputChannels: 2)) {
            try ChannelMap(inputChannels: 2, routing: [0, 2])
        }
        #expect(ChannelMapError.sourceOutOfRange(output: 1, source: 2, inputChannels: 2).description
            == "output channel 1 takes input channel 2, but the input has channels 0..<2")
    }
}
