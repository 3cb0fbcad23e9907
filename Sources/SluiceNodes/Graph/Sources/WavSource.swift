import SluiceAudio
import SluiceGraph
import Synchronization

/// The `wav.source` node: a sound file (any format libsndfile reads — WAV, FLAC, Ogg…) as
/// Float32 frames at the file's own rate and channel count. Integer files are scaled to full
/// scale ±1 by libsndfile (a 16-bit code `c` becomes `c / 32768`).
///
/// The file is opened when the node is created, so a missing or unreadable file is reported at
/// its line in the graph file, and the output format is known before formats are negotiated.
/// Pacing follows `SourcePacing` (no stall: a file has no reason to).
public final class WavSource: SourceNode, @unchecked Sendable {
    // SAFETY (@unchecked Sendable): `cancelled` is atomic; the reader and counters are
    // touched by the control thread before the run and by the source thread during it.

    public static let type = NodeType(
        NodeDescriptor(
            typeName: "wav.source", kind: .source,
            summary: "Plays a sound file (WAV, FLAC, anything libsndfile reads) as Float32 frames.",
            outputs: [PortDescriptor("out", .frames, summary: "Float32 frames at the file's rate and channels")],
            parameters: [
                ParameterDescriptor(
                    "path", .path, default: nil, required: true,
                    summary: "The file to read; relative paths start at the graph file's folder."),
                SourceParameters.pace,
            ])
    ) { parameters in
        guard let path = parameters.path("path") else {
            throw NodeCreationError("'wav.source' needs a path", parameter: "path")
        }
        do throws(SoundFileError) {
            return try WavSource(path: path, pace: parameters.double("pace"))
        } catch {
            throw NodeCreationError(
                error.description, fix: "check that the file exists and is a sound file", parameter: "path")
        }
    }

    public let path: String
    public let pace: Double
    private let reader: SoundFileReader
    private var produced = 0
    private var rewindNeeded = false
    private let cancelled = Atomic<Bool>(false)

    public init(path: String, pace: Double = 0) throws(SoundFileError) {
        self.path = path
        self.pace = pace
        reader = try SoundFileReader(path: path)
    }

    public var sampleRate: Int { reader.sampleRate }
    public var channels: Int { reader.channels }
    public var expectedDuration: Double? { reader.duration }

    public func outputFormats(for inputs: [StreamFormat], context: FormatContext) throws(FormatMismatch) -> [StreamFormat] {
        [.frames(rate: reader.sampleRate, channels: reader.channels)]
    }

    public func produce(_ io: inout ProcessIO, at time: Double) -> SourceStatus {
        if cancelled.load(ordering: .acquiring) { return .finished }
        do throws(SoundFileError) {
            if rewindNeeded {
                try reader.rewind()
                rewindNeeded = false
            }
            var room = io.room(output: 0)
            var paced = false
            switch SourcePacing(pace: pace, rate: reader.sampleRate).allowance(produced: produced, at: time) {
            case .waiting(let until):
                return .waiting(until: until)
            case .frames(let allowed):
                if allowed < room {
                    room = allowed
                    paced = true
                }
            }
            let out = io.frames(output: 0)
            // SAFETY: `room` never exceeds the room offered, so the slice is inside `out`.
            let read = try reader.readFrames(into: UnsafeMutableBufferPointer(rebasing: out[0..<(room * reader.channels)]))
            io.produce(read, output: 0)
            produced += read
            if read < room { return .finished }
            if let frames = reader.frames, produced >= frames { return .finished }
            if paced { return .waiting(until: SourcePacing(pace: pace, rate: reader.sampleRate).nextDue(after: produced)) }
            return .more
        } catch {
            return .failed(SourceFailure(code: "read-failed", message: error.description))
        }
    }

    public func cancel() {
        cancelled.store(true, ordering: .releasing)
    }

    /// Back to the first frame; the seek happens on the next `produce`, on the source thread.
    public func reset() {
        produced = 0
        rewindNeeded = true
        cancelled.store(false, ordering: .releasing)
    }
}
