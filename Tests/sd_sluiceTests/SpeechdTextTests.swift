import Testing

@testable import sd_sluice

@Suite struct SpeechdTextTests {
    @Test("tags go, entities are decoded, white space stays")
    func plainText() {
        #expect(SpeechdText.plain("<speak>Hello <mark name=\"1\"/>world &amp; all &lt;3 &#x263A;&#33;</speak>") == "Hello world & all <3 ☺!")
        #expect(SpeechdText.plain("line one\nline two") == "line one\nline two")
    }

    @Test("hostile markup speaks nothing of itself: nested brackets, forbidden characters by reference")
    func hostileMarkup() {
        #expect(SpeechdText.plain("<<<<a>>>>") == "")
        #expect(SpeechdText.plain("a<<b>c>d") == "ad")
        #expect(SpeechdText.plain("x&#0;y&#x0;z&#1;&#xD800;&#xFFFE;&#xFFFF;&#1114112;.") == "xyz.")
        #expect(!SpeechdText.plain("&#0;").unicodeScalars.contains { $0.value == 0 })
        // A lone '>' in text is text, as XML allows; an unknown entity stays as written.
        #expect(SpeechdText.plain("3 > 2 &nbsp;") == "3 > 2 &nbsp;")
    }
}
