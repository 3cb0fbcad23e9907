// swift-tools-version: 6.3
// The plugins only the tests load (by path, with dlopen): a package of its own, so Sluice's
// product list shows users only what they can use. The tests build it on first use
// (SluiceTestSupport's `TestFixtures`), and scripts/test builds it up front into
// `.build-fixtures`. The plugin ABI and kit are Sluice's own sources, through the links in
// Shared/ (a path dependency on Sluice would resolve every dependency it has).
import PackageDescription

let package = Package(
    name: "SluiceTestFixtures",
    products: [
        .library(name: "test-plugin-wrong-abi", type: .dynamic, targets: ["TestPluginWrongABI"]),
        .library(name: "test-plugin-no-entry", type: .dynamic, targets: ["TestPluginNoEntry"]),
        .library(name: "test-plugin-swift", type: .dynamic, targets: ["TestPluginSwift"]),
        .library(name: "test-plugin-events", type: .dynamic, targets: ["TestPluginEvents"]),
        .library(name: "test-plugin-abi-v1", type: .dynamic, targets: ["TestPluginABIv1"]),
    ],
    targets: [
        .target(name: "SluicePluginABI", path: "Shared/SluicePluginABI"),
        .target(name: "SluicePluginKit", dependencies: ["SluicePluginABI"], path: "Shared/SluicePluginKit"),
        .target(
            name: "TestPluginWrongABI", dependencies: ["SluicePluginABI"], path: "Plugins/wrong-abi",
            publicHeadersPath: "."
        ),
        .target(name: "TestPluginNoEntry", path: "Plugins/no-entry", publicHeadersPath: "."),
        // As Sluice's own Swift plugins link: `-Bsymbolic` binds the plugin's copy of the kit
        // to itself.
        .target(
            name: "TestPluginSwift", dependencies: ["SluicePluginKit", "SluicePluginABI"], path: "Plugins/swift-test",
            linkerSettings: [.unsafeFlags(["-Xlinker", "-Bsymbolic"])]
        ),
        .target(
            name: "TestPluginEvents", dependencies: ["SluicePluginABI"], path: "Plugins/events",
            publicHeadersPath: ".", cSettings: [.unsafeFlags(["-fvisibility=hidden"])]
        ),
        // Built against ABI version 1's headers, kept in its folder (not SluicePluginABI's).
        .target(
            name: "TestPluginABIv1", path: "Plugins/abi-v1", publicHeadersPath: ".",
            cSettings: [.unsafeFlags(["-fvisibility=hidden"])], linkerSettings: [.linkedLibrary("pthread")]
        ),
    ]
)
