/// Interleaved frames to and from one buffer per channel (planes), a block at a time: how a
/// plugin API that takes a buffer per port (LADSPA, LV2) is fed from Sluice's interleaved
/// streams and written back into them.
public enum PlanarBlocks {
    /// Splits `frames` frames into blocks of at most `blockFrames`; for each, copies the
    /// block's input channels into `inputPlanes` (channel `c` at `inputPlanes + c *
    /// blockFrames`), calls `body` with the block's frame count, then copies `outputPlanes`
    /// (laid out alike) into `output`'s channels. `output` may be `input`: the planes stand
    /// between them. Allocates nothing. [real-time safe]
    @inlinable
    public static func run(
        _ input: UnsafePointer<Float>, channels inputChannels: Int, through inputPlanes: UnsafeMutablePointer<Float>,
        into output: UnsafeMutablePointer<Float>, channels outputChannels: Int, from outputPlanes: UnsafePointer<Float>,
        frames: Int, blockFrames: Int, _ body: (Int) -> Void
    ) {
        var start = 0
        while start < frames {
            let count = min(blockFrames, frames - start)
            for channel in 0..<inputChannels {
                let plane = inputPlanes + channel * blockFrames
                var sample = input + start * inputChannels + channel
                for frame in 0..<count {
                    plane[frame] = sample.pointee
                    sample += inputChannels
                }
            }
            body(count)
            for channel in 0..<outputChannels {
                let plane = outputPlanes + channel * blockFrames
                var sample = output + start * outputChannels + channel
                for frame in 0..<count {
                    sample.pointee = plane[frame]
                    sample += outputChannels
                }
            }
            start += count
        }
    }
}
