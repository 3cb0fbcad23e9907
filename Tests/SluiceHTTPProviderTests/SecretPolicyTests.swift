import Foundation
import SluiceHTTPProvider
import SluiceTestSupport
import Testing

/// A graph file alone cannot send the user's secrets anywhere: a provider reads keys only from
/// its own or SLUICE_ variables, and sends them only over https to its documented host, a host
/// the user configured outside the graph (the provider's base-URL variable,
/// SLUICE_TRUSTED_HOSTS), or loopback. Checked through `sluice check`, which creates the
/// providers as a run would, with the environment of a child process.
@Suite struct SecretPolicyTests {
    static func check(_ voice: String, environment: [String: String] = [:]) throws -> CommandRunner.Outcome {
        let folder = TemporaryFolder()
        let graph = try folder.write("""
            name: secrets
            nodes:
              voice: { \(voice) }
              align: { type: aligner }
              out:   { type: null.sink, rate: 24000 }
            links:
              - voice -> align -> out
            """, to: "secrets.yaml")
        return try CommandRunner.run(
            executable: CommandRunner.productsFolder.appendingPathComponent("sluice"), ["check", graph.path],
            environment: ["SLUICE_TRUSTED_HOSTS": "", "ELEVENLABS_BASE_URL": "", "OPENAI_BASE_URL": ""].merging(environment) { $1 })
    }

    static let key = ["ELEVENLABS_API_KEY": "k-1", "SLUICE_TEST_SECRET": "k-2", "OPENAI_API_KEY": "k-3", "HOME_TOKEN": "k-4"]

    @Test("a graph may not name a variable outside the provider's prefix and SLUICE_", arguments: [
        "type: elevenlabs, key-env: HOME_TOKEN",
        "type: openai, key-env: HOME_TOKEN",
        #"type: http-pcm, url: "http://127.0.0.1:9/tts", headers: "Authorization: Bearer {env:HOME_TOKEN}""#,
    ])
    func variables(_ voice: String) throws {
        let outcome = try Self.check(voice, environment: Self.key)
        #expect(outcome.status == 1)
        #expect(outcome.standardError.contains("environment variable 'HOME_TOKEN'"), "\(outcome.standardError)")
        #expect(outcome.standardError.contains("untrusted-variable") || outcome.standardError.contains("beginning with"), "\(outcome.standardError)")
    }

    @Test("a key goes only to a trusted host over https", arguments: [
        ("type: elevenlabs, base-url: \"https://collector.example\"", "untrusted-host", "SLUICE_TRUSTED_HOSTS=collector.example"),
        ("type: elevenlabs, base-url: \"http://api.elevenlabs.io\"", "only over https", "http is allowed only to this machine"),
        ("type: openai, base-url: \"https://collector.example:8443\"", "untrusted-host", "SLUICE_TRUSTED_HOSTS=collector.example:8443"),
        (#"type: http-pcm, url: "https://collector.example/tts", headers: "X-Key: {env:SLUICE_TEST_SECRET}""#, "untrusted-host", "collector.example"),
        (#"type: http-pcm, url: "https://{text}.collector.example/tts""#, "may not appear in the host", "path, query or body"),
    ])
    func destinations(_ voice: String, _ message: String, _ fix: String) throws {
        let outcome = try Self.check(voice, environment: Self.key)
        #expect(outcome.status == 1)
        #expect(outcome.standardError.contains(message), "\(outcome.standardError)")
        #expect(outcome.standardError.contains(fix), "\(outcome.standardError)")
        for secret in Self.key.values { #expect(!outcome.standardError.contains(secret)) }
    }

    /// URLs that one parser reads as the documented host and another as somewhere else: refused
    /// before anything connects, whichever transport, with the reason. (The first sent the key
    /// to 127.0.0.2:9 over the WebSocket transport: its own parser took what followed '@'.)
    @Test("a base-url that parsers read differently is refused, whatever the transport", arguments: [
        (#"https://api.elevenlabs.io#@127.0.0.2:9"#, "fragment"),
        (#"https://api.elevenlabs.io/#@127.0.0.2:9"#, "fragment"),
        (#"https://127.0.0.2:9@api.elevenlabs.io"#, "user info"),
        (#"https://user:pass@api.elevenlabs.io"#, "user info"),
        (#"https://api.elevenlabs.io\@127.0.0.2:9"#, "backslash"),
        (#"https://api%2eelevenlabs.io"#, "percent-encoded"),
        (#"https://api.elevenlabs.io:99999"#, "port"),
        (#"https://api.elevenlabs.io:-1"#, "not a URL"),
        (#"https://api.elevenlabs.io?x=1"#, "query"),
        ("https://api.elevenlabs.io\t.evil", "space, a control character"),
        ("https://api.elevenlabs.ıo", "outside ASCII"),
    ], ["websocket", "http"])
    func ambiguousBaseURLs(_ url: (String, String), transport: String) throws {
        // Single-quoted in YAML: no escapes, the text reaches the provider as it is.
        let outcome = try Self.check("type: elevenlabs, transport: \(transport), base-url: '\(url.0)'", environment: Self.key)
        #expect(outcome.status == 1, "\(url.0): \(outcome.standardError)")
        #expect(outcome.standardError.contains("is refused"), "\(url.0): \(outcome.standardError)")
        #expect(outcome.standardError.contains(url.1), "\(url.0): \(outcome.standardError)")
        for secret in Self.key.values { #expect(!outcome.standardError.contains(secret)) }
    }

    // `transport: http`: the WebSocket transport connects when the node is made, and these
    // hosts are not to be reached from a test.
    @Test("what the user configures outside the graph is trusted: the documented host, the base-URL variable, SLUICE_TRUSTED_HOSTS, loopback", arguments: [
        ("type: elevenlabs, transport: http", [String: String]()),
        ("type: elevenlabs, transport: http, base-url: \"https://api.elevenlabs.io/\"", [:]),
        ("type: elevenlabs, transport: http, base-url: \"https://eu.example\"", ["ELEVENLABS_BASE_URL": "https://eu.example"]),
        ("type: elevenlabs, transport: http", ["ELEVENLABS_BASE_URL": "https://eu.example"]),
        ("type: elevenlabs, transport: http, key-env: SLUICE_TEST_SECRET, base-url: \"https://proxy.example:8443\"", ["SLUICE_TRUSTED_HOSTS": "other.example, proxy.example:8443"]),
        ("type: openai, base-url: \"http://127.0.0.1:8000\"", [:]),
        ("type: openai, base-url: \"http://[::1]:8000\"", [:]),
        ("type: openai, key-env: OPENAI_UNSET_KEY, base-url: \"http://tts.lan:8000\"", [:]),
        (#"type: http-pcm, url: "http://localhost:5002/api/tts?text={text-url}", headers: "X-Key: {env:SLUICE_TEST_SECRET}""#, [:]),
        (#"type: http-pcm, url: "http://tts.lan:5002/api/tts?text={text-url}""#, [:]),
    ])
    func trusted(_ voice: String, _ environment: [String: String]) throws {
        let outcome = try Self.check(voice, environment: Self.key.merging(environment) { $1 })
        #expect(outcome.status == 0, "\(voice): \(outcome.standardError)")
    }
}

@Suite struct SecretRedactionTests {
    @Test("a key is taken out wherever it stands as a token, and only there")
    func tokens() {
        let key = "sk-Ab3_9xYz"
        #expect(SecretRedaction.redacted("Invalid API key: \(key).", secrets: [key]) == "Invalid API key: [redacted].")
        #expect(SecretRedaction.redacted("GET /v1?key=\(key)&x=\(key)", secrets: [key]) == "GET /v1?key=[redacted]&x=[redacted]")
        #expect(SecretRedaction.redacted("\(key)\(key)", secrets: [key]) == "\(key)\(key)", "inside a longer token")
        #expect(SecretRedaction.redacted("\"\(key)\"", secrets: [key, ""]) == "\"[redacted]\"")
        // A one-character key no longer takes that letter out of every word.
        #expect(SecretRedaction.redacted("ElevenLabs refused the API key k (HTTP 401)", secrets: ["k"])
                == "ElevenLabs refused the API key [redacted] (HTTP 401)")
    }
}
