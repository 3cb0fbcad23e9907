import Testing

@testable import SluiceWeb

/// Who may use the web surface: one rule at a time, from the request's head alone.
@Suite struct WebAccessTests {
    private let open = WebAccess(token: nil)
    private let guarded = WebAccess(token: "s3cret-token")

    @Test("loopback names are answered without a token, with any port")
    func loopbackNamesAreAnsweredWithoutAToken() {
        for host in ["127.0.0.1", "127.0.0.1:8080", "localhost", "LOCALHOST:1", "[::1]", "[::1]:9000"] {
            #expect(open.check(host: host, origin: nil, authorization: nil, target: "/") == nil, "\(host)")
        }
    }

    /// A page on another site whose name resolves to 127.0.0.1 (DNS rebinding) sends its own
    /// name as Host; so do tricks that only start like a loopback name.
    @Test("without a token, every other Host is refused (DNS rebinding), and a missing one")
    func otherNamesAreRefusedWithoutAToken() {
        for host in ["evil.example", "127.0.0.1.evil.example", "localhost.evil", "127.0.0.2", "[::2]", "[::1]x", "127.0.0.1:", "127.0.0.1:80:80", "[::1]:123456", "0.0.0.0"] {
            #expect(open.check(host: host, origin: nil, authorization: nil, target: "/")?.status == 403, "\(host)")
        }
        #expect(open.check(host: nil, origin: nil, authorization: nil, target: "/")?.status == 400)
        #expect(open.check(host: "", origin: nil, authorization: nil, target: "/")?.status == 400)
    }

    /// Another site's page may not open the WebSocket (browsers send Origin on every one).
    @Test("another site's page may not use the surface: Origin must be the surface itself")
    func originMustBeTheSurfaceItself() {
        #expect(open.check(host: "127.0.0.1:8080", origin: "http://127.0.0.1:8080", authorization: nil, target: "/ws") == nil)
        for origin in ["http://evil.example", "http://127.0.0.1:8081", "https://127.0.0.1:8080", "null", "http://localhost:8080"] {
            let refusal = open.check(host: "127.0.0.1:8080", origin: origin, authorization: nil, target: "/ws")
            #expect(refusal?.status == 403, "\(origin)")
            #expect(refusal?.message == "a page from \(origin) may not use this surface; open it at http://127.0.0.1:8080/")
        }
    }

    @Test("on other addresses the token is needed, in Authorization or ?token=, and Origin still holds")
    func tokenInHeaderOrQuery() {
        #expect(guarded.check(host: "box.lan:8080", origin: nil, authorization: "Bearer s3cret-token", target: "/metrics") == nil)
        #expect(guarded.check(host: "box.lan:8080", origin: nil, authorization: "bearer s3cret-token", target: "/metrics") == nil)
        #expect(guarded.check(host: "box.lan:8080", origin: "http://box.lan:8080", authorization: nil, target: "/ws?token=s3cret-token") == nil)
        #expect(guarded.check(host: "box.lan:8080", origin: nil, authorization: nil, target: "/?x=1&token=s3cret%2Dtoken") == nil)
        let wrong: [(String?, String)] = [
            (nil, "/"), ("Bearer s3cret-toke", "/"), ("Bearer s3cret-token2", "/"), ("Basic s3cret-token", "/"),
            (nil, "/?token="), (nil, "/?token=%zz"), (nil, "/?tokens=s3cret-token"), ("Bearer ", "/?token=nope"),
        ]
        for (authorization, target) in wrong {
            #expect(
                guarded.check(host: "box.lan:8080", origin: nil, authorization: authorization, target: target)?.status == 401,
                "\(authorization ?? "none") \(target)")
        }
        // With a token any Host is answered, but Origin still holds.
        #expect(
            guarded.check(host: "box.lan:8080", origin: "http://evil.example", authorization: "Bearer s3cret-token", target: "/ws")?.status == 403)
    }

    @Test("the query token is percent-decoded, bad encodings refused; comparison is exact")
    func queryTokenDecoding() {
        #expect(WebAccess.queryToken(in: "/ws?token=a%20b+c") == "a b c")
        #expect(WebAccess.queryToken(in: "/ws?token=%e2%28") == nil)
        #expect(WebAccess.queryToken(in: "/ws") == nil)
        #expect(WebAccess.constantTimeEqual("abc", "abc"))
        #expect(!WebAccess.constantTimeEqual("abcd", "abc"))
        #expect(!WebAccess.constantTimeEqual("", "abc"))
    }
}
