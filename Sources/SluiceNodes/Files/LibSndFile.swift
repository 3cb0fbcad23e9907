import CSndFile
import Glibc

/// libsndfile, opened the first time a sound file is: its functions, looked up once.
///
/// The tool does not link libsndfile, because linking it loads it, and its codecs (FLAC,
/// Vorbis, Opus, mpg123, LAME: eight libraries) with it, into every command at exec, before
/// `main`: 0.6–0.75 ms of the dynamic loader's work in each `sluice launch` and `sluice
/// speak`, whose graphs never read a file (CHANGELOG.md, Earlier
/// measurements, "jack: Launch: less before the client opens"). `CSndFile` gives the types and constants only; the calls go through here.
struct LibSndFile: Sendable {
    typealias Handle = OpaquePointer

    let open: @convention(c) (UnsafePointer<CChar>?, Int32, UnsafeMutablePointer<SF_INFO>?) -> Handle?
    let close: @convention(c) (Handle?) -> Int32
    let strerror: @convention(c) (Handle?) -> UnsafePointer<CChar>?
    let errorNumber: @convention(c) (Int32) -> UnsafePointer<CChar>?
    let error: @convention(c) (Handle?) -> Int32
    let readFramesFloat: @convention(c) (Handle?, UnsafeMutablePointer<Float>?, sf_count_t) -> sf_count_t
    let readRaw: @convention(c) (Handle?, UnsafeMutableRawPointer?, sf_count_t) -> sf_count_t
    let writeFramesFloat: @convention(c) (Handle?, UnsafePointer<Float>?, sf_count_t) -> sf_count_t
    let seek: @convention(c) (Handle?, sf_count_t, Int32) -> sf_count_t
    let getString: @convention(c) (Handle?, Int32) -> UnsafePointer<CChar>?
    let setString: @convention(c) (Handle?, Int32, UnsafePointer<CChar>?) -> Int32
    let command: @convention(c) (Handle?, Int32, UnsafeMutableRawPointer?, Int32) -> Int32

    /// The library's soname: the ABI these signatures are libsndfile 1's.
    static let soname = "libsndfile.so.1"

    /// The functions, or why libsndfile could not be opened. Opened once, on first use (a
    /// `static let` is initialised once, whichever thread asks first).
    static let shared: Result<LibSndFile, SoundFileError> = load()

    private static func load() -> Result<LibSndFile, SoundFileError> {
        // Kept open for the life of the process: the handles it gives out are in use until
        // their files close, and unloading a codec library mid-run gains nothing.
        guard let library = dlopen(soname, RTLD_NOW | RTLD_LOCAL) else {
            let reason = dlerror().map { String(cString: $0) } ?? "unknown reason"
            return .failure(SoundFileError("cannot read or write sound files: \(reason) (Debian: apt install libsndfile1)"))
        }
        // Each function's type is the one its field spells (inferred from the initialiser).
        func function<Function>(_ name: String) throws(SoundFileError) -> Function {
            guard let symbol = dlsym(library, name) else {
                throw SoundFileError("cannot read or write sound files: \(soname) lacks \(name)")
            }
            // SAFETY: `symbol` is libsndfile 1's exported `name`, whose C signature (sndfile.h)
            // is the one `Function` spells; a C function pointer is one word, as the raw pointer.
            return unsafeBitCast(symbol, to: Function.self)
        }
        do throws(SoundFileError) {
            return .success(
                try LibSndFile(
                    open: function("sf_open"), close: function("sf_close"), strerror: function("sf_strerror"),
                    errorNumber: function("sf_error_number"), error: function("sf_error"),
                    readFramesFloat: function("sf_readf_float"), readRaw: function("sf_read_raw"),
                    writeFramesFloat: function("sf_writef_float"), seek: function("sf_seek"),
                    getString: function("sf_get_string"), setString: function("sf_set_string"),
                    command: function("sf_command")))
        } catch {
            return .failure(error)
        }
    }

    /// libsndfile's message for the last failure on `handle` (or of the last failed open).
    func lastError(_ handle: Handle?) -> String {
        strerror(handle).map { String(cString: $0) } ?? "unknown error"
    }
}
