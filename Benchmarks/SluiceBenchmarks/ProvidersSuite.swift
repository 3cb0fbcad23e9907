import Foundation
import HTTPTestSupport
import SluiceConfig
import SluiceGraph
import SluiceNodes
import SluicePlugins

/// Provider overhead: bytes per second through the `http-pcm` provider from a loopback server,
/// against `curl` writing the same stream to /dev/null, in the same run, from the same server.
///
/// The Sluice side loads the release plugin through the real loader and drains the provider
/// node the way a graph's source thread does (`produce` into 64 KiB of room, markers
/// collected), as fast as it delivers. The reference is the `curl` tool: a child process timed
/// from spawn to exit, so its start-up (a few milliseconds) counts against it; the stream is
/// large enough (256 MiB) for that to stay below a percent.
enum ProvidersSuite {
    static let streamBytes = 256 << 20
    static let rate = 24_000

    static func run(runs: Int) {
        var body = [UInt8](repeating: 0, count: streamBytes)
        for index in body.indices { body[index] = UInt8(truncatingIfNeeded: index &* 2_654_435_761 >> 7) }
        let stream = body
        let server: HTTPTestServer
        do {
            server = try HTTPTestServer { _ in .init(body: stream, chunkSizes: 65_536...65_536) }
        } catch { fail("cannot start the loopback server: \(error)") }
        defer { server.stop() }
        let url = server.baseURL + "/speak"
        let plugin = productsFolder.appendingPathComponent("libsluice-http-pcm.so").path
        note("stream: \(streamBytes >> 20) MiB from \(url); plugin \(plugin)")

        let (sluice, reference) = interleavedMedians(
            runs: runs, label: "http-pcm vs curl",
            sluice: { Double(streamBytes) / drainProvider(plugin: plugin, url: url) },
            reference: { Double(streamBytes) / curlToNull(url: url) })
        Figure(
            bench: "providers", metric: "http-pcm throughput", sluice: sluice / 1e6, reference: reference / 1e6,
            unit: "MB/s", referenceName: "curl -o /dev/null", runs: runs, goal: nil
        ).emit()
    }

    /// The folder holding this benchmark executable, and the release plugins built with it.
    static var productsFolder: URL {
        URL(fileURLWithPath: harnessFolder)
    }

    /// Seconds to read the whole stream through a fresh provider node.
    static func drainProvider(plugin: String, url: String) -> Double {
        do {
            var registry = BuiltinNodes.registry()
            try PluginCatalog.register([try PluginLibrary.load(path: plugin)], into: &registry)
            // A minute of buffer: the provider never pauses for want of a reader here.
            let graph = try GraphCompiler(registry: registry).compile(try GraphFile.parse("""
                name: bench
                nodes:
                  voice: { type: http-pcm, url: "\(url)", rate: \(rate), buffer: 60 }
                  align: { type: aligner }
                  out:   { type: null.sink, rate: \(rate), channels: 1 }
                links:
                  - voice -> align -> out
                """, file: "bench.yaml"))
            guard let voice = graph.nodes.first(where: { $0.name == "voice" })?.instance as? PluginProviderSource else {
                fail("the http-pcm node is not a plugin provider")
            }
            let room = 65_536
            let ports = NodePorts(inputs: [], outputs: [.bytes(voice.format)])
            let buffer = UnsafeMutableRawPointer.allocate(byteCount: room, alignment: 16)
            defer { buffer.deallocate() }
            let start = monotonicSeconds()
            voice.receive(text: "stream")
            voice.finishText()
            var total = 0
            loop: while true {
                ports.setOutput(0, base: buffer, units: room)
                var io = ProcessIO(ports)
                let status = voice.produce(&io, at: 0)
                let produced = ports.produced(output: 0)
                total += produced
                ports.removeMarkers(output: 0)
                switch status {
                case .finished: break loop
                case .failed(let failure): fail("http-pcm failed: \(failure.message)")
                default:
                    // Nothing ready: the transfer is ahead of nobody; yield briefly, as the
                    // graph's source thread would.
                    if produced == 0 { usleep(50) }
                }
            }
            let seconds = monotonicSeconds() - start
            guard total == streamBytes else { fail("http-pcm delivered \(total) of \(streamBytes) bytes") }
            return seconds
        } catch {
            fail("http-pcm: \(error)")
        }
    }

    /// Seconds `curl` takes to fetch the stream into /dev/null (POST, as the provider does).
    static func curlToNull(url: String) -> Double {
        let start = monotonicSeconds()
        let child = ChildProcess.start(["curl", "-sS", "-X", "POST", "--data-binary", "", "-o", "/dev/null", url])
        let exit = child.wait()
        let seconds = monotonicSeconds() - start
        guard exit.exited(with: 0) else { fail("curl failed (status \(exit.status))") }
        return seconds
    }
}
