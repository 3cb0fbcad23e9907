import Testing

import SluiceSpeechd

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
        // Written as they are, too (the fuzz target's find: "<<<<<<a>>\u{1}\0\0\u{7f}a>>>>\u{1c}\0…").
        #expect(SpeechdText.plain("a\u{0}b\u{1}c\u{1c}d\u{7f}e\u{FFFE}") == "abcd\u{7f}e")
        #expect(SpeechdText.plain("<<<<<<a>>\u{1}\0\0\u{7f}a>>>>\u{1c}\0\0\0\0\0xx") == "xx")
        #expect(SpeechdText.plain("<\u{301}b>text") == "text")
        // A lone '>' in text is text, as XML allows; an unknown entity stays as written.
        #expect(SpeechdText.plain("3 > 2 &nbsp;") == "3 > 2 &nbsp;")
    }
}

@Suite struct SpeechdSettingsTests {
    @Test("rate, pitch and volume take whole numbers in −100…100; extremes are refused, the value kept")
    func numbers() {
        var settings = SpeechdSettings()
        let accepted = [settings.set("rate", "100"), settings.set("pitch", "-100"), settings.set("volume", "0")]
        #expect(accepted == [true, true, true])
        #expect(settings.rate == 100 && settings.pitch == -100 && settings.volume == 0)
        for value in ["1e300", "-1e300", "nan", "inf", "101", "-101", "9223372036854775807", "-9223372036854775808",
                      "99999999999999999999", "0.5", "", " 5"] {
            let taken = settings.set("rate", value)
            #expect(!taken, "rate=\(value)")
        }
        #expect(settings.rate == 100)
        #expect(settings.provider == ["rate": "450", "pitch": "0", "voice": "en"])
        #expect(settings.gain == 0.5)
    }

    @Test("punctuation and capital letters map to the espeak provider's punctuation and capitals; other values are refused")
    func punctuationAndCapitals() {
        var settings = SpeechdSettings()
        #expect(settings.provider["punctuation"] == nil && settings.provider["capitals"] == nil, "none is left out")
        for mode in ["some", "most", "all"] {
            let taken = settings.set("punctuation_mode", mode)
            #expect(taken)
            #expect(settings.provider["punctuation"] == mode)
        }
        let spell = settings.set("cap_let_recogn", "spell")
        #expect(spell && settings.provider["capitals"] == "word")
        let icon = settings.set("cap_let_recogn", "icon")
        #expect(icon && settings.provider["capitals"] == "pitch")
        for (name, value) in [("punctuation_mode", "ALL"), ("punctuation_mode", ""), ("punctuation_mode", "all\n"), ("cap_let_recogn", "beep")] {
            let taken = settings.set(name, value)
            #expect(!taken, "\(name)=\(value)")
        }
        #expect(settings.provider["punctuation"] == "all" && settings.provider["capitals"] == "pitch", "a refused value keeps the last")
        // Back to none is sent too: the provider keeps what a configure does not change.
        let reset = [settings.set("punctuation_mode", "none"), settings.set("cap_let_recogn", "none")]
        #expect(reset == [true, true])
        #expect(settings.provider == ["rate": "175", "pitch": "50", "voice": "en", "punctuation": "none", "capitals": "none"])
        var untouched = SpeechdSettings()
        let defaults = [untouched.set("punctuation_mode", "none"), untouched.set("cap_let_recogn", "none")]
        #expect(defaults == [true, true] && untouched.provider == ["rate": "175", "pitch": "50", "voice": "en"], "none alone is not sent")
    }

    @Test("for a piper voice: rate is a speed factor (0.5, 1, 3), the synthesis voice its voice, and nothing Piper lacks")
    func piperParameters() {
        var settings = SpeechdSettings()
        #expect(settings.provider(for: "piper") == ["rate": "1.000"])
        let set = [settings.set("rate", "-100"), settings.set("pitch", "40"), settings.set("language", "de"),
                   settings.set("punctuation_mode", "all"), settings.set("cap_let_recogn", "spell")]
        #expect(set == [true, true, true, true, true])
        #expect(settings.provider(for: "piper") == ["rate": "0.500"], "no pitch, language, punctuation or capitals")
        _ = settings.set("rate", "100")
        _ = settings.set("synthesis_voice", "en_US-joe-medium")
        #expect(settings.provider(for: "piper") == ["rate": "3.000", "voice": "en_US-joe-medium"])
        _ = settings.set("rate", "25")
        #expect(settings.provider(for: "piper")["rate"] == "1.500")
        #expect(settings.provider(for: "espeak") == settings.provider)
        #expect(settings.provider(for: "elevenlabs") == ["voice": "en_US-joe-medium"], "another provider gets only the voice it was named")
        #expect(SpeechdSettings().provider(for: "openai") == [:])
    }
}
