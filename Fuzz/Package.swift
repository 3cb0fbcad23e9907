// swift-tools-version: 6.3
// The fuzz targets (scripts/fuzz): a package of their own, so the main package's `swift build`
// never links them (libFuzzer supplies their `main`, only when built with -sanitize=fuzzer).
import Foundation
import PackageDescription

/// A path dependency is known by its folder's name: the checkout's, whatever it is called.
let sluice = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().lastPathComponent

let package = Package(
    name: "SluiceFuzz",
    dependencies: [.package(path: "..")],
    targets: [
        .executableTarget(
            name: "sluice-fuzz",
            dependencies: [
                .product(name: "SluiceConfig", package: sluice),
                .product(name: "SluiceGraph", package: sluice),
                .product(name: "SluiceNodes", package: sluice),
                .product(name: "SluicePlugins", package: sluice),
                .product(name: "SluicePluginABI", package: sluice),
                .product(name: "SluiceTestKit", package: sluice),
                .product(name: "SluiceAudio", package: sluice),
                .product(name: "SluiceControlProtocol", package: sluice),
                .product(name: "SluiceSpeechd", package: sluice),
            ],
            path: "Sources/sluice-fuzz"
        )
    ]
)
