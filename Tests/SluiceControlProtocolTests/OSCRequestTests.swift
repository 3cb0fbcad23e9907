import SluiceControlProtocol
import SluiceTestSupport
import Testing

/// OSC datagrams written by hand from the OSC 1.0 spec (padded strings, big-endian numbers),
/// read by `OSCRequest.parse` through liblo.
@Suite struct OSCRequestTests {
    typealias Argument = OSCMessage.Argument

    static func datagram(_ address: String, _ arguments: [Argument]) -> [UInt8] { OSCMessage.encode(address, arguments) }

    static func parse(_ bytes: [UInt8], secret: String? = nil) -> (String, Result<ControlRequest, ControlError>)? {
        var buffer = bytes
        return OSCRequest.parse(&buffer, count: buffer.count, secret: secret.map { Array($0.utf8) })
    }

    @Test("every number type is read at its own size, the last argument of the datagram included")
    func numbers() throws {
        let cases: [(Argument, Double)] = [
            (.float(0.25), 0.25), (.double(-0.5), -0.5), (.int32(-7), -7), (.int64(1 << 40), 1_099_511_627_776),
        ]
        for (argument, value) in cases {
            let parsed = try #require(Self.parse(Self.datagram("/sluice/node/fade/gain", [argument])))
            #expect(try parsed.1.get() == .set(node: "fade", parameter: "gain", value: value, at: nil), "\(argument)")
        }
        let timed = try #require(Self.parse(Self.datagram("/sluice/node/fade/gain", [.float(1), .int32(96_000)])))
        #expect(try timed.1.get() == .set(node: "fade", parameter: "gain", value: 1, at: 96_000))
    }

    @Test("frames that are no frame are refused with bad-value", arguments: [Int64.max, Int64.min, -1, 1_000_000_000_000_000])
    func frames(_ frame: Int64) throws {
        let parsed = try #require(Self.parse(Self.datagram("/sluice/node/fade/gain", [.float(0.5), .int64(frame)])))
        #expect(throws: ControlError.self) { try parsed.1.get() }
        if case .failure(let error) = parsed.1 { #expect(error.code == "bad-value") }
    }

    @Test("strings arrive whole, of every length around the padding")
    func strings() throws {
        for length in 0...9 {
            let text = String(repeating: "é", count: length) + "x"
            let parsed = try #require(Self.parse(Self.datagram("/sluice/speak", [.string(text), .string("voice")])))
            #expect(try parsed.1.get() == .speak(text: text, node: "voice", interrupt: false), "length \(length)")
        }
        let route = try #require(Self.parse(Self.datagram("/sluice/connect", [.string("a:out_1"), .string("b:in_1")])))
        #expect(try route.1.get() == .route("a:out_1", "b:in_1", connected: true))
        let configure = try #require(Self.parse(Self.datagram("/sluice/configure/voice/voice", [.string("en-us")])))
        #expect(try configure.1.get() == .configure(node: "voice", parameters: ["voice": "en-us"]))
    }

    @Test("with a secret: only messages that begin with it, which then read as without it; nothing else is answered")
    func secret() throws {
        let secret = "0123456789abcdef"
        let parsed = try #require(Self.parse(Self.datagram("/sluice/node/fade/gain", [.string(secret), .float(0.5)]), secret: secret))
        #expect(try parsed.1.get() == .set(node: "fade", parameter: "gain", value: 0.5, at: nil))
        for bytes in [
            Self.datagram("/sluice/status", []), Self.datagram("/sluice/status", [.string("0123456789abcdeF")]),
            Self.datagram("/sluice/status", [.string(String(secret.dropLast()))]), Self.datagram("/sluice/status", [.int32(1)]),
            Array("#bundle\0".utf8) + [0, 0, 0, 0, 0, 0, 0, 1], [0xff, 0, 0x13, 0x37],
        ] {
            #expect(Self.parse(bytes, secret: secret) == nil, "\(bytes)")
        }
        #expect(Self.parse(Self.datagram("/sluice/status", [])) != nil, "without a secret everything is answered")
    }

    @Test("reload takes no arguments: with one it is refused naming the usage")
    func reload() throws {
        let parsed = try #require(Self.parse(Self.datagram("/sluice/reload", [])))
        #expect(try parsed.1.get() == .reload)
        let extra = try #require(Self.parse(Self.datagram("/sluice/reload", [.string("graph.yaml")])))
        if case .failure(let error) = extra.1 { #expect(error.message.contains("no arguments"), "\(error)") } else { Issue.record("an argument taken") }
    }
}
