import CCurl
import Glibc
import SluicePluginKit
import Synchronization

/// One provider's connection to its server: a libcurl multi handle driven by the provider's
/// transfer thread, one request at a time (the connection is reused between utterances).
///
/// Backpressure: the body goes to the provider's `BufferedAudio`; when a chunk does not fit,
/// the write callback pauses the transfer (`CURL_WRITEFUNC_PAUSE`, so the kernel's socket
/// buffers fill and the server's sends slow down) and the loop resumes it once `read` has made
/// room. Everything but `wakeUp` runs on the transfer thread, as libcurl requires.
final class CurlSession: @unchecked Sendable {
    // SAFETY (@unchecked Sendable): `multi` and `easy` are used only on the transfer thread,
    // except `curl_multi_wakeup`, which libcurl documents as callable from any thread.

    struct Limits: Sendable {
        var connectTimeout: Double
        var stallTimeout: Double
        /// The longest a request may take, time paused for room not counted.
        var requestTimeout: Double = .infinity
    }

    /// How a request ended.
    enum Outcome {
        /// A 2xx response, all of its body delivered.
        case completed
        /// A non-2xx response with (the start of) its body.
        case refused(HTTPResponse)
        case failed(PluginError)
        case cancelled
    }

    private let multi: UnsafeMutableRawPointer
    private let easy: UnsafeMutableRawPointer
    private let limits: Limits

    init(limits: Limits) throws(PluginError) {
        _ = CurlSession.globalInit
        guard let multi = curl_multi_init(), let easy = curl_easy_init() else {
            throw PluginError(code: "curl-init", message: "libcurl could not create a transfer handle")
        }
        self.multi = multi
        self.easy = easy
        self.limits = limits
    }

    deinit {
        curl_easy_cleanup(easy)
        curl_multi_cleanup(multi)
    }

    /// libcurl's process-wide set-up, once (thread-safe since libcurl 7.84).
    private static let globalInit: Void = { curl_global_init(Int(CURL_GLOBAL_DEFAULT)) }()

    /// [any-thread] Ends the transfer thread's current wait at once.
    func wakeUp() { curl_multi_wakeup(multi) }

    /// [transfer] Waits up to `seconds` or until `wakeUp`.
    func wait(_ seconds: Double) {
        curl_multi_poll(multi, nil, 0, Int32(max(1, seconds * 1000)), nil)
    }

    // MARK: Requests

    /// [transfer] Performs `request`, streaming a 2xx body through `deliver` (which returns
    /// false when the bytes do not fit yet: the transfer pauses until `canResume` says there is
    /// room). `cancelled` is checked after every wake-up.
    func perform(
        _ request: HTTPRequest, deliver: @escaping (UnsafeRawBufferPointer) -> Bool, canResume: @escaping (Int) -> Bool,
        cancelled: () -> Bool, onPause: @escaping (Int) -> Void
    ) -> Outcome {
        let state = TransferState(deliver: deliver, onPause: onPause)
        let headers = configure(request, state: state)
        defer { curl_slist_free_all(headers) }
        curl_multi_add_handle(multi, easy)
        defer { curl_multi_remove_handle(multi, easy) }
        state.lastProgress = monotonicSeconds()
        // Time the transfer ran unpaused: the overall deadline counts only that.
        var active = 0.0
        var lastLook = state.lastProgress
        while true {
            if cancelled() { return .cancelled }
            let now = monotonicSeconds()
            if !state.paused { active += now - lastLook }
            lastLook = now
            if active > limits.requestTimeout {
                return .failed(PluginError(
                    code: "utterance-timeout",
                    message: "\(request.displayURL): the utterance took more than \(format(limits.requestTimeout)) s "
                        + "(utterance-timeout; waits for room not counted) without ending; the transfer was abandoned"))
            }
            var running: Int32 = 0
            curl_multi_perform(multi, &running)
            var remaining: Int32 = 0
            while let message = curl_multi_info_read(multi, &remaining) {
                guard message.pointee.msg == CURLMSG_DONE else { continue }
                return outcome(message.pointee.data.result, request: request, state: state)
            }
            if state.paused, canResume(state.pausedBytes) {
                state.paused = false
                state.lastProgress = monotonicSeconds()
                // CURLPAUSE_CONT is 0: unpause both directions. libcurl may deliver the held
                // chunk from inside this call (and pause again).
                curl_easy_pause(easy, 0)
                continue
            }
            if !state.paused && monotonicSeconds() - state.lastProgress > limits.stallTimeout {
                return .failed(PluginError(
                    code: "stalled",
                    message: "\(request.displayURL): no data for \(format(limits.stallTimeout)) s (stall-timeout); the transfer was abandoned"))
            }
            curl_multi_poll(multi, nil, 0, state.paused ? 200 : 50, nil)
        }
    }

    /// [transfer] Performs a small request (a quota check) and returns the whole response,
    /// at most `limit` bytes of body.
    func fetch(_ request: HTTPRequest, limit: Int = 1 << 20, cancelled: () -> Bool) throws(PluginError) -> HTTPResponse {
        var body: [UInt8] = []
        let outcome = perform(
            request,
            deliver: { bytes in
                body.append(contentsOf: bytes.prefix(max(0, limit - body.count)))
                return true
            }, canResume: { _ in true }, cancelled: cancelled, onPause: { _ in })
        switch outcome {
        case .completed: return HTTPResponse(status: 200, body: body)
        case .refused(let response): return response
        case .failed(let error): throw error
        case .cancelled: throw PluginError(code: "cancelled", message: "cancelled")
        }
    }

    private func configure(_ request: HTTPRequest, state: TransferState) -> UnsafeMutablePointer<curl_slist>? {
        curl_easy_reset(easy)
        sluice_curl_setopt_string(easy, CURLOPT_URL, request.url)
        sluice_curl_setopt_long(easy, CURLOPT_NOSIGNAL, 1)
        sluice_curl_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, Int(limits.connectTimeout * 1000))
        sluice_curl_setopt_string(easy, CURLOPT_USERAGENT, "sluice")
        switch request.method {
        case "GET": sluice_curl_setopt_long(easy, CURLOPT_HTTPGET, 1)
        case "POST": sluice_curl_setopt_long(easy, CURLOPT_POST, 1)
        default: sluice_curl_setopt_string(easy, CURLOPT_CUSTOMREQUEST, request.method)
        }
        // A POST or PUT without a body sends an empty one (never libcurl's default of
        // reading standard input).
        if let body = request.body ?? (request.method == "GET" ? nil : []) {
            sluice_curl_setopt_long(easy, CURLOPT_POSTFIELDSIZE, body.count)
            body.withUnsafeBytes { bytes in
                // SAFETY: COPYPOSTFIELDS copies the `POSTFIELDSIZE` bytes during the call.
                _ = sluice_curl_setopt_pointer(easy, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!))
            }
        }
        var list: UnsafeMutablePointer<curl_slist>?
        // No "Expect: 100-continue" round trip before a body.
        for line in request.headers.map({ "\($0.name): \($0.value)" }) + ["Expect:"] {
            list = curl_slist_append(list, line)
        }
        sluice_curl_setopt_slist(easy, CURLOPT_HTTPHEADER, list)
        sluice_curl_setopt_write_callback(easy, CURLOPT_WRITEFUNCTION, curlWrite)
        // SAFETY: `state` outlives the transfer: `perform` keeps it until the handle is removed.
        sluice_curl_setopt_pointer(easy, CURLOPT_WRITEDATA, Unmanaged.passUnretained(state).toOpaque())
        state.easy = easy
        return list
    }

    private func outcome(_ code: CURLcode, request: HTTPRequest, state: TransferState) -> Outcome {
        var status = 0
        sluice_curl_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        if code == CURLE_OK {
            return (200..<300).contains(status) ? .completed : .refused(HTTPResponse(status: status, body: state.errorBody))
        }
        if status != 0 && !(200..<300).contains(status) {
            return .refused(HTTPResponse(status: status, body: state.errorBody))
        }
        let reason = String(cString: curl_easy_strerror(code))
        if state.deliveredBytes > 0 || status != 0 {
            return .failed(PluginError(
                code: "connection-lost",
                message: "\(request.displayURL): the connection was lost after \(state.deliveredBytes) bytes of audio (\(reason))"))
        }
        return .failed(PluginError(
            code: "connect-failed", message: "\(request.displayURL): no response (\(reason))"))
    }
}

/// One transfer's state, shared with the write callback on the transfer thread.
final class TransferState {
    let deliver: (UnsafeRawBufferPointer) -> Bool
    let onPause: (Int) -> Void
    var easy: UnsafeMutableRawPointer?
    var status = 0
    var errorBody: [UInt8] = []
    var deliveredBytes = 0
    var paused = false
    /// The size of the chunk held while paused: resume once that much room is free.
    var pausedBytes = 0
    var lastProgress = 0.0

    init(deliver: @escaping (UnsafeRawBufferPointer) -> Bool, onPause: @escaping (Int) -> Void) {
        self.deliver = deliver
        self.onPause = onPause
    }

    static let errorBodyLimit = 16 << 10
}

/// libcurl's write callback: body bytes of the current response.
private func curlWrite(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?) -> Int {
    // SAFETY: `context` is the TransferState `configure` set, alive for the whole transfer.
    let state = Unmanaged<TransferState>.fromOpaque(context!).takeUnretainedValue()
    let length = size * count
    state.lastProgress = monotonicSeconds()
    if state.status == 0, let easy = state.easy {
        sluice_curl_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &state.status)
    }
    // SAFETY: libcurl passes `size × count` readable bytes, valid during the call.
    let bytes = UnsafeRawBufferPointer(start: data, count: length)
    guard (200..<300).contains(state.status) else {
        state.errorBody.append(contentsOf: bytes.prefix(max(0, TransferState.errorBodyLimit - state.errorBody.count)))
        return length
    }
    guard state.deliver(bytes) else {
        state.paused = true
        state.pausedBytes = length
        state.onPause(length)
        return Int(CURL_WRITEFUNC_PAUSE)
    }
    state.deliveredBytes += length
    return length
}

func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

func format(_ seconds: Double) -> String {
    seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
}
