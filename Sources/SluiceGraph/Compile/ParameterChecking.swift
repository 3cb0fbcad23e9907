extension ParameterDescriptor {
    /// Checks a value given as text (a control client's) as a graph file's value is checked:
    /// the checked value, or a sentence saying what the parameter accepts.
    public func check(_ text: String) -> Result<ParameterValue, ParameterRefusal> {
        ParameterChecking.check(.scalar(text, quoted: false), as: type).mapError {
            ParameterRefusal(message: "'\(name)' " + $0.message + ($0.fix.map { "; \($0)" } ?? ""))
        }
    }
}

/// Why a parameter's value was refused, in a sentence.
public struct ParameterRefusal: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

/// Turns a parameter's raw text into a checked value, or says what is wrong with it.
enum ParameterChecking {
    /// - Returns: the value, or a sentence saying what the parameter accepts.
    static func check(_ raw: RawValue, as type: ParameterType) -> Result<ParameterValue, Refusal> {
        switch (type, raw) {
        case (.list, .list(let items)):
            return .success(.list(items))
        case (.list, .scalar(let text, _)):
            let items = text.split(separator: ",").map { $0.trimmingSpaces() }.filter { !$0.isEmpty }
            return .success(.list(items))
        case (_, .mapping), (_, .list):
            return .failure(Refusal("must be a \(type), not \(raw.kindWord)"))
        case (.number(let range), .scalar(let text, _)):
            guard let value = Double(text.trimmingSpaces()), value.isFinite else {
                return .failure(Refusal("must be a \(type), got '\(text)'"))
            }
            guard range.contains(value) else { return .failure(Refusal("must be a \(type), got \(text)")) }
            return .success(.number(value))
        case (.integer(let range), .scalar(let text, _)):
            guard let value = Int(text.trimmingSpaces()) else {
                return .failure(Refusal("must be an \(type), got '\(text)'"))
            }
            guard range.contains(value) else { return .failure(Refusal("must be an \(type), got \(text)")) }
            return .success(.integer(value))
        case (.rate(let range), .scalar(let text, _)):
            let trimmed = text.trimmingSpaces()
            if trimmed == "auto" { return .success(.auto) }
            guard let value = Int(trimmed) else {
                return .failure(Refusal("must be a \(type), got '\(text)'"))
            }
            guard range.contains(value) else { return .failure(Refusal("must be a \(type), got \(text)")) }
            return .success(.integer(value))
        case (.boolean, .scalar(let text, _)):
            switch text.trimmingSpaces().lowercased() {
            case "true", "yes", "on": return .success(.boolean(true))
            case "false", "no", "off": return .success(.boolean(false))
            default: return .failure(Refusal("must be true or false, got '\(text)'"))
            }
        case (.string, .scalar(let text, _)), (.path, .scalar(let text, _)):
            return .success(.string(text))
        case (.choice(let names), .scalar(let text, _)):
            let trimmed = text.trimmingSpaces()
            guard names.contains(trimmed) else {
                let close = closestNames(to: trimmed, among: names, limit: 1)
                return .failure(Refusal(
                    "must be \(type), got '\(text)'", fix: close.first.map { "did you mean '\($0)'?" }))
            }
            return .success(.string(trimmed))
        }
    }

    struct Refusal: Error {
        var message: String
        var fix: String?
        init(_ message: String, fix: String? = nil) {
            self.message = message
            self.fix = fix
        }
    }
}

extension RawValue {
    var kindWord: String {
        switch self {
        case .scalar: "a single value"
        case .list: "a list"
        case .mapping: "a mapping"
        }
    }
}

extension StringProtocol {
    func trimmingSpaces() -> String {
        var view = Substring(self)
        while let first = view.first, first == " " || first == "\t" { view = view.dropFirst() }
        while let last = view.last, last == " " || last == "\t" { view = view.dropLast() }
        return String(view)
    }
}
