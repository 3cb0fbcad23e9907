import SluiceAudio
import SluicePlugins

/// The synthesis cache as a provider source sees it: entries keyed by the provider node's
/// type, its `model` and `voice` parameters, every other parameter, and the text.
struct ProviderCache: UtteranceAudioCache {
    let cache: SynthesisCache
    let provider: String
    let parameters: [String: String]

    func key(_ text: String) -> CacheKey {
        var settings = parameters
        let model = settings.removeValue(forKey: "model") ?? ""
        let voice = settings.removeValue(forKey: "voice") ?? ""
        return CacheKey(provider: provider, model: model, voice: voice, settings: settings, text: text)
    }

    func audio(for text: String, format: PCMFormat) -> [UInt8]? {
        guard let entry = cache.lookup(key(text)), entry.format == format else { return nil }
        return entry.bytes
    }

    func store(_ audio: [UInt8], for text: String, format: PCMFormat) {
        // A cache that cannot be written costs a synthesis next time, nothing more.
        try? cache.store(key(text), CachedAudio(format: format, bytes: audio))
    }
}
