import SluiceAudio
import SluiceTestSupport

/// Plays the scheduler's part for one Float32 node: feeds input in blocks of random sizes
/// into output buffers of random sizes, delivers each marker once the input has reached its
/// position, and drains the node at the end.
struct NodeDriver {
    typealias Process = (UnsafeBufferPointer<Float>, UnsafeMutableBufferPointer<Float>, inout MarkerBatch) -> (Int, Int)
    typealias Receive = (Marker, inout MarkerBatch) -> Void

    let channels: Int
    var inputBlocks: ClosedRange<Int> = 1...512
    var outputBlocks: ClosedRange<Int> = 1...512
    var seed: UInt64 = 1

    struct Result {
        var output: [Float] = []
        var markers: [Marker] = []
    }

    func run(input: [Float], markers: [Marker], process: Process, receive: Receive) -> Result {
        var generator = SeededGenerator(seed: seed)
        let totalFrames = input.count / channels
        var position = 0
        var pending = markers[...]
        var result = Result()
        var scratch = [Float](repeating: 0, count: outputBlocks.upperBound * channels)
        var stalls = 0

        func collect(_ batch: MarkerBatch) {
            for index in 0..<batch.count { result.markers.append(batch[index]) }
        }

        while true {
            while let marker = pending.first, marker.position <= position {
                var batch = MarkerBatch()
                receive(marker, &batch)
                collect(batch)
                pending = pending.dropFirst()
            }
            let limit = pending.first?.position ?? totalFrames
            let want = min(Int.random(in: inputBlocks, using: &generator), limit - position)
            let room = Int.random(in: outputBlocks, using: &generator)
            var batch = MarkerBatch()
            let (consumed, produced) = input.withUnsafeBufferPointer { whole in
                scratch.withUnsafeMutableBufferPointer { out in
                    let slice = UnsafeBufferPointer(rebasing: whole[(position * channels)..<((position + want) * channels)])
                    let target = UnsafeMutableBufferPointer(rebasing: out[0..<(room * channels)])
                    return process(slice, target, &batch)
                }
            }
            collect(batch)
            result.output += scratch[0..<(produced * channels)]
            position += consumed
            if consumed == 0 && produced == 0 {
                if position >= totalFrames && pending.isEmpty { break }
                stalls += 1
                precondition(stalls < 10_000, "the node made no progress")
            } else {
                stalls = 0
            }
        }
        return result
    }
}

/// Interleaves per-channel sample arrays.
func interleave(_ channels: [[Float]]) -> [Float] {
    var result: [Float] = []
    result.reserveCapacity(channels.count * channels[0].count)
    for frame in 0..<channels[0].count {
        for channel in channels { result.append(channel[frame]) }
    }
    return result
}

/// One channel out of interleaved samples.
func channel(_ index: Int, of samples: [Float], channels: Int) -> [Float] {
    stride(from: index, to: samples.count, by: channels).map { samples[$0] }
}
