import Foundation
import JackTestSupport
import SluiceNodes
import SluiceSpeech
import SluiceTestSupport
import Testing

/// What the controller tests share: configurations on the test JACK server with the plugins
/// `swift build` made, waiting for a condition without hanging, folders, sound files.
enum Speech {
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The standard graph into the shared test server, espeak at its fastest (shorter audio,
    /// quicker tests), no cache.
    static func live(_ modify: (inout SpeechConfiguration) -> Void = { _ in }) throws -> SpeechConfiguration {
        var configuration = SpeechConfiguration()
        configuration.output = .jack(server: try JackTestServer.shared().name)
        configuration.pluginFolders = [CommandRunner.productsFolder.path]
        configuration.settings = ["rate": "400"]
        modify(&configuration)
        return configuration
    }

    /// The standard graph rendered into `path`.
    static func file(_ path: String, _ modify: (inout SpeechConfiguration) -> Void = { _ in }) -> SpeechConfiguration {
        var configuration = SpeechConfiguration()
        configuration.output = .file(path: path)
        configuration.pluginFolders = [CommandRunner.productsFolder.path]
        configuration.settings = ["rate": "400"]
        modify(&configuration)
        return configuration
    }

    /// Waits until `condition` holds, checking every 5 ms; false after `timeout` seconds (so a
    /// broken rule fails the test instead of hanging it).
    @discardableResult
    static func wait(upTo timeout: Double = 20, until condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while !condition() {
            if Date() > deadline { return false }
            usleep(5_000)
        }
        return true
    }

    /// Interleaved samples of a sound file.
    static func samples(_ path: String) throws -> [Float] {
        let reader = try SoundFileReader(path: path)
        var all: [Float] = []
        var buffer = [Float](repeating: 0, count: 4096 * reader.channels)
        while true {
            let frames = try buffer.withUnsafeMutableBufferPointer { try reader.readFrames(into: $0) }
            if frames == 0 { break }
            all += buffer[0..<(frames * reader.channels)]
        }
        return all
    }
}

