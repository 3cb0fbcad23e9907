import CSndFile
import SluiceAudio

/// Why a sound file could not be read or written.
struct SoundFileError: Error, CustomStringConvertible {
    let description: String
}

/// A sound file opened for reading with libsndfile. Its bytes are read as they are stored, so
/// the aligner sees the file's own sample format.
final class SoundFileReader {
    let format: PCMFormat
    let frames: Int
    private let handle: OpaquePointer
    /// The file's samples are read as floats when its encoding is not one of Sluice's formats
    /// (FLAC, 8-bit, big-endian…); they are then handed on as F32LE bytes.
    private let readsFloats: Bool

    init(path: String) throws {
        var info = SF_INFO()
        guard let handle = sf_open(path, Int32(SFM_READ), &info) else {
            throw SoundFileError(description: "cannot open '\(path)': \(String(cString: sf_strerror(nil)))")
        }
        self.handle = handle
        frames = Int(info.frames)
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
        sf_close(handle)
    }

    /// Reads up to `buffer.count` bytes of whole frames in `format`; 0 at the end.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        guard let base = buffer.baseAddress else { return 0 }
        let wanted = buffer.count / format.bytesPerFrame
        if readsFloats {
            let frames = sf_readf_float(handle, base.assumingMemoryBound(to: Float.self), sf_count_t(wanted))
            return Int(frames) * format.bytesPerFrame
        }
        return Int(sf_read_raw(handle, base, sf_count_t(wanted * format.bytesPerFrame)))
    }
}

/// A sound file written with libsndfile: WAV, or FLAC when the path ends in `.flac`.
final class SoundFileWriter {
    let channels: Int
    private let handle: OpaquePointer

    init(path: String, sampleRate: Int, channels: Int, sampleFormat: SampleFormat) throws {
        let isFLAC = path.lowercased().hasSuffix(".flac")
        let encoding: Int32 =
            switch sampleFormat {
            case .s16le: Int32(SF_FORMAT_PCM_16)
            case .s24le: Int32(SF_FORMAT_PCM_24)
            case .s32le: Int32(SF_FORMAT_PCM_32)
            case .f32le: Int32(SF_FORMAT_FLOAT)
            }
        if isFLAC && (sampleFormat == .s32le || sampleFormat == .f32le) {
            throw SoundFileError(description: "FLAC holds 16- or 24-bit samples; use --format s16le or s24le")
        }
        var info = SF_INFO()
        info.samplerate = Int32(sampleRate)
        info.channels = Int32(channels)
        info.format = (isFLAC ? Int32(SF_FORMAT_FLAC) : Int32(SF_FORMAT_WAV)) | encoding
        guard let handle = sf_open(path, Int32(SFM_WRITE), &info) else {
            throw SoundFileError(description: "cannot write '\(path)': \(String(cString: sf_strerror(nil)))")
        }
        self.handle = handle
        self.channels = channels
        // Float → integer conversion clips rather than wraps.
        sf_command(handle, Int32(SFC_SET_CLIPPING), nil, Int32(SF_TRUE))
    }

    deinit {
        sf_close(handle)
    }

    func write(_ samples: UnsafePointer<Float>, frames: Int) throws {
        let written = sf_writef_float(handle, samples, sf_count_t(frames))
        guard written == frames else {
            throw SoundFileError(description: "write failed: \(String(cString: sf_strerror(handle)))")
        }
    }
}
