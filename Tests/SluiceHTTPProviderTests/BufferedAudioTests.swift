import SluicePluginKit
import Testing

@testable import SluiceHTTPProvider

/// The provider's bounded FIFO: bytes in order across the wrap, boundaries exactly where the
/// utterances ended, all-or-nothing writes, the failure only after the audio before it.
@Suite struct BufferedAudioTests {
    func write(_ audio: inout BufferedAudio, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { audio.write($0) }
    }

    func read(_ audio: inout BufferedAudio, max: Int) -> (ReadResult, [UInt8]) {
        var buffer = [UInt8](repeating: 0, count: max)
        let result = buffer.withUnsafeMutableBytes { audio.read(into: $0) }
        if case .data(let count) = result { return (result, Array(buffer.prefix(count))) }
        return (result, [])
    }

    @Test("bytes come out in order across the wrap-around, in reads of any size")
    func order() {
        var audio = BufferedAudio(capacity: 10)
        var expected: [UInt8] = []
        var received: [UInt8] = []
        var next: UInt8 = 0
        for round in 0..<50 {
            let piece = (0..<(round % 7 + 1)).map { _ in next &+= 1; return next }
            if write(&audio, piece) { expected += piece } else { next &-= UInt8(piece.count) }
            let (_, bytes) = read(&audio, max: round % 4 + 1)
            received += bytes
        }
        while case (.data, let bytes) = read(&audio, max: 3) { received += bytes }
        #expect(received == expected)
        #expect(audio.peak <= 10)
    }

    @Test("a write that does not fit is refused whole and leaves the buffer as it was")
    func allOrNothing() {
        var audio = BufferedAudio(capacity: 8)
        #expect(write(&audio, [1, 2, 3, 4, 5]))
        #expect(!write(&audio, [6, 7, 8, 9]))
        #expect(audio.count == 5)
        #expect(audio.room == 3)
        #expect(read(&audio, max: 100).1 == [1, 2, 3, 4, 5])
    }

    @Test("utterance ends come exactly at their positions, empty utterances included")
    func boundaries() {
        var audio = BufferedAudio(capacity: 64)
        _ = write(&audio, [1, 2, 3])
        audio.endUtterance()
        audio.endUtterance()  // an empty utterance
        _ = write(&audio, [4])
        audio.endUtterance()
        audio.finish()
        #expect(read(&audio, max: 100).1 == [1, 2, 3])
        #expect(read(&audio, max: 100).0 == .utteranceEnd)
        #expect(read(&audio, max: 100).0 == .utteranceEnd)
        #expect(read(&audio, max: 100).1 == [4])
        #expect(read(&audio, max: 100).0 == .utteranceEnd)
        #expect(read(&audio, max: 100).0 == .end)
        #expect(read(&audio, max: 100).0 == .end)
    }

    @Test("nothing yet is 'would block'; a failure comes after the audio before it; cancel ends at once")
    func failureAndCancel() {
        var audio = BufferedAudio(capacity: 64)
        #expect(read(&audio, max: 8).0 == .wouldBlock)
        _ = write(&audio, [9, 9])
        let failure = PluginError(code: "connection-lost", message: "gone")
        audio.fail(failure)
        #expect(read(&audio, max: 8).1 == [9, 9])
        #expect(read(&audio, max: 8).0 == .failed(failure))
        var cancelled = BufferedAudio(capacity: 64)
        _ = write(&cancelled, [1])
        cancelled.cancel()
        #expect(read(&cancelled, max: 8).0 == .end)
    }
}
