import Foundation
import Glibc
import SluiceHost
import SluicePluginABI

/// What `sluice --version` prints: Sluice's version, the plugin ABI it speaks, and each system
/// library Sluice uses as this process finds it (dlopen by its Debian soname, the same search
/// the dynamic linker does): the version the library reports where it has a call for it, and
/// the file it was found in. The libraries only plugins use (espeak-ng, libcurl) are looked up
/// the same way without being required, so a missing one says so instead of failing.
struct VersionReport {
    struct Library {
        /// The name people know it by (`libjack`).
        var name: String
        /// What uses it, when not the tool itself.
        var usedBy: String?
        /// Found: the version it reports (nil when it has no call for it) and its file.
        var found: (version: String?, path: String)?
    }

    var version = SluiceVersion.string
    var abiVersion = Int(SLUICE_ABI_VERSION)
    var abiMinimum = Int(SLUICE_ABI_VERSION_MIN)
    var libraries: [Library]

    /// [control-thread] Looks every library up.
    static func current() -> VersionReport {
        VersionReport(libraries: probes.map { $0.look() })
    }

    var text: String {
        var lines = [
            "sluice \(version)",
            "plugin ABI \(abiVersion) (loads plugins built for versions \(abiMinimum)…\(abiVersion))",
            "libraries:",
        ]
        let nameWidth = libraries.map(\.name.count).max() ?? 0
        let versions = libraries.map { library in
            guard let found = library.found else { return "not found" }
            return found.version ?? "(no version call)"
        }
        let versionWidth = versions.map(\.count).max() ?? 0
        for (library, version) in zip(libraries, versions) {
            var line = "  " + library.name.padding(toLength: nameWidth, withPad: " ", startingAt: 0) + "  "
            line += version.padding(toLength: versionWidth, withPad: " ", startingAt: 0)
            if let found = library.found { line += "  " + found.path }
            if let usedBy = library.usedBy { line += "  (\(library.found == nil ? "needed by" : "for") \(usedBy))" }
            while line.hasSuffix(" ") { line.removeLast() }
            lines.append(line)
        }
        return lines.joined(separator: "\n") + "\n"
    }

    // MARK: Looking libraries up

    /// A library, where to find it, and how to ask its version.
    struct Probe: Sendable {
        var name: String
        var soname: String
        /// A function the library exports: its address names the file it came from.
        var symbol: String
        var usedBy: String?
        /// Reads the version through `symbol`'s address, or nil when the library has no call.
        var version: @Sendable (UnsafeMutableRawPointer) -> String?

        func look() -> Library {
            var library = Library(name: name, usedBy: usedBy)
            // Already loaded (linked) or loadable; never closed, as the linker would keep it.
            guard let handle = dlopen(soname, RTLD_LAZY | RTLD_LOCAL), let address = dlsym(handle, symbol) else { return library }
            library.found = (version(address).map(Self.trimmed), Self.file(holding: address) ?? soname)
            return library
        }

        /// The file mapped at `address`, from /proc/self/maps (glibc's dladdr is not visible
        /// to Swift): the library's real file (`libjack.so.0.1.0`), whose name carries the full
        /// number where the library has no call for it.
        static func file(holding address: UnsafeMutableRawPointer) -> String? {
            // Read with stdio: /proc files report a size of 0, which Foundation's readers trust.
            guard let stream = fopen("/proc/self/maps", "r") else { return nil }
            defer { fclose(stream) }
            let target = UInt(bitPattern: address)
            var buffer: UnsafeMutablePointer<CChar>?
            var capacity = 0
            defer { free(buffer) }
            while getline(&buffer, &capacity, stream) > 0, let buffer {
                let line = String(cString: buffer).trimmingCharacters(in: .newlines)
                // start-end perms offset dev inode path
                let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
                let path = fields.count == 6 ? fields[5].trimmingCharacters(in: .whitespaces) : ""
                guard path.hasPrefix("/") else { continue }
                let range = fields[0].split(separator: "-")
                guard range.count == 2, let start = UInt(range[0], radix: 16), let end = UInt(range[1], radix: 16),
                      (start..<end).contains(target) else { continue }
                return path
            }
            return nil
        }

        static func trimmed(_ text: String) -> String {
            text.trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }

    /// A C string a `const char *(void)` function returns.
    static func string(from address: UnsafeMutableRawPointer) -> String? {
        typealias Function = @convention(c) () -> UnsafePointer<CChar>?
        // SAFETY: only used with functions declared `const char *f(void)` in their headers
        // (named in `probes`), which return a static string.
        let function = unsafeBitCast(address, to: Function.self)
        return function().map { String(cString: $0) }
    }

    /// The part of `text` after `prefix` up to the first space: `libsoxr-0.1.3` → `0.1.3`.
    static func word(after prefix: String, in text: String?) -> String? {
        guard let text, let range = text.range(of: prefix) else { return text }
        return String(text[range.upperBound...].prefix { !$0.isWhitespace })
    }

    static let probes: [Probe] = [
        Probe(name: "libjack", soname: "libjack.so.0", symbol: "jack_get_version_string") { string(from: $0) },
        Probe(name: "libsndfile", soname: "libsndfile.so.1", symbol: "sf_version_string") {
            word(after: "libsndfile-", in: string(from: $0))
        },
        Probe(name: "libsamplerate", soname: "libsamplerate.so.0", symbol: "src_get_version") {
            word(after: "libsamplerate-", in: string(from: $0))
        },
        Probe(name: "libsoxr", soname: "libsoxr.so.0", symbol: "soxr_version") { word(after: "libsoxr-", in: string(from: $0)) },
        Probe(name: "libspeexdsp", soname: "libspeexdsp.so.1", symbol: "speex_resampler_init") { _ in nil },
        Probe(name: "liblo", soname: "liblo.so.7", symbol: "lo_version") { address in
            typealias Function = @convention(c) (
                UnsafeMutablePointer<CChar>?, Int32, UnsafeMutablePointer<Int32>?, UnsafeMutablePointer<Int32>?,
                UnsafeMutablePointer<CChar>?, Int32, UnsafeMutablePointer<Int32>?, UnsafeMutablePointer<Int32>?,
                UnsafeMutablePointer<Int32>?
            ) -> Void
            // SAFETY: lo_version(char *verstr, int verstr_size, int *major, int *minor, char *extra,
            // int extra_size, int *lt_major, int *lt_minor, int *lt_bug) as lo.h declares it; it
            // writes at most `verstr_size` bytes, NUL included, and skips the NULL pointers.
            let function = unsafeBitCast(address, to: Function.self)
            var buffer = [CChar](repeating: 0, count: 64)
            function(&buffer, Int32(buffer.count), nil, nil, nil, 0, nil, nil, nil)
            return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        },
        Probe(name: "espeak-ng", soname: "libespeak-ng.so.1", symbol: "espeak_Info", usedBy: "the espeak plugin") { address in
            typealias Function = @convention(c) (UnsafeMutablePointer<UnsafePointer<CChar>?>?) -> UnsafePointer<CChar>?
            // SAFETY: espeak_Info(const char **path_data) as speak_lib.h declares it: returns the
            // static version string; NULL path_data is allowed and it needs no espeak_Initialize.
            let function = unsafeBitCast(address, to: Function.self)
            return function(nil).map { String(cString: $0) }
        },
        Probe(name: "libcurl", soname: "libcurl.so.4", symbol: "curl_version", usedBy: "the HTTP providers") {
            word(after: "libcurl/", in: string(from: $0))
        },
    ]
}
