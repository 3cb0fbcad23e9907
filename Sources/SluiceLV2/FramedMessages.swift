import SluiceRT

/// Messages of any length through a byte ring: a header and a body, made visible to the
/// consumer together (one commit), so a reader never sees a header without its body.
extension RingProducer where Element == UInt8 {
    /// Writes `header` then `body` and commits them at once; false, writing nothing, when
    /// they do not fit. [real-time safe]
    mutating func pushMessage(header: UnsafeRawBufferPointer, body: UnsafeRawBufferPointer) -> Bool {
        let total = header.count + body.count
        let regions = writableRegions(maximum: total)
        guard regions.count >= total else { return false }
        Self.copy(header, into: regions, at: 0)
        Self.copy(body, into: regions, at: header.count)
        commit(total)
        return true
    }

    private static func copy(_ bytes: UnsafeRawBufferPointer, into regions: RingRegions<UInt8>, at offset: Int) {
        guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
        let inFirst = max(0, min(bytes.count, regions.first.count - offset))
        if inFirst > 0 {
            // SAFETY: the regions hold `offset + bytes.count` free slots (`pushMessage`).
            (regions.first.baseAddress! + offset).update(from: source.assumingMemoryBound(to: UInt8.self), count: inFirst)
        }
        let rest = bytes.count - inFirst
        if rest > 0 {
            let secondOffset = max(0, offset - regions.first.count)
            // SAFETY: as above; the rest lies in the second region.
            (regions.second.baseAddress! + secondOffset)
                .update(from: source.assumingMemoryBound(to: UInt8.self) + inFirst, count: rest)
        }
    }
}

extension RingConsumer where Element == UInt8 {
    /// The next message, whose header is `Header`'s bytes and whose body length `bodyLength`
    /// reads from it, with its body copied into `scratch` (cut to its size); nil when none
    /// is waiting. [real-time safe]
    mutating func popMessage<Header: BitwiseCopyable>(
        _: Header.Type, into scratch: UnsafeMutableRawBufferPointer, bodyLength: (Header) -> Int
    ) -> (header: Header, length: Int)? {
        let headerSize = MemoryLayout<Header>.size
        guard availableElements() >= headerSize else { return nil }
        let header = withUnsafeTemporaryAllocation(byteCount: headerSize, alignment: MemoryLayout<Header>.alignment) { raw in
            _ = pop(into: raw.bindMemory(to: UInt8.self))
            return raw.load(as: Header.self)
        }
        let length = bodyLength(header)
        let kept = min(length, scratch.count)
        _ = pop(into: UnsafeMutableBufferPointer(start: scratch.baseAddress!.assumingMemoryBound(to: UInt8.self), count: kept))
        _ = skip(length - kept)
        return (header, kept)
    }
}
