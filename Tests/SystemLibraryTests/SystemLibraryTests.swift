import CCurl
import CJack
import CSampleRate
import CSndFile
import Testing

/// The system-library shims link and their wrappers reach the real libraries.
@Suite("System libraries")
struct SystemLibraryTests {
    @Test("libjack's ring buffer (the benchmark's reference) moves bytes in order")
    func jackRingbuffer() throws {
        let ring = try #require(jack_ringbuffer_create(1_024))
        defer { jack_ringbuffer_free(ring) }
        let input: [CChar] = (0..<100).map { CChar(truncatingIfNeeded: $0) }
        var output = [CChar](repeating: 0, count: 100)
        #expect(jack_ringbuffer_write(ring, input, 100) == 100)
        #expect(jack_ringbuffer_read(ring, &output, 100) == 100)
        #expect(output == input)
    }

    @Test("libsamplerate names its five converters")
    func samplerateConverters() {
        let names = (0..<5).map { String(cString: src_get_name(Int32($0))) }
        #expect(names.first == "Best Sinc Interpolator")
        #expect(names.last == "Linear Interpolator")
        #expect(src_get_name(5) == nil)
    }

    @Test("libcurl's fixed-argument setopt wrappers reach curl_easy_setopt")
    func curlSetopt() throws {
        let handle = try #require(curl_easy_init())
        defer { curl_easy_cleanup(handle) }
        #expect(sluice_curl_setopt_string(handle, CURLOPT_URL, "http://127.0.0.1:1/") == CURLE_OK)
        #expect(sluice_curl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, 50) == CURLE_OK)
        // An option the library does not know is refused, so the wrapper passed it through.
        #expect(sluice_curl_setopt_long(handle, CURLoption(rawValue: 99_999), 1) != CURLE_OK)
    }

    @Test("libsndfile reports its version")
    func sndfileVersion() {
        let version = String(cString: sf_version_string())
        #expect(version.hasPrefix("libsndfile-1."))
    }
}
