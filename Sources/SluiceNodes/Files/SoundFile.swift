import CSndFile
import Glibc
import SluiceAudio

// Sound files through libsndfile: reading any format it knows, writing WAV and FLAC, and the
// text (title, artist…) files carry beside their audio. Nothing else in Sluice calls
// libsndfile, so its conventions (normalised floats, clipping, string slots) are decided here;
// the library itself is opened on the first file (LibSndFile).

/// Why a sound file could not be read or written. The message names the file, so it can be
/// shown as it is.
public struct SoundFileError: Error, Sendable, Hashable, CustomStringConvertible {
    public let description: String

    /// libsndfile's message as a sentence of ours: "System error : No such file or
    /// directory." becomes "no such file or directory".
    static func plain(_ message: String) -> String {
        var text = Substring(message)
        for prefix in ["System error : ", "System error: "] where text.hasPrefix(prefix) { text = text.dropFirst(prefix.count) }
        while text.hasSuffix(".") || text.hasSuffix(" ") { text = text.dropLast() }
        guard let first = text.first else { return message }
        return first.lowercased() + text.dropFirst()
    }

    public init(_ description: String) {
        self.description = description
    }
}

/// The containers Sluice writes.
public enum SoundFileContainer: String, Sendable, Hashable, CaseIterable {
    case wav
    case flac

    /// The container a file name asks for: `.wav` (or `.wave`) WAV and `.flac` FLAC, in any
    /// case; a name without an extension is WAV. Nil for any other extension: Sluice writes
    /// no other format, and a WAV file named `.mp3` or `.ogg` would only mislead.
    public init?(forPath path: String) {
        guard let fileExtension = Self.fileExtension(of: path) else {
            self = .wav
            return
        }
        switch fileExtension.lowercased() {
        case "wav", "wave": self = .wav
        case "flac": self = .flac
        default: return nil
        }
    }

    /// What Sluice writes, for messages: `.wav (WAV) or .flac (FLAC)`.
    public static let writable = ".wav (WAV) or .flac (FLAC)"

    /// Why `path` is refused when `init(forPath:)` is nil.
    public static func refusal(for path: String) -> String {
        "cannot write '\(path)': Sluice writes \(writable), not .\(fileExtension(of: path) ?? "")"
    }

    /// The text after the file name's last dot (not a leading one: `.hidden` has none), or nil.
    static func fileExtension(of path: String) -> String? {
        let name = path.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? path
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return nil }
        return String(name[name.index(after: dot)...])
    }

    var code: Int32 {
        switch self {
        case .wav: Int32(SF_FORMAT_WAV)
        case .flac: Int32(SF_FORMAT_FLAC)
        }
    }

    /// FLAC stores integers only, and at most 24 bits of them.
    public func canStore(_ format: SampleFormat) -> Bool {
        switch self {
        case .wav: true
        case .flac: format == .s16le || format == .s24le
        }
    }
}

/// Text a sound file carries beside its audio: WAV's LIST/INFO chunk, FLAC's Vorbis comments.
public enum SoundFileString: String, Sendable, Hashable, CaseIterable {
    case title
    case artist
    case album
    case comment

    var code: Int32 {
        switch self {
        case .title: Int32(SF_STR_TITLE)
        case .artist: Int32(SF_STR_ARTIST)
        case .album: Int32(SF_STR_ALBUM)
        case .comment: Int32(SF_STR_COMMENT)
        }
    }
}

/// A sound file opened for reading with libsndfile.
///
/// Two ways to read, for two consumers; use one per reader:
/// - `read(into:)` hands over the bytes as the file stores them (in `format`), so the aligner
///   sees the file's own sample format (`sluice convert`).
/// - `readFrames(into:)` hands over Float32 frames, whatever the file stores (the
///   `wav.source` node).
public final class SoundFileReader {
    /// The layout `read(into:)` delivers: the file's own sample format when it is one of
    /// Sluice's (little-endian WAV or raw PCM), F32LE otherwise (FLAC, 8-bit, big-endian…).
    public let format: PCMFormat
    /// Frames in the file, or nil when libsndfile cannot tell (a pipe).
    public let frames: Int?
    public let path: String
    private let handle: OpaquePointer
    private let library: LibSndFile
    /// Whether `read(into:)` has to convert to floats because the stored encoding is not one
    /// Sluice reads as bytes.
    private let readsFloats: Bool

    public init(path: String) throws(SoundFileError) {
        let library = try LibSndFile.shared.get()
        var info = SF_INFO()
        guard let handle = library.open(path, Int32(SFM_READ), &info) else {
            throw SoundFileError("cannot open '\(path)': \(library.lastError(nil))")
        }
        guard info.channels > 0, info.samplerate > 0 else {
            _ = library.close(handle)
            throw SoundFileError("cannot read '\(path)': it declares \(info.channels) channels at \(info.samplerate) Hz")
        }
        self.handle = handle
        self.library = library
        self.path = path
        frames = info.frames == sf_count_t(Int64.max) || info.frames < 0 ? nil : Int(info.frames)
        let container = info.format & Int32(SF_FORMAT_TYPEMASK)
        let encoding = info.format & Int32(SF_FORMAT_SUBMASK)
        let littleEndian = container == Int32(SF_FORMAT_WAV) || container == Int32(SF_FORMAT_RAW)
        let stored: SampleFormat? =
            switch encoding {
            case Int32(SF_FORMAT_PCM_16): .s16le
            case Int32(SF_FORMAT_PCM_24): .s24le
            case Int32(SF_FORMAT_PCM_32): .s32le
            case Int32(SF_FORMAT_FLOAT): .f32le
            default: nil
            }
        readsFloats = !(littleEndian && stored != nil)
        format = PCMFormat(
            readsFloats ? .f32le : stored!, channels: Int(info.channels), sampleRate: Int(info.samplerate))
    }

    deinit {
        _ = library.close(handle)
    }

    public var sampleRate: Int { format.sampleRate }
    public var channels: Int { format.channels }

    /// Seconds of audio in the file, when its length is known.
    public var duration: Double? { frames.map { Double($0) / Double(format.sampleRate) } }

    /// Reads up to `buffer.count` bytes of whole frames in `format`; 0 at the end.
    public func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        guard let base = buffer.baseAddress else { return 0 }
        let wanted = buffer.count / format.bytesPerFrame
        if readsFloats {
            // SAFETY: `wanted` whole F32 frames fit in the buffer, which the caller owns; the
            // bytes are written as floats and read back as bytes, which raw memory allows.
            let frames = library.readFramesFloat(handle, base.bindMemory(to: Float.self, capacity: wanted * format.channels), sf_count_t(wanted))
            return Int(frames) * format.bytesPerFrame
        }
        return Int(library.readRaw(handle, base, sf_count_t(wanted * format.bytesPerFrame)))
    }

    /// Reads up to `buffer.count / channels` whole frames as interleaved Float32 (full scale
    /// ±1, whatever the file stores). Returns the frames read: fewer than asked only at the
    /// end of the file, 0 once there.
    public func readFrames(into buffer: UnsafeMutableBufferPointer<Float>) throws(SoundFileError) -> Int {
        guard let base = buffer.baseAddress else { return 0 }
        let wanted = buffer.count / format.channels
        guard wanted > 0 else { return 0 }
        // SAFETY: libsndfile writes at most `wanted` frames of `channels` floats, which fit
        // in `buffer`.
        let read = Int(library.readFramesFloat(handle, base, sf_count_t(wanted)))
        if read < wanted && library.error(handle) != Int32(SF_ERR_NO_ERROR) {
            throw SoundFileError("cannot read '\(path)': \(library.lastError(handle))")
        }
        return read
    }

    /// Goes back to the first frame.
    public func rewind() throws(SoundFileError) {
        guard library.seek(handle, 0, SEEK_SET) == 0 else {
            throw SoundFileError("cannot go back to the start of '\(path)': \(library.lastError(handle))")
        }
    }

    /// The file's text of this kind, or nil when it has none.
    public func string(_ kind: SoundFileString) -> String? {
        guard let text = library.getString(handle, kind.code) else { return nil }
        return String(cString: text)
    }
}

/// A sound file written with libsndfile: WAV, or FLAC.
///
/// Float samples are converted to the file's encoding by libsndfile: scaled by the integer's
/// full scale, rounded, and clipped (not wrapped) when out of range.
///
/// Writes are gathered into `bufferFrames` frames before they reach libsndfile, which turns
/// each call into a `write(2)`: a render handing over 256-frame blocks made 112 000 system
/// calls for ten minutes of audio. So a write error may surface on a later `write` or on
/// `close`, and the file on disk trails the frames written by less than the buffer.
public final class SoundFileWriter {
    /// About 256 KiB of mono float samples: large writes, small enough to keep a recording's
    /// file close behind.
    public static let bufferSamples = 65_536

    public let path: String
    public let channels: Int
    public let sampleRate: Int
    public let container: SoundFileContainer
    public let sampleFormat: SampleFormat
    /// Nil once closed.
    private var handle: OpaquePointer?
    private let library: LibSndFile
    /// Frames gathered and not yet handed to libsndfile.
    private let buffer: UnsafeMutablePointer<Float>
    private let bufferFrames: Int
    private var bufferedFrames = 0

    /// Creates (or truncates) the file.
    ///
    /// - Parameters:
    ///   - container: nil chooses by extension (`SoundFileContainer(forPath:)`), refusing
    ///     an extension Sluice does not write.
    ///   - strings: text to store with the audio (title, artist…). Stored before any audio,
    ///     because FLAC writes its comments in the header.
    public init(
        path: String, sampleRate: Int, channels: Int, sampleFormat: SampleFormat,
        container: SoundFileContainer? = nil, strings: [SoundFileString: String] = [:]
    ) throws(SoundFileError) {
        guard let container = container ?? SoundFileContainer(forPath: path) else {
            throw SoundFileError(SoundFileContainer.refusal(for: path))
        }
        guard container.canStore(sampleFormat) else {
            throw SoundFileError(
                "cannot write '\(path)': FLAC holds 16- or 24-bit integer samples, not \(sampleFormat)")
        }
        let encoding: Int32 =
            switch sampleFormat {
            case .s16le: Int32(SF_FORMAT_PCM_16)
            case .s24le: Int32(SF_FORMAT_PCM_24)
            case .s32le: Int32(SF_FORMAT_PCM_32)
            case .f32le: Int32(SF_FORMAT_FLOAT)
            }
        let library = try LibSndFile.shared.get()
        var info = SF_INFO()
        info.samplerate = Int32(sampleRate)
        info.channels = Int32(channels)
        info.format = container.code | encoding
        var status = stat()
        if stat(path, &status) == 0 && (status.st_mode & S_IFMT) == S_IFDIR {
            let inside = path.hasSuffix("/") ? path : path + "/"
            throw SoundFileError("cannot write '\(path)': it is a folder; give a file name, such as '\(inside)out.wav'")
        }
        guard let handle = library.open(path, Int32(SFM_WRITE), &info) else {
            throw SoundFileError("cannot write '\(path)': \(SoundFileError.plain(library.lastError(nil)))")
        }
        self.handle = handle
        self.library = library
        self.path = path
        self.channels = channels
        bufferFrames = max(1, Self.bufferSamples / channels)
        buffer = .allocate(capacity: bufferFrames * channels)
        self.sampleRate = sampleRate
        self.container = container
        self.sampleFormat = sampleFormat
        // Float → integer conversion clips rather than wraps.
        _ = library.command(handle, Int32(SFC_SET_CLIPPING), nil, Int32(SF_TRUE))
        // No PEAK chunk: it stores the time of writing, and renders must be byte-identical.
        _ = library.command(handle, Int32(SFC_SET_ADD_PEAK_CHUNK), nil, Int32(SF_FALSE))
        // Sorted, so the file's bytes do not depend on dictionary order.
        for (kind, text) in strings.sorted(by: { $0.key.code < $1.key.code }) {
            guard library.setString(handle, kind.code, text) == 0 else {
                let reason = library.lastError(handle)
                _ = library.close(handle)
                self.handle = nil
                throw SoundFileError("cannot store the \(kind.rawValue) in '\(path)': \(reason)")
            }
        }
    }

    deinit {
        if let handle {
            try? flush(handle)
            _ = library.close(handle)
        }
        buffer.deallocate()
    }

    /// Appends `frames` interleaved frames.
    public func write(_ samples: UnsafePointer<Float>, frames: Int) throws(SoundFileError) {
        guard let handle else { throw SoundFileError("cannot write '\(path)': the file is closed") }
        var done = 0
        while done < frames {
            if bufferedFrames == bufferFrames { try flush(handle) }
            if bufferedFrames == 0 && frames - done >= bufferFrames {
                // A write as large as the buffer goes straight through.
                // SAFETY: the caller promises `frames × channels` readable samples at `samples`.
                try writeThrough(handle, samples + done * channels, frames: frames - done)
                return
            }
            let taken = min(bufferFrames - bufferedFrames, frames - done)
            // SAFETY: `taken` frames fit after the buffered ones, and lie within the caller's.
            (buffer + bufferedFrames * channels).update(from: samples + done * channels, count: taken * channels)
            bufferedFrames += taken
            done += taken
        }
    }

    private func flush(_ handle: OpaquePointer) throws(SoundFileError) {
        guard bufferedFrames > 0 else { return }
        let frames = bufferedFrames
        bufferedFrames = 0
        try writeThrough(handle, buffer, frames: frames)
    }

    private func writeThrough(_ handle: OpaquePointer, _ samples: UnsafePointer<Float>, frames: Int) throws(SoundFileError) {
        let written = library.writeFramesFloat(handle, samples, sf_count_t(frames))
        guard written == frames else {
            throw SoundFileError("cannot write '\(path)': \(library.lastError(handle))")
        }
    }

    /// Finishes the file (header sizes, FLAC's last block) and closes it. Safe to call twice.
    public func close() throws(SoundFileError) {
        guard let handle else { return }
        self.handle = nil
        do {
            try flush(handle)
        } catch {
            _ = library.close(handle)
            throw error
        }
        let result = library.close(handle)
        guard result == 0 else {
            let reason = library.errorNumber(result).map { String(cString: $0) } ?? "error \(result)"
            throw SoundFileError("cannot finish '\(path)': \(reason)")
        }
    }
}
