// swift-tools-version: 6.3
// The benchmark harness (scripts/bench, docs/benchmarks.md): a package of its own, so the main
// package's `swift build` never builds it. It depends on the main package by path; scripts/bench
// builds the tool, the plugins and jack-impulse-probe through this package too, so every
// program a suite runs lands in one folder, beside the harness, in release mode. The test
// helpers it shares with the tests are not products of the main package (users see only what
// they can use): it builds them itself, from the sources TestSupport/ links to.
import Foundation
import PackageDescription

/// A path dependency is known by its folder's name: the checkout's, whatever it is called.
let sluice = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().lastPathComponent

let package = Package(
    name: "SluiceBenchmarks",
    products: [
        // Preloaded into `sluice run` and `jalv` by `scripts/bench plugins`: times any JACK
        // client's process callback the same way.
        .library(name: "jack-callback-timer", type: .dynamic, targets: ["JackCallbackTimer"])
    ],
    dependencies: [
        .package(path: ".."),
        // WebSocketTestSupport's server (the same requirement as the main package's).
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        // The sizes suite composes the same text with Yams (libyaml) as the reference.
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
    ],
    targets: [
        // The C modules the suites compare against (CJack, CSampleRate, CSoxr, CSpeexDSP,
        // CSndFile) come with SluiceJACK and SluiceNodes.
        .executableTarget(
            name: "SluiceBenchmarks",
            dependencies: [
                .product(name: "SluiceRT", package: sluice),
                .product(name: "SluiceAudio", package: sluice),
                .product(name: "SluiceGraph", package: sluice),
                .product(name: "SluiceNodes", package: sluice),
                .product(name: "SluiceJACK", package: sluice),
                .product(name: "SluiceConfig", package: sluice),
                .product(name: "SluicePlugins", package: sluice),
                "SluiceTestSupport", "HTTPTestSupport", "WebSocketTestSupport",
                .product(name: "Yams", package: "Yams"),
            ],
            path: "SluiceBenchmarks",
            // The render suite writes its reference file with libsndfile itself; SluiceNodes
            // opens the library on use and does not link it.
            linkerSettings: [.linkedLibrary("sndfile")]
        ),
        // The tests' helpers (Tests/Support, through TestSupport/'s links).
        .target(name: "CAllocationCounter", path: "TestSupport/CAllocationCounter"),
        .target(
            name: "SluiceTestSupport",
            dependencies: ["CAllocationCounter", .product(name: "SluiceGraph", package: sluice)],
            path: "TestSupport/SluiceTestSupport"
        ),
        .target(name: "HTTPTestSupport", path: "TestSupport/HTTPTestSupport"),
        .target(
            name: "WebSocketTestSupport",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
            ],
            path: "TestSupport/WebSocketTestSupport"
        ),
        // Two C clients that time impulses: the delay a chain adds.
        .executableTarget(
            name: "jack-impulse-probe",
            path: "TestSupport/JackImpulseProbe",
            linkerSettings: [.linkedLibrary("jack"), .linkedLibrary("m")]
        ),
        // What the C reference clients share: their callback clock and stats line.
        .target(name: "CallbackStats", path: "CallbackStats"),
        // The minimal C JACK client `scripts/bench jack` compares jack.sink's callback with.
        .executableTarget(
            name: "jack-copy-client",
            dependencies: ["CallbackStats"],
            path: "JackCopyClient",
            linkerSettings: [.linkedLibrary("jack"), .linkedLibrary("m"), .linkedLibrary("pthread")]
        ),
        .target(
            name: "JackCallbackTimer",
            dependencies: ["CallbackStats"],
            path: "JackCallbackTimer",
            linkerSettings: [.linkedLibrary("dl")]
        ),
        // A C pass-through client: the reference for a live chain's latency and callback cost.
        .executableTarget(
            name: "jack-passthrough",
            dependencies: ["CallbackStats"],
            path: "JackPassThrough",
            linkerSettings: [.linkedLibrary("jack")]
        ),
    ]
)
