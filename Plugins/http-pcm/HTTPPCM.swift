// The `http-pcm` provider: any HTTP endpoint that answers text with raw PCM, described by
// templates. docs/providers/http-pcm.md.
import SluiceHTTPProvider
import SluicePluginABI
import SluicePluginKit

@c(sluice_plugin_entry)
public func sluicePluginEntry() -> UnsafePointer<sluice_plugin_entry_t>? {
    SluicePlugin.entry {
        [
            .provider(HTTPPCM.description, make: { parameters throws(PluginError) in
                try HTTPSpeechProvider(service: HTTPPCM(parameters), options: HTTPOptions(parameters))
            })
        ]
    }
}

struct HTTPPCM: HTTPSpeechService {
    static let sampleFormats = ["s16le", "s24le", "s32le", "f32le"]

    static let description = NodeDescription(
        typeName: "http-pcm", kind: .provider,
        summary: "Speech from any HTTP endpoint that returns raw PCM: URL, method, headers and body are templates.",
        outputs: [Port("out", .bytes, summary: "PCM in the declared format")],
        parameters: [
            Parameter("url", .string, default: nil, required: true,
                      summary: "URL template: {text}, {text-url}, {text-json} and {env:NAME} are replaced."),
            Parameter("method", .choice(["POST", "GET", "PUT"]), default: .string("POST"), summary: "The HTTP method."),
            Parameter("headers", .string, default: nil, summary: "'Name: value' lines (templates), e.g. 'Authorization: Bearer {env:SLUICE_TTS_TOKEN}'."),
            Parameter("body", .string, default: nil, summary: "Body template, e.g. '{\"input\": {text-json}}'."),
            Parameter("sample-format", .choice(sampleFormats), default: .string("s16le"), summary: "How the response's samples are stored."),
            Parameter("rate", .integer(1_000...384_000), default: .integer(24_000), unit: "Hz", summary: "The response's sample rate."),
            Parameter("channels", .integer(1...8), default: .integer(1), summary: "The response's channels, interleaved."),
        ] + HTTPOptions.parameters)

    let method: String
    let url: Template
    let headers: [(name: Template, value: Template)]
    let body: Template?
    let format: PCMFormat
    let secrets: [String]

    /// `{env:NAME}` reads only SLUICE_ variables, and what it reads goes only to this machine or
    /// a host the user trusts (docs/providers/secrets.md).
    static let secretPolicy = SecretPolicy(service: "http-pcm", variablePrefixes: [], defaultBaseURL: nil, baseURLVariable: nil)

    init(_ parameters: Parameters) throws(PluginError) {
        method = parameters.string("method") ?? "POST"
        var environment: [String: String] = [:]
        url = try Template(parameters.string("url") ?? "", parameter: "url", environment: &environment)
        var headers: [(name: Template, value: Template)] = []
        for line in (parameters.string("headers") ?? "").split(whereSeparator: \.isNewline) where !line.allSatisfy(\.isWhitespace) {
            guard let colon = line.firstIndex(of: ":") else {
                throw PluginError(code: "bad-parameter", message: "headers: '\(line)' is not 'Name: value'")
            }
            let value = String(line[line.index(after: colon)...]).drop(while: \.isWhitespace)
            headers.append((
                try Template(String(line[..<colon]), parameter: "headers", environment: &environment),
                try Template(String(value), parameter: "headers", environment: &environment)
            ))
        }
        self.headers = headers
        body = try parameters.string("body").map { (text) throws(PluginError) in
            try Template(text, parameter: "body", environment: &environment)
        }
        let sample: PCMFormat.SampleFormat =
            switch parameters.string("sample-format") ?? "s16le" {
            case "s24le": .s24le
            case "s32le": .s32le
            case "f32le": .f32le
            default: .s16le
            }
        format = PCMFormat(sample, sampleRate: parameters.integer("rate") ?? 24_000, channels: parameters.integer("channels") ?? 1)
        secrets = Array(environment.values)
        let example = url.expand("")
        guard example.hasPrefix("http://") || example.hasPrefix("https://") else {
            throw PluginError(code: "bad-parameter", message: "url must start with http:// or https://")
        }
        guard url.fixesHost else {
            throw PluginError(code: "bad-parameter", message: "url: {text}, {text-url} and {text-json} may not appear in the host; put them in the path, query or body")
        }
        if !environment.isEmpty { try Self.secretPolicy.checkDestination(example, parameter: "url") }
    }

    func request(for text: String) throws(PluginError) -> HTTPRequest {
        HTTPRequest(
            method: method, url: url.expand(text),
            headers: headers.map { HTTPHeader($0.name.expand(text), $0.value.expand(text)) },
            body: body.map { Array($0.expand(text).utf8) })
    }

    func failure(for response: HTTPResponse) -> HTTPFailure {
        switch response.status {
        case 401, 403: .fail(HTTPErrors.invalidKey("The server", variable: nil, detail: nil))
        case 429: .retry(PluginError(code: "rate-limited", message: "the server asked to slow down (HTTP 429)"))
        case 500...: .fail(HTTPErrors.serverError("The server", response, detail: nil))
        default: .fail(HTTPErrors.generic(response, service: "The server"))
        }
    }
}

/// A string with placeholders: `{text}` (as is), `{text-url}` (percent-encoded),
/// `{text-json}` (a quoted JSON string) and `{env:NAME}` (read once, at creation). Other
/// braces are kept, so JSON bodies need no escaping.
struct Template: Sendable {
    enum Piece: Sendable {
        case literal(String)
        case text, textURL, textJSON
    }

    let pieces: [Piece]

    init(_ source: String, parameter: String, environment: inout [String: String]) throws(PluginError) {
        var pieces: [Piece] = []
        var literal = ""
        var rest = Substring(source)
        while let open = rest.firstIndex(of: "{") {
            literal += rest[..<open]
            guard let close = rest[open...].firstIndex(of: "}") else { break }
            let name = rest[rest.index(after: open)..<close]
            let piece: Piece?
            switch name {
            case "text": piece = .text
            case "text-url": piece = .textURL
            case "text-json": piece = .textJSON
            case _ where name.hasPrefix("env:"):
                let variable = String(name.dropFirst(4))
                try HTTPPCM.secretPolicy.checkVariable(variable, parameter: "\(parameter) {env:\(variable)}")
                guard let value = ServiceSupport.environment(variable) else {
                    throw PluginError(code: "missing-env", message: "\(parameter) uses {env:\(variable)} but \(variable) is not set")
                }
                environment[variable] = value
                piece = .literal(value)
            default: piece = nil
            }
            if let piece {
                if !literal.isEmpty { pieces.append(.literal(literal)) }
                literal = ""
                pieces.append(piece)
                rest = rest[rest.index(after: close)...]
            } else {
                literal += "{"
                rest = rest[rest.index(after: open)...]
            }
        }
        literal += rest
        if !literal.isEmpty { pieces.append(.literal(literal)) }
        self.pieces = pieces
    }

    /// Whether the scheme and host come before any text placeholder, so the text cannot
    /// choose where the request (and any secret in it) goes.
    var fixesHost: Bool {
        var prefix = ""
        for piece in pieces {
            guard case .literal(let value) = piece else { break }
            prefix += value
        }
        guard let scheme = prefix.range(of: "://") else { return false }
        return prefix[scheme.upperBound...].contains(where: { $0 == "/" || $0 == "?" || $0 == "#" })
    }

    func expand(_ text: String) -> String {
        var result = ""
        for piece in pieces {
            switch piece {
            case .literal(let value): result += value
            case .text: result += text
            case .textURL: result += ServiceSupport.urlEncoded(text)
            case .textJSON: result += String(decoding: ServiceSupport.json(["v": text]).dropFirst(5).dropLast(), as: UTF8.self)
            }
        }
        return result
    }
}
