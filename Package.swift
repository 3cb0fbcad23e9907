// swift-tools-version: 6.3
// Sluice: a plugin-based, real-time audio node graph framework for Linux.
//
// Layout (see docs/architecture.md):
//   Sources/   library modules, one responsibility each, plus the `sluice` tool
//   Plugins/   Sluice's own dynamic plugins (NOT SwiftPM package plugins);
//              every target there names its `path:` explicitly
//   Tests/     mirrors Sources; Tests/Support holds test-only helpers; Tests/Fixtures is a
//              package of its own: the plugins only the tests load (not products here)
//   Benchmarks/ and Fuzz/ are packages of their own (the benchmark harness, the fuzz
//              targets), so the default `swift build` builds neither
//   linker/    what release links are given: the real-time code's layout
//              (`realtimeLayoutLinkerSettings`)
import Foundation
import PackageDescription

/// System libraries found through pkg-config. Each shim folder holds a module map and a
/// header of `static inline` wrappers for what Swift cannot call directly (variadic C).
func systemLibrary(_ name: String, pkgConfig: String, apt: String) -> Target {
    .systemLibrary(name: name, pkgConfig: pkgConfig, providers: [.apt([apt])])
}

/// clang's RealtimeSanitizer runtime from the toolchain of the `swift` on PATH, linked whole
/// into the probe that runs jack.sink's callback in real-time context. Nil when the toolchain
/// has none, or in a build under another sanitizer (scripts/test sets
/// SLUICE_OTHER_SANITIZER for its ThreadSanitizer pass: two sanitizer runtimes cannot link
/// into one executable).
func realtimeSanitizerRuntime() -> String? {
    if ProcessInfo.processInfo.environment["SLUICE_OTHER_SANITIZER"] != nil { return nil }
    let fileManager = FileManager.default
    for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
        let swift = URL(fileURLWithPath: String(directory)).appendingPathComponent("swift")
        guard fileManager.fileExists(atPath: swift.path) else { continue }
        let clang = swift.resolvingSymlinksInPath().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("lib/clang")
        for version in (try? fileManager.contentsOfDirectory(atPath: clang.path)) ?? [] {
            let archive = clang.appendingPathComponent("\(version)/lib/linux/libclang_rt.rtsan-x86_64.a")
            if fileManager.fileExists(atPath: archive.path) { return archive.path }
        }
    }
    return nil
}

let rtsanRuntime = realtimeSanitizerRuntime()

/// A plugin written in Swift with SluicePluginKit. Each plugin links its own copy of the kit:
/// `-Bsymbolic` binds the copy's references to itself, so two Swift plugins loaded into one
/// process never share (and clobber) each other's kit state.
func swiftPlugin(_ name: String, path: String, dependencies: [Target.Dependency] = [], resources: [Resource]? = nil) -> Target {
    .target(
        name: name, dependencies: ["SluicePluginKit", "SluicePluginABI"] + dependencies, path: path, resources: resources,
        linkerSettings: [.unsafeFlags(["-Xlinker", "-Bsymbolic"] + staticStdlibPluginFlags)]
    )
}

/// scripts/package builds with `--static-swift-stdlib` and SLUICE_STATIC_STDLIB set, so the
/// installed files need no Swift toolchain: SwiftPM links the executables' Swift runtime
/// statically, and these flags do the same for the plugins, which are shared libraries it
/// leaves alone. A Swift plugin then carries its own private copy of the runtime (the linker
/// hides its symbols, and `-Bsymbolic` binds the plugin to them); only C types cross the plugin
/// boundary, so the host's copy and the plugin's never meet. Unset (every other build), the
/// plugins use the toolchain's shared runtime, as the tests run them.
let staticStdlib = ProcessInfo.processInfo.environment["SLUICE_STATIC_STDLIB"] != nil
let staticStdlibPluginFlags = staticStdlib ? ["-static-stdlib"] : []

/// A plugin in plain C has no Swift code, but SwiftPM links it with swiftc, which adds the
/// Swift startup object (it registers the image with the runtime) and the runtime library.
/// In the package, `-nostartfiles` leaves the startup object out and `-static-stdlib` turns
/// the library into an archive nothing is taken from: the plugin needs no Swift runtime.
let cPluginLinkerFlags: [String] = staticStdlib ? ["-nostartfiles", "-static-stdlib"] : []

/// The modules whose code runs in the JACK callback, as release builds compile them:
/// - no dynamic exclusivity checks (each ring operation on a class's stored ring was a
///   `swift_beginAccess` with a thread-local lookup in the callback); debug builds, which the
///   tests run, keep them;
/// - each function in a section of its own, so the link can lay what the callback runs out
///   together (`realtimeLayoutLinkerSettings`).
let realtimeModuleSettings: [SwiftSetting] = [
    .unsafeFlags(["-enforce-exclusivity=unchecked", "-Xfrontend", "-function-sections"], .when(configuration: .release))
]

/// The executables that host a graph's JACK client, as release builds link them: gold puts
/// the functions linker/realtime-layout.txt lists into one stretch of code, so a period
/// touches a few code pages instead of one or more per module (CHANGELOG.md, Earlier
/// measurements, "jack: Hot code together"); scripts/check-realtime-layout checks the built tool against the list.
let realtimeLayoutLinkerSettings: [LinkerSetting] = [
    .unsafeFlags(
        ["-Xlinker", "--section-ordering-file=\(Context.packageDirectory)/linker/realtime-layout.txt"],
        .when(configuration: .release))
]

let package = Package(
    name: "Sluice",
    products: [
        .library(name: "SluiceRT", targets: ["SluiceRT"]),
        .library(name: "SluiceAudio", targets: ["SluiceAudio"]),
        .library(name: "SluiceGraph", targets: ["SluiceGraph"]),
        .library(name: "SluiceNodes", targets: ["SluiceNodes"]),
        .library(name: "SluiceConfig", targets: ["SluiceConfig"]),
        .library(name: "SluiceJACK", targets: ["SluiceJACK"]),
        .library(name: "SluiceSpeech", targets: ["SluiceSpeech"]),
        .library(name: "SluiceHost", targets: ["SluiceHost"]),
        .library(name: "SluiceControlProtocol", targets: ["SluiceControlProtocol"]),
        .library(name: "SluiceControl", targets: ["SluiceControl"]),
        .library(name: "SluiceSpeechd", targets: ["SluiceSpeechd"]),
        // What a node author's tests link: a node driven by the engine's own rule.
        .library(name: "SluiceTestKit", targets: ["SluiceTestKit"]),
        .executable(name: "sluice", targets: ["sluice"]),
        // speech-dispatcher's output module for a served graph (docs/speech-dispatcher.md).
        .executable(name: "sd_sluice", targets: ["sd_sluice"]),
        // The plugin ABI (C headers), the loader, and the kit Swift plugins link.
        .library(name: "SluicePluginABI", targets: ["SluicePluginABI"]),
        .library(name: "SluicePlugins", targets: ["SluicePlugins"]),
        .library(name: "SluicePluginKit", targets: ["SluicePluginKit"]),
        // Plugins shipped with Sluice: `libsluice-<name>.so`, found beside the tool.
        .library(name: "sluice-ducker", type: .dynamic, targets: ["SluiceDucker"]),
        .library(name: "sluice-espeak", type: .dynamic, targets: ["SluiceEspeak"]),
        // More espeak-ng engines for many voices: a helper process the plugin starts, beside it.
        .executable(name: "sluice-espeak-engine", targets: ["sluice-espeak-engine"]),
        .library(name: "sluice-elevenlabs", type: .dynamic, targets: ["SluiceElevenLabs"]),
        .library(name: "sluice-openai", type: .dynamic, targets: ["SluiceOpenAI"]),
        .library(name: "sluice-http-pcm", type: .dynamic, targets: ["SluiceHTTPPCM"]),
        .library(name: "sluice-piper", type: .dynamic, targets: ["SluicePiper"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        // The WebSocket client of `elevenlabs`' stream-input transport (WSClient, on SwiftNIO).
        // Up to the next minor only: the provider runs WSCore's WebSocketHandler through its
        // `WSInternal` SPI (SluiceWebSocketProvider/StreamInputChannel.swift says why), which a
        // minor release may change.
        .package(url: "https://github.com/hummingbird-project/swift-websocket", .upToNextMinor(from: "1.6.2")),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // `/metrics` of `sluice serve --http`, in Prometheus' text format.
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ],
    targets: [
        // MARK: System-library shims
        systemLibrary("CJack", pkgConfig: "jack", apt: "libjack-jackd2-dev"),
        systemLibrary("CSampleRate", pkgConfig: "samplerate", apt: "libsamplerate0-dev"),
        systemLibrary("CCurl", pkgConfig: "libcurl", apt: "libcurl4-openssl-dev"),
        // Headers only, no pkg-config (whose `-lsndfile` every dependent would link): the
        // library is opened when a sound file is (SluiceNodes' LibSndFile).
        .systemLibrary(name: "CSndFile", providers: [.apt(["libsndfile1-dev"])]),
        systemLibrary("CSoxr", pkgConfig: "soxr", apt: "libsoxr-dev"),
        systemLibrary("CSpeexDSP", pkgConfig: "speexdsp", apt: "libspeexdsp-dev"),
        systemLibrary("CEspeak", pkgConfig: "espeak-ng", apt: "libespeak-ng-dev"),
        systemLibrary("CLiblo", pkgConfig: "liblo", apt: "liblo-dev"),
        // The LADSPA header only: each plugin library is opened with dlopen.
        .systemLibrary(name: "CLadspa", providers: [.apt(["ladspa-sdk"])]),
        systemLibrary("CEbur128", pkgConfig: "libebur128", apt: "libebur128-dev"),
        // ICU's sentence break iterator (libicu-dev): where the speech layer's chunker ends
        // sentences. A C target, not a system library, so ICU's headers stay out of Swift's
        // sight (Foundation's copy of them would clash).
        .target(name: "CICU", linkerSettings: [.linkedLibrary("icuuc")]),
        // lilv (LV2 discovery, presets, state) and the LV2 headers.
        .systemLibrary(name: "CLilv", pkgConfig: "lilv-0", providers: [.apt(["liblilv-dev", "lv2-dev"])]),

        // MARK: Library modules
        .target(name: "SluiceRT", swiftSettings: realtimeModuleSettings),
        .target(name: "SluiceAudio"),
        .target(name: "SluiceGraph", dependencies: ["SluiceRT", "SluiceAudio"], swiftSettings: realtimeModuleSettings),
        .target(
            name: "SluiceNodes",
            dependencies: ["SluiceAudio", "SluiceGraph", "SluiceRT", "CSampleRate", "CSoxr", "CSpeexDSP", "CSndFile", "CEbur128"],
            // The built-in nodes run in the JACK cycle too.
            swiftSettings: realtimeModuleSettings
        ),
        .target(
            name: "SluiceJACK",
            dependencies: ["SluiceGraph", "SluiceRT", "SluiceAudio", "CJack", .product(name: "Logging", package: "swift-log")],
            swiftSettings: realtimeModuleSettings
        ),
        .target(
            name: "SluiceConfig",
            dependencies: ["SluiceAudio", "SluiceGraph", .product(name: "Yams", package: "Yams")]
        ),
        .target(name: "SluiceTestKit", dependencies: ["SluiceGraph", "SluiceAudio"]),
        // LADSPA plugins as nodes (`ladspa`): libraries opened on first use, controls as live parameters.
        .target(
            name: "SluiceLADSPA", dependencies: ["SluiceGraph", "SluiceAudio", "SluicePlugins", "CLadspa"],
            swiftSettings: realtimeModuleSettings
        ),
        // LV2 plugins as nodes (`lv2`): lilv's world read on first use, the host features
        // (URID, options, worker, log, state), controls as live parameters by symbol.
        .target(
            name: "SluiceLV2",
            dependencies: [
                "SluiceGraph", "SluiceAudio", "SluiceRT", "SluicePlugins", "CLilv", .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: realtimeModuleSettings
        ),
        // Every node type the host can run: built-ins, JACK endpoints, plugins on the search path.
        .target(
            name: "SluiceHost", dependencies: ["SluiceGraph", "SluiceNodes", "SluiceJACK", "SluicePlugins", "SluiceLADSPA", "SluiceLV2"]),
        // The streaming speech API over a graph: the controller, text chunking, the synthesis
        // cache (SHA-256 keys via swift-crypto, entries under the XDG cache folder).
        .target(
            name: "SluiceSpeech",
            dependencies: [
                "SluiceAudio", "SluiceGraph", "SluiceNodes", "SluiceConfig", "SluiceJACK", "SluicePlugins", "SluiceHost", "CICU",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),

        // A running graph's control: the JSON-lines socket, OSC through liblo, the commands.
        // The control protocol alone: requests, replies and errors, as JSON lines and as OSC
        // messages, parsed with no graph and no I/O (what the fuzz targets take).
        .target(name: "SluiceControlProtocol", dependencies: ["SluiceAudio", "SluiceGraph", "CLiblo"]),
        .target(name: "SluiceControl", dependencies: ["SluiceControlProtocol", "SluiceAudio", "SluiceGraph", "SluiceSpeech", "CLiblo"]),

        // A run's timeline drawn as SVG: `--timeline FILE.svg`, and the page of `serve --http`.
        .target(name: "SluiceTimeline", dependencies: ["SluiceGraph"]),

        // A served graph in a browser (`serve --http`): the page, the graph's shape, commands and
        // events over a WebSocket, `/metrics`; SwiftNIO's HTTP server, no parsing of our own.
        .target(
            name: "SluiceWeb",
            dependencies: [
                "SluiceControl", "SluiceGraph", "SluiceTimeline",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            resources: [.embedInCode("Page/index.html"), .embedInCode("Page/sluice.js"), .embedInCode("Page/sluice.css")]
        ),

        // speech-dispatcher's side: SSML to text, its settings to the graph's parameters.
        .target(name: "SluiceSpeechd"),
        .executableTarget(name: "sd_sluice", dependencies: ["SluiceControl", "SluiceSpeechd"]),

        // MARK: Plugins: the C ABI (headers only), the loader, the Swift kit
        .target(name: "SluicePluginABI"),
        .target(name: "SluicePlugins", dependencies: ["SluicePluginABI", "SluiceGraph", "SluiceAudio"]),
        .target(name: "SluicePluginKit", dependencies: ["SluicePluginABI"]),
        // The engine the HTTP providers share: a request per utterance through libcurl, a
        // bounded buffer with pause/resume backpressure, retries, typed errors.
        .target(name: "SluiceHTTPProvider", dependencies: ["SluicePluginKit", "CCurl"]),
        // The engine of providers that stream text in and audio out over one WebSocket
        // (ElevenLabs' stream-input): the connection (WSClient over SwiftNIO, TLS verified),
        // the bounded buffer shared with the HTTP engine, utterance boundaries and word marks
        // from the server's alignment, typed errors.
        .target(
            name: "SluiceWebSocketProvider",
            dependencies: [
                "SluicePluginKit", "SluiceHTTPProvider", "SluiceAudio",
                .product(name: "WSClient", package: "swift-websocket"),
                .product(name: "WSCore", package: "swift-websocket"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        swiftPlugin("SluiceElevenLabs", path: "Plugins/elevenlabs", dependencies: ["SluiceHTTPProvider", "SluiceWebSocketProvider"]),
        swiftPlugin("SluiceOpenAI", path: "Plugins/openai", dependencies: ["SluiceHTTPProvider"]),
        swiftPlugin("SluiceHTTPPCM", path: "Plugins/http-pcm", dependencies: ["SluiceHTTPProvider"]),
        // The engine's Python program is compiled in (PackageResources), so the plugin is one file.
        swiftPlugin("SluicePiper", path: "Plugins/piper", resources: [.embedInCode("engine/sluice_piper_engine.py")]),
        .target(
            name: "SluiceDucker", dependencies: ["SluicePluginABI"], path: "Plugins/ducker",
            publicHeadersPath: ".", cSettings: [.unsafeFlags(["-fvisibility=hidden"])],
            linkerSettings: [.linkedLibrary("m"), .unsafeFlags(cPluginLinkerFlags)]
        ),
        // The default speech provider, in C over libespeak-ng (CEspeak brings its flags).
        .target(
            name: "SluiceEspeak", dependencies: ["SluicePluginABI", "CEspeak"], path: "Plugins/espeak",
            exclude: ["engine/main.c"], publicHeadersPath: ".", cSettings: [.unsafeFlags(["-fvisibility=hidden"])],
            linkerSettings: [.linkedLibrary("pthread"), .unsafeFlags(cPluginLinkerFlags)]
        ),
        // Its engine process (Plugins/espeak/engine/protocol.h is what the two say).
        .executableTarget(
            name: "sluice-espeak-engine", dependencies: ["CEspeak"], path: "Plugins/espeak/engine",
            exclude: ["protocol.h"]
        ),

        // MARK: The command-line tool
        .executableTarget(
            name: "sluice",
            dependencies: [
                "SluiceAudio", "SluiceNodes", "SluiceGraph", "SluiceConfig", "SluiceJACK",
                "SluicePlugins", "SluiceSpeech", "SluiceHost", "SluiceControl", "SluiceSpeechd", "SluicePluginABI", "SluiceLADSPA",
                "SluiceWeb", "SluiceTimeline",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            linkerSettings: realtimeLayoutLinkerSettings
        ),

        // MARK: Test support
        .target(name: "CAllocationCounter", path: "Tests/Support/CAllocationCounter"),
        // Two C clients that send impulses and time them: the delay a JACK client or chain adds
        // (LiveChainTests; `scripts/bench jack` builds it through its product).
        .executableTarget(
            name: "jack-impulse-probe",
            dependencies: ["CJack"],
            path: "Tests/Support/JackImpulseProbe",
            linkerSettings: [.linkedLibrary("m")]
        ),
        .target(
            name: "JackTestSupport",
            dependencies: ["CJack", "SluiceRT", "SluiceJACK", "SluiceGraph", "SluiceConfig", "SluiceNodes", "SluiceTestSupport"],
            path: "Tests/Support/JackTestSupport"
        ),
        .target(
            name: "SluiceTestSupport",
            dependencies: ["CAllocationCounter", "SluiceGraph"],
            path: "Tests/Support/SluiceTestSupport"
        ),
        .target(name: "HTTPTestSupport", path: "Tests/Support/HTTPTestSupport"),
        // A provider plugin driven through its C vtable, as a host drives it.
        .target(
            name: "ProviderTestSupport", dependencies: ["SluicePlugins", "SluicePluginABI"], path: "Tests/Support/ProviderTestSupport"),
        // A loopback server speaking ElevenLabs' stream-input protocol, on NIOWebSocket.
        .target(
            name: "WebSocketTestSupport",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
            ],
            path: "Tests/Support/WebSocketTestSupport"
        ),

        // MARK: Tests (mirror Sources)
        .testTarget(name: "SluiceRTTests", dependencies: ["SluiceRT", "SluiceTestSupport"]),
        .testTarget(name: "SluiceAudioTests", dependencies: ["SluiceAudio", "SluiceTestSupport"]),
        .testTarget(
            name: "SluiceNodesTests",
            dependencies: [
                "SluiceNodes", "SluiceAudio", "SluiceGraph", "SluiceTestSupport", "SluiceTestKit", "CSampleRate", "CSndFile",
            ],
            linkerSettings: [.linkedLibrary("sndfile")]  // the tests read what was written with libsndfile itself
        ),
        .testTarget(
            name: "SluiceGraphTests",
            dependencies: ["SluiceGraph", "SluiceNodes", "SluiceConfig", "SluiceAudio", "SluiceRT", "SluiceTestSupport"]
        ),
        .testTarget(name: "SluiceConfigTests", dependencies: ["SluiceConfig", "SluiceGraph"]),
        .testTarget(
            name: "SluiceWebTests",
            dependencies: [
                "SluiceWeb", "SluiceControl", .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"), .product(name: "NIOWebSocket", package: "swift-nio"),
            ]),
        .testTarget(name: "SluiceTimelineTests", dependencies: ["SluiceTimeline", "SluiceGraph"]),
        .testTarget(name: "SluiceControlTests", dependencies: ["SluiceControl", "SluiceGraph"]),
        .testTarget(name: "SluiceTestKitTests", dependencies: ["SluiceTestKit", "SluiceGraph", "SluiceNodes", "SluiceAudio"]),
        .testTarget(name: "SluiceHostTests", dependencies: ["SluiceHost", "SluiceGraph", "SluiceTestSupport"]),
        .testTarget(
            name: "SluiceLADSPATests",
            dependencies: [
                "SluiceLADSPA", "SluiceGraph", "SluiceNodes", "SluiceConfig", "SluiceAudio", "SluiceJACK", "CJack",
                "SluiceTestSupport", "JackTestSupport",
            ]
        ),
        .testTarget(
            name: "SluiceLV2Tests",
            dependencies: [
                "SluiceLV2", "SluiceGraph", "SluiceNodes", "SluiceConfig", "SluiceAudio", "SluiceJACK", "CJack",
                "SluiceTestSupport", "JackTestSupport",
            ]
        ),
        .testTarget(
            name: "SluiceSpeechTests",
            dependencies: [
                "SluiceSpeech", "SluiceAudio", "SluiceGraph", "SluiceNodes", "SluiceConfig", "SluicePlugins",
                "JackTestSupport", "SluiceTestSupport", .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "SluiceJACKTests",
            dependencies: [
                "SluiceJACK", "SluiceGraph", "SluiceNodes", "SluiceConfig", "SluiceRT", "CJack",
                "JackTestSupport", "SluiceTestSupport",
            ]
        ),
        .testTarget(
            name: "SystemLibraryTests",
            dependencies: ["CJack", "CSampleRate", "CCurl", "CSndFile"],
            linkerSettings: [.linkedLibrary("sndfile")]
        ),
        .testTarget(
            name: "SluiceCLITests",
            dependencies: ["CSndFile", "SluiceTestSupport", "JackTestSupport", "HTTPTestSupport"],
            linkerSettings: [.linkedLibrary("sndfile")]
        ),
        .testTarget(
            name: "SluiceHTTPProviderTests",
            dependencies: [
                "SluiceHTTPProvider", "SluicePlugins", "SluiceGraph", "SluiceNodes", "SluiceConfig", "SluiceAudio",
                "SluiceTestSupport", "HTTPTestSupport",
            ]
        ),
        .testTarget(
            name: "SluiceWebSocketProviderTests",
            dependencies: [
                "SluiceWebSocketProvider", "SluicePlugins", "SluicePluginABI", "SluiceGraph", "SluiceNodes", "SluiceConfig",
                "SluiceAudio", "SluiceSpeech", "SluiceTestSupport", "WebSocketTestSupport", "JackTestSupport", "ProviderTestSupport",
            ]
        ),
        .testTarget(name: "SluicePluginABITests", dependencies: ["SluicePluginABI", "SluiceTestSupport"]),
        .testTarget(name: "SluiceSpeechdTests", dependencies: ["SluiceSpeechd"]),
        .testTarget(name: "SluiceControlProtocolTests", dependencies: ["SluiceControlProtocol", "SluiceTestSupport"]),
        .testTarget(
            name: "SluicePluginsTests",
            dependencies: [
                "SluicePlugins", "SluicePluginABI", "SluiceGraph", "SluiceNodes", "SluiceConfig", "SluiceAudio",
                "SluiceTestSupport", "SluiceTestKit", "ProviderTestSupport",
            ]
        ),
    ]
)

if let rtsanRuntime {
    package.targets.append(.executableTarget(
        name: "RealtimeSanitizerProbe",
        dependencies: ["SluiceJACK", "SluiceNodes", "SluiceConfig", "SluiceGraph", "SluiceLV2", "SluiceLADSPA"],
        path: "Tests/RealtimeSanitizerProbe",
        linkerSettings: [.unsafeFlags([
            "-Xlinker", "--whole-archive", "-Xlinker", rtsanRuntime, "-Xlinker", "--no-whole-archive",
        ])]
    ))
}
