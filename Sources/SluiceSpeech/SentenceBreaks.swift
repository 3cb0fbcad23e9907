import CICU
import Synchronization

/// Where ICU's sentence break iterator (Unicode's sentence rules, UAX #29, tailored by
/// locale) ends sentences: every script's full stops and question
/// marks (`।`, `؟`, `。`, `።`), a full stop before a lowercase word or a digit not ending one.
/// One template iterator per locale is opened on first use and kept; each call cuts with a
/// clone of it, so chunkers on any thread never share one.
enum SentenceBreaks {
    /// An ICU iterator, owned by `templates` for the process's life.
    private struct Template: @unchecked Sendable {
        // SAFETY: only cloned, under `templates`' lock; never closed.
        let iterator: UnsafeMutableRawPointer
    }

    private static let templates = Mutex<[String: Template]>([:])
    static let cachedLocales = 64

    /// The offsets in `text` (UTF-16 units) just after each sentence, in order; the text's end
    /// is the last. Text ICU cannot cut (an iterator that fails to open) is one sentence.
    static func boundaries(in text: [UInt16], locale: String) -> [Int] {
        guard !text.isEmpty else { return [] }
        guard let iterator = clone(for: locale) else { return [text.count] }
        defer { sluice_icu_close(iterator) }
        // A sentence boundary is at most one a unit, and the end.
        var offsets = [Int32](repeating: 0, count: text.count + 1)
        let count = text.withUnsafeBufferPointer { units in
            offsets.withUnsafeMutableBufferPointer { out in
                // SAFETY: both buffers live through the call, which keeps no pointer to them.
                sluice_icu_sentence_boundaries(iterator, units.baseAddress, Int32(units.count), out.baseAddress, Int32(out.count))
            }
        }
        guard count > 0 else { return [text.count] }
        let found = offsets.prefix(Int(count)).map(Int.init)
        return found.last == text.count ? found : found + [text.count]
    }

    private static func clone(for locale: String) -> UnsafeMutableRawPointer? {
        templates.withLock { templates -> UnsafeMutableRawPointer? in
            if templates[locale] == nil {
                // Past a few dozen locales (a voice's region and variant are free text), one
                // of its own for each call rather than a cache that grows.
                guard templates.count < Self.cachedLocales else { return sluice_icu_sentence_iterator(locale) }
                guard let made = sluice_icu_sentence_iterator(locale) else { return nil }
                templates[locale] = Template(iterator: made)
            }
            guard let template = templates[locale] else { return nil }
            return sluice_icu_clone(template.iterator)
        }
    }

    /// The ICU locale for a language tag (`de`, `en-US`, `fr_FR`); the root locale for nil.
    /// Without ICU's abbreviation suppressions (`ss=standard`): the chunker keeps lists of its
    /// own, and ICU's German one holds "Uhr.", which ends many a sentence ("um 10 Uhr.").
    static func locale(for language: String?) -> String {
        guard let language else { return "" }
        return String(language.map { $0 == "-" ? "_" : $0 })
    }

    /// Whether ICU knows `tag`'s language (an ISO 639 code): "de" and "en_US" do; a voice id
    /// such as "21m00Tcm4TlvDq8ikWAM" does not.
    static func knowsLanguage(_ tag: String) -> Bool {
        sluice_icu_knows_language(String(tag.map { $0 == "-" ? "_" : $0 })) != 0
    }
}
