import SluicePluginKit

/// The audio a provider holds between the network and the host's `read`: a bounded FIFO of
/// bytes with utterance boundaries, then the stream's end or failure. Not thread-safe: the
/// provider keeps it behind a `Mutex` (the transfer thread writes, the host's worker reads).
/// Shared by the HTTP engine and the WebSocket one (SluiceWebSocketProvider).
public struct BufferedAudio: Sendable {
    private var storage: [UInt8]
    private var head = 0
    public private(set) var count = 0
    /// Bytes ever written and read: boundaries are positions in the written stream.
    private var writtenTotal = 0
    private var readTotal = 0
    /// Written positions where an utterance ends, in order.
    private var boundaries: [Int] = []
    private var nextBoundary = 0
    /// Set once every utterance is written (after `end_text`).
    private var finished = false
    /// The stream's failure, returned once the bytes before it are read.
    private var failure: PluginError?
    private var cancelled = false
    public private(set) var peak = 0

    public init(capacity: Int) {
        storage = [UInt8](repeating: 0, count: capacity)
    }

    public var capacity: Int { storage.count }
    public var room: Int { storage.count - count }

    /// [transfer] Appends all of `bytes`, or nothing when they do not fit.
    public mutating func write(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count <= room else { return false }
        var tail = (head + count) % storage.count
        var offset = 0
        while offset < bytes.count {
            let run = min(bytes.count - offset, storage.count - tail)
            storage.withUnsafeMutableBytes { target in
                // SAFETY: `run` bytes fit from `tail` to the end of storage and from `offset`
                // to the end of `bytes` (both bounded by the min above).
                target.baseAddress!.advanced(by: tail).copyMemory(from: bytes.baseAddress!.advanced(by: offset), byteCount: run)
            }
            offset += run
            tail = (tail + run) % storage.count
        }
        count += bytes.count
        writtenTotal += bytes.count
        peak = max(peak, count)
        return true
    }

    /// [transfer] The current utterance's audio is complete.
    public mutating func endUtterance() {
        boundaries.append(writtenTotal)
    }

    /// [transfer] No more audio: `read` ends once everything is read.
    public mutating func finish() { finished = true }

    /// [transfer] The stream failed: `read` reports `error` once the audio before it is read.
    public mutating func fail(_ error: PluginError) {
        if failure == nil { failure = error }
    }

    /// [any-thread] Everything still held is dropped: `read` ends.
    public mutating func cancel() { cancelled = true }

    /// [audio-thread] The next piece of the stream, as the provider ABI's `read` returns it.
    public mutating func read(into buffer: UnsafeMutableRawBufferPointer) -> ReadResult {
        if cancelled { return .end }
        let boundary = nextBoundary < boundaries.count ? boundaries[nextBoundary] : Int.max
        if boundary == readTotal {
            nextBoundary += 1
            if nextBoundary == boundaries.count {
                boundaries.removeAll(keepingCapacity: true)
                nextBoundary = 0
            }
            return .utteranceEnd
        }
        if count > 0 && buffer.count > 0 {
            let total = min(buffer.count, count, boundary - readTotal)
            var offset = 0
            while offset < total {
                let run = min(total - offset, storage.count - head)
                storage.withUnsafeBytes { source in
                    // SAFETY: `run` bytes lie in storage from `head` and fit in `buffer` from
                    // `offset` (both bounded by the mins above).
                    buffer.baseAddress!.advanced(by: offset).copyMemory(from: source.baseAddress!.advanced(by: head), byteCount: run)
                }
                offset += run
                head = (head + run) % storage.count
            }
            count -= total
            readTotal += total
            return .data(total)
        }
        if count > 0 { return .wouldBlock }
        if let failure { return .failed(failure) }
        return finished ? .end : .wouldBlock
    }
}
