import Glibc
import SluiceAudio
import SluiceGraph
import Synchronization

/// The `bytes.source` node: raw PCM bytes from a file, a named pipe or standard input, as a
/// speech provider would deliver them. Link it to an `aligner` to get frames.
///
/// It reads with POSIX `read` straight into its output, at most `chunk` bytes a call (64 KiB by
/// default: fewer system calls, and a pipe's read returns what it has anyway), so it holds no
/// audio of its own and chunk boundaries may split frames (the aligner's job). On a pipe or
/// terminal it waits for data with `poll` in 100 ms slices, so `cancel()` ends a wait on a
/// quiet pipe within 100 ms; a regular file is read without polling.
///
/// Named paths are opened non-blocking, so a named pipe with no writer yet does not block the
/// graph's construction; the source then waits (on its own thread) for a writer, and ends
/// when the last writer closes. Standard input is used as it is, flags untouched, because its
/// open file is shared with the shell.
///
/// `expectedDuration` is the bytes left in a regular file (standard input redirected from one
/// included) over the bytes per second; nil for pipes and terminals, whose length is unknown.
public final class BytesSource: SourceNode, @unchecked Sendable {
    // SAFETY (@unchecked Sendable): `cancelled` is atomic; the descriptor is read by the
    // source thread during the run and by the control thread only before or after it.

    public static let type = NodeType(
        NodeDescriptor(
            typeName: "bytes.source", kind: .source,
            summary: "Reads raw PCM bytes from a file, a named pipe or standard input (-).",
            outputs: [PortDescriptor("out", .bytes, summary: "Bytes in `format` at `rate`, `channels` channels")],
            parameters: [
                ParameterDescriptor(
                    "path", .path, default: nil, required: true,
                    summary: "The file or named pipe to read; - reads standard input."),
                ParameterDescriptor(
                    "format", .choice(SampleFormat.allCases.map(\.rawValue)), default: .string("s16le"),
                    summary: "How the samples are stored."),
                ParameterDescriptor(
                    "rate", .integer(1_000...384_000), default: .integer(24_000), unit: "Hz",
                    summary: "The rate the bytes were recorded at."),
                ParameterDescriptor(
                    "channels", .integer(1...8), default: .integer(1),
                    summary: "Interleaved channels in the bytes."),
                ParameterDescriptor(
                    "chunk", .integer(1...65_536), default: .integer(65_536), unit: "bytes",
                    summary: "Most bytes one read takes."),
            ])
    ) { parameters in
        guard let path = parameters.path("path") else {
            throw NodeCreationError("'bytes.source' needs a path", parameter: "path")
        }
        let name = parameters.string("format") ?? "s16le"
        guard let sampleFormat = SampleFormat(name: name) else {
            throw NodeCreationError("unknown sample format '\(name)'", parameter: "format")
        }
        let format = PCMFormat(sampleFormat, channels: parameters.integer("channels"), sampleRate: parameters.integer("rate"))
        return try BytesSource(path: path, format: format, chunk: parameters.integer("chunk"))
    }

    public let path: String
    public let format: PCMFormat
    public let chunk: Int
    public let expectedDuration: Double?
    private let descriptor: Int32
    private let ownsDescriptor: Bool
    /// Where a regular file's bytes start (standard input may be a file already read into).
    private let startOffset: Int
    private let isRegularFile: Bool
    private let cancelled = Atomic<Bool>(false)

    /// Opens `path` (`-` for standard input).
    ///
    /// - Throws: `NodeCreationError` naming the `path` parameter when it cannot be opened or
    ///   is a folder.
    public init(path: String, format: PCMFormat, chunk: Int = 65_536) throws(NodeCreationError) {
        precondition(chunk > 0, "a read needs room for at least one byte")
        self.path = path
        self.format = format
        self.chunk = chunk
        if path == "-" {
            descriptor = STDIN_FILENO
            ownsDescriptor = false
        } else {
            let opened = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
            guard opened >= 0 else {
                throw NodeCreationError(
                    "cannot open '\(path)': \(String(cString: strerror(errno)))", parameter: "path")
            }
            descriptor = opened
            ownsDescriptor = true
        }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            let reason = String(cString: strerror(errno))
            if ownsDescriptor { close(descriptor) }
            throw NodeCreationError("cannot read '\(path)': \(reason)", parameter: "path")
        }
        let kind = status.st_mode & S_IFMT
        if kind == S_IFDIR {
            if ownsDescriptor { close(descriptor) }
            throw NodeCreationError("cannot read '\(path)': it is a folder", parameter: "path")
        }
        isRegularFile = kind == S_IFREG
        if isRegularFile {
            startOffset = max(0, Int(lseek(descriptor, 0, SEEK_CUR)))
            expectedDuration = Double(max(0, Int(status.st_size) - startOffset)) / Double(format.bytesPerFrame * format.sampleRate)
        } else {
            startOffset = 0
            expectedDuration = nil
        }
    }

    deinit {
        if ownsDescriptor { close(descriptor) }
    }

    public func outputFormats(for inputs: [StreamFormat], context: FormatContext) throws(FormatMismatch) -> [StreamFormat] {
        [.bytes(format)]
    }

    public func produce(_ io: inout ProcessIO, at time: Double) -> SourceStatus {
        let out = io.bytes(output: 0)
        let wanted = min(out.count, chunk)
        guard let base = out.baseAddress, wanted > 0 else { return .more }
        while true {
            if cancelled.load(ordering: .acquiring) { return .finished }
            // A regular file is always ready: a poll per read would only cost a system call.
            if isRegularFile {
                // SAFETY: `wanted` ≤ the output room, which starts at `base`.
                let count = read(descriptor, base, wanted)
                if count > 0 {
                    io.produce(count, output: 0)
                    return .more
                }
                if count == 0 { return .finished }
                if errno == EINTR || errno == EAGAIN { continue }
                return failure("cannot read '\(path)'")
            }
            var request = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&request, 1, 100)
            if ready == 0 { continue }
            if ready < 0 {
                if errno == EINTR { continue }
                return failure("cannot wait for '\(path)'")
            }
            // SAFETY: `wanted` ≤ the output room, which starts at `base`.
            let count = read(descriptor, base, wanted)
            if count > 0 {
                io.produce(count, output: 0)
                return .more
            }
            if count == 0 { return .finished }
            if errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK { continue }
            return failure("cannot read '\(path)'")
        }
    }

    private func failure(_ what: String) -> SourceStatus {
        .failed(SourceFailure(code: "read-failed", message: "\(what): \(String(cString: strerror(errno)))"))
    }

    public func cancel() {
        cancelled.store(true, ordering: .releasing)
    }

    /// A regular file starts again from its first byte; a pipe cannot.
    public func reset() {
        if isRegularFile { lseek(descriptor, off_t(startOffset), SEEK_SET) }
        cancelled.store(false, ordering: .releasing)
    }
}
