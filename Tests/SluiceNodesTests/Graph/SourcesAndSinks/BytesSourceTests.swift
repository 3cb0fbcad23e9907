import Foundation
import SluiceAudio
import SluiceGraph
import SluiceNodes
import SluiceTestSupport
import Testing

@Suite("bytes.source")
struct BytesSourceTests {
    static func randomBytes(_ count: Int, seed: UInt64) -> [UInt8] {
        var generator = SeededGenerator(seed: seed)
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    @Test("a regular file comes through byte for byte, at most `chunk` bytes a call")
    func regularFile() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let content = Self.randomBytes(10_000, seed: 3)
        try Data(content).write(to: URL(fileURLWithPath: folder.file("speech.raw")))

        let harness = try SourceHarness(BytesSource.type, ["path": .string(folder.file("speech.raw")), "chunk": .integer(333)])
        #expect(harness.format == .bytes(PCMFormat(.s16le, channels: 1, sampleRate: 24_000)))
        #expect(harness.node.expectedDuration == 10_000.0 / 48_000)
        #expect(harness.runToEnd(rooms: 1...1_000, seed: 9).isFinished)
        #expect(harness.bytes == content)
        #expect(harness.calls.allSatisfy { $0 <= 333 })
        #expect(harness.calls.contains(333))

        // reset reads the file again from the start.
        harness.node.reset()
        harness.step(room: 5)
        #expect(Array(harness.bytes.suffix(5)) == Array(content.prefix(5)))
    }

    @Test("format, rate and channels make the output's PCM format")
    func declaredFormat() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        try Data(count: 96_000).write(to: URL(fileURLWithPath: folder.file("s24.raw")))
        let harness = try SourceHarness(BytesSource.type, [
            "path": .string(folder.file("s24.raw")), "format": .string("s24le"), "rate": .integer(16_000), "channels": .integer(2),
        ])
        #expect(harness.format == .bytes(PCMFormat(.s24le, channels: 2, sampleRate: 16_000)))
        // 96000 bytes of 6-byte frames at 16 kHz.
        #expect(harness.node.expectedDuration == 1)
    }

    @Test("a named pipe is read until its writer closes it, and creating the node does not wait for a writer")
    func namedPipe() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let path = folder.file("pipe")
        try #require(mkfifo(path, 0o600) == 0)
        let harness = try SourceHarness(BytesSource.type, ["path": .string(path), "chunk": .integer(1_000)])
        #expect(harness.node.expectedDuration == nil)

        let content = Self.randomBytes(50_000, seed: 4)
        let writer = GraphThread(name: "fifo-writer") {
            let descriptor = open(path, O_WRONLY)
            guard descriptor >= 0 else { return }
            var offset = 0
            var generator = SeededGenerator(seed: 1)
            while offset < content.count {
                let count = min(Int.random(in: 1...7_000, using: &generator), content.count - offset)
                // SAFETY: `offset + count` ≤ `content.count`.
                let written = content.withUnsafeBytes { write(descriptor, $0.baseAddress! + offset, count) }
                guard written > 0 else { break }
                offset += written
                if offset % 3 == 0 { usleep(1_000) }
            }
            close(descriptor)
        }
        var status = SourceStatus.more
        let deadline = monotonicSeconds() + 10
        var generator = SeededGenerator(seed: 2)
        while !status.isFinished && monotonicSeconds() < deadline {
            status = harness.step(room: Int.random(in: 1...4_000, using: &generator))
            #expect(status.failure == nil)
        }
        writer.join()
        #expect(status.isFinished)
        #expect(harness.bytes == content)
    }

    @Test("cancel ends a produce waiting on a pipe with no writer", .timeLimit(.minutes(1)))
    func cancelWhileWaiting() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let path = folder.file("quiet")
        try #require(mkfifo(path, 0o600) == 0)
        let node = try #require(try makeIONode(BytesSource.type, ["path": .string(path)]) as? BytesSource)
        let harness = ThreadBox(try SourceHarness(node))
        let cancelling = Flag()
        let canceller = GraphThread(name: "canceller") {
            sleep(seconds: 0.2)
            cancelling.raise()
            node.cancel()
        }
        let status = onThread(timeout: 5) { harness.value.step(room: 100) }
        let returnedAfterCancel = cancelling.isRaised
        canceller.join()
        if status == nil {
            // Unblock it so the process does not keep a stuck thread: a writer that closes.
            let descriptor = open(path, O_WRONLY | O_NONBLOCK)
            if descriptor >= 0 { close(descriptor) }
        }
        #expect(status?.isFinished == true)
        #expect(returnedAfterCancel, "produce returned before it was cancelled")
    }

    @Test("- is standard input, whatever the graph file's folder")
    func standardInput() throws {
        let node = try makeIONode(BytesSource.type, ["path": .string("-")], baseDirectory: "/somewhere")
        let source = try #require(node as? BytesSource)
        #expect(source.path == "-")
    }

    @Test("a path that cannot be opened fails at creation, naming the path parameter")
    func badPath() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        for path in [folder.file("missing.raw"), folder.path] {
            do {
                _ = try makeIONode(BytesSource.type, ["path": .string(path)])
                Issue.record("'\(path)' was accepted")
            } catch let error as NodeCreationError {
                #expect(error.parameter == "path")
                #expect(error.message.contains(path))
            }
        }
    }

    @Test("a read error fails the stream with read-failed")
    func readError() throws {
        // Reading one's own memory at address 0 fails with EIO: a read error on demand.
        let harness = try SourceHarness(BytesSource.type, ["path": .string("/proc/self/mem")])
        let failure = try #require(harness.step(room: 16).failure)
        #expect(failure.code == "read-failed")
        #expect(failure.message.contains("/proc/self/mem"))
    }
}
