import Foundation

/// A headless Chromium driven through chromedriver by the W3C WebDriver protocol (JSON over
/// HTTP on loopback): a real browser loading the page, typing, clicking, pressing keys.
public final class WebDriver {
    private let driver = Process()
    private let port: Int
    private let session: String
    private let profile = TemporaryFolder()

    /// WebDriver's name for an element reference in JSON.
    public static let elementKey = "element-6066-11e4-a52e-4f735466cecf"

    public init() throws {
        port = try Self.freePort()
        driver.executableURL = URL(fileURLWithPath: "/usr/bin/chromedriver")
        driver.arguments = ["--port=\(port)", "--allowed-ips=127.0.0.1"]
        driver.standardOutput = FileHandle.nullDevice
        driver.standardError = FileHandle.nullDevice
        try driver.run()
        // chromedriver answers /status once it listens.
        let deadline = Date().addingTimeInterval(15)
        while (try? RawHTTP.get("/status", port: port))?.status != 200 {
            guard Date() < deadline, driver.isRunning else {
                Self.stop(driver)
                throw TestFailure("chromedriver did not start")
            }
            usleep(100_000)
        }
        let capabilities: [String: Any] = [
            "capabilities": [
                "alwaysMatch": [
                    "browserName": "chrome",
                    "goog:chromeOptions": [
                        "binary": "/usr/bin/chromium",
                        "args": ["--headless", "--no-sandbox", "--disable-gpu", "--window-size=1280,900", "--user-data-dir=\(profile.url.path)"],
                    ],
                ] as [String: Any],
            ]
        ]
        let created = try? Self.call("POST", "/session", capabilities, port: port)
        guard let id = (created?["value"] as? [String: Any])?["sessionId"] as? String else {
            Self.stop(driver)
            throw TestFailure("no session: \(String(describing: created))")
        }
        session = id
    }

    deinit {
        _ = try? Self.call("DELETE", "/session/\(session)", nil, port: port)
        Self.stop(driver)
    }

    /// Ends chromedriver: SIGTERM, then SIGKILL if it has not gone within five seconds.
    private static func stop(_ process: Process) {
        guard process.isRunning else { return }
        process.terminate()
        let deadline = Date().addingTimeInterval(5)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    public func open(_ address: String) throws {
        _ = try command("POST", "url", ["url": address])
    }

    /// The element `css` selects (the first).
    public func element(_ css: String) throws -> String {
        let found = try command("POST", "element", ["using": "css selector", "value": css]) as? [String: Any]
        guard let element = found?[Self.elementKey] as? String else { throw TestFailure("no element \(css): \(String(describing: found))") }
        return element
    }

    /// Types `text` into the element (WebDriver's key codes for keys: "\u{E011}" is Home).
    public func type(_ text: String, into element: String) throws {
        _ = try command("POST", "element/\(element)/value", ["text": text])
    }

    public func click(_ element: String) throws {
        _ = try command("POST", "element/\(element)/click", [:])
    }

    /// Runs `script` in the page and returns what it returns.
    public func run(_ script: String) throws -> Any? {
        try command("POST", "execute/sync", ["script": script, "args": []])
    }

    /// Waits until `script` returns something other than null or false; returns it.
    public func wait(for script: String, timeout: Double = 10) throws -> Any {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let value = try run(script), !(value is NSNull), (value as? Bool) != false { return value }
            usleep(50_000)
        }
        throw TestFailure("the page never made true: \(script)")
    }

    public func screenshot(to file: URL) throws {
        guard let base64 = try command("GET", "screenshot", nil) as? String, let data = Data(base64Encoded: base64) else {
            throw TestFailure("no screenshot")
        }
        try data.write(to: file)
    }

    private func command(_ method: String, _ path: String, _ body: [String: Any]?) throws -> Any? {
        try Self.call(method, "/session/\(session)/\(path)", body, port: port)["value"]
    }

    @discardableResult
    private static func call(_ method: String, _ path: String, _ body: [String: Any]?, port: Int) throws -> [String: Any] {
        let data = try body.map { try JSONSerialization.data(withJSONObject: $0) } ?? Data()
        let response = try RawHTTP.request(
            "\(method) \(path) HTTP/1.1", port: port,
            extraHeaders: ["Content-Type: application/json", "Content-Length: \(data.count)"], body: data)
        let object = try JSONSerialization.jsonObject(with: Data(response.body.utf8)) as? [String: Any] ?? [:]
        if response.status != 200 { throw TestFailure("WebDriver \(method) \(path): \(response.status) \(response.body.prefix(500))") }
        return object
    }

    private static func freePort() throws -> Int {
        let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(probe) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(probe, pointer, length) == 0 && getsockname(probe, pointer, &length) == 0
            }
        }
        guard bound else { throw TestFailure("no free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
