import Foundation
import SluicePluginKit

/// Small pieces the HTTP services share: JSON bodies, keys from the environment, base URLs
/// (their shared errors are `HTTPErrors`).
public enum ServiceSupport {
    /// `object` as compact JSON with sorted keys (stable bodies, easy to check in tests).
    public static func json(_ object: [String: Any]) -> [UInt8] {
        // Only plain strings, numbers, booleans and nested dictionaries are passed in.
        let data = try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        return [UInt8](data)
    }

    /// The JSON object a response body holds, or nil.
    public static func jsonObject(_ body: [UInt8]) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
    }

    /// A JSON number as an integer, nil for anything else.
    public static func integer(_ value: Any?) -> Int? {
        (value as? NSNumber).map { $0.intValue }
    }

    /// The value of environment variable `name`, nil when unset or empty.
    public static func environment(_ name: String) -> String? {
        guard let value = ProcessInfo.processInfo.environment[name], !value.isEmpty else { return nil }
        return value
    }

    /// `base` without trailing slashes, checked to be an http(s) URL.
    public static func baseURL(_ base: String, parameter: String = "base-url") throws(PluginError) -> String {
        var trimmed = base
        while trimmed.hasSuffix("/") { trimmed.removeLast() }
        guard trimmed.hasPrefix("http://") || trimmed.hasPrefix("https://") else {
            throw PluginError(code: "bad-parameter", message: "\(parameter) must start with http:// or https:// (got '\(HTTPRequest.display(base))')")
        }
        // Paths are appended to it as text, so it is checked as a whole URL first, and may
        // carry no query: what follows would land inside it.
        do throws(ProviderURL.Refusal) {
            let url = try ProviderURL(trimmed, schemes: ["http", "https"])
            guard !url.target.contains("?") else {
                throw ProviderURL.Refusal(reason: "it has a query ('?'); paths are appended to it")
            }
        } catch {
            throw PluginError(code: "bad-parameter", message: "\(parameter) '\(HTTPRequest.display(base))' is refused: \(error.reason)")
        }
        return trimmed
    }

    /// `text` percent-encoded for a URL path segment or query value.
    public static func urlEncoded(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }
}
