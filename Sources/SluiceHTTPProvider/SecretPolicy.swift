import Foundation
import SluicePluginKit

/// Where a provider may send a secret read from the environment, and which variables a graph
/// may name. A graph file is input a user may receive from elsewhere: on its own it must not
/// be able to read any variable of the user's environment and post it to a host of its
/// choosing. docs/providers/secrets.md states the rule:
///
/// - a graph may name only variables that begin with the provider's own prefix
///   (`ELEVENLABS_`, `OPENAI_`) or `SLUICE_`;
/// - a secret goes only over https, and only to the provider's documented host, to the host of
///   the provider's base-URL variable (`ELEVENLABS_BASE_URL`, `OPENAI_BASE_URL`), to a host the
///   user lists in `SLUICE_TRUSTED_HOSTS`, or to this machine (loopback, where http is allowed:
///   nothing leaves the machine).
public struct SecretPolicy: Sendable {
    /// The provider's name in messages ("ElevenLabs").
    public var service: String
    /// Prefixes a key variable's name may begin with, besides `SLUICE_`.
    public var variablePrefixes: [String]
    /// The documented API address (its host is trusted), e.g. "https://api.elevenlabs.io".
    public var defaultBaseURL: String?
    /// The environment variable a user sets to point the provider elsewhere.
    public var baseURLVariable: String?

    public static let trustedHostsVariable = "SLUICE_TRUSTED_HOSTS"

    public init(service: String, variablePrefixes: [String], defaultBaseURL: String?, baseURLVariable: String?) {
        self.service = service
        self.variablePrefixes = variablePrefixes
        self.defaultBaseURL = defaultBaseURL
        self.baseURLVariable = baseURLVariable
    }

    /// The base URL to use when the graph names none: the user's variable, else the default.
    public var configuredBaseURL: String? {
        baseURLVariable.flatMap(ServiceSupport.environment) ?? defaultBaseURL
    }

    /// Throws unless a graph may read a secret from `variable`.
    public func checkVariable(_ variable: String, parameter: String) throws(PluginError) {
        let allowed = ["SLUICE_"] + variablePrefixes
        guard allowed.contains(where: { variable.hasPrefix($0) && variable.count > $0.count }) else {
            throw PluginError(
                code: "untrusted-variable",
                message: "\(parameter) names the environment variable '\(variable)'; a graph may read secrets only from variables "
                    + "beginning with \(allowed.joined(separator: " or ")) (docs/providers/secrets.md)")
        }
    }

    /// Throws unless a secret may be sent to `url`.
    public func checkDestination(_ url: String, parameter: String) throws(PluginError) {
        let destination: Destination
        do {
            destination = try Destination(url)
        } catch {
            throw PluginError(code: "bad-parameter", message: "\(parameter) '\(HTTPRequest.display(url))' is refused: \(error.reason)")
        }
        if destination.isLoopback { return }
        guard destination.scheme == "https" else {
            throw PluginError(
                code: "insecure-url",
                message: "\(service) sends its key only over https; \(parameter) is '\(HTTPRequest.display(url))' "
                    + "(http is allowed only to this machine: 127.0.0.1, ::1, localhost)")
        }
        if trustedHosts.contains(where: { destination.matches($0) }) { return }
        throw PluginError(
            code: "untrusted-host",
            message: "\(service) sends its key only to hosts you configured, and the graph's \(parameter) names '\(destination.authority)'. "
                + "If you trust it, set \(baseURLVariable.map { "\($0)=\(HTTPRequest.display(url)) or " } ?? "")"
                + "\(Self.trustedHostsVariable)=\(destination.authority) (docs/providers/secrets.md)")
    }

    /// The hosts (as `host` or `host:port`) a secret may go to besides loopback.
    var trustedHosts: [String] {
        var hosts: [String] = []
        for url in [defaultBaseURL, baseURLVariable.flatMap(ServiceSupport.environment)].compactMap({ $0 }) {
            if let destination = try? Destination(url) { hosts.append(destination.authority) }
        }
        if let listed = ServiceSupport.environment(Self.trustedHostsVariable) {
            hosts += listed.split(whereSeparator: { $0 == "," || $0 == " " }).map { $0.lowercased() }
        }
        return hosts
    }

    /// A URL's scheme, host and port, as the request will use them: `ProviderURL`, the parser
    /// the connection dials with, limited to http and https.
    struct Destination {
        var url: ProviderURL

        init(_ text: String) throws(ProviderURL.Refusal) {
            url = try ProviderURL(text, schemes: ["http", "https"])
        }

        var scheme: String { url.scheme }
        var host: String { url.host }
        var port: Int { url.port }
        var authority: String { url.authority }
        var isLoopback: Bool { url.isLoopback }

        /// Whether `entry` (`host` or `host:port`) names this destination.
        func matches(_ entry: String) -> Bool {
            entry == authority || (url.isDefaultPort && entry == host) || entry == "\(host):\(port)"
        }
    }
}
