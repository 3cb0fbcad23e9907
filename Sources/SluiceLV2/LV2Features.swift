import CLilv
import Glibc
import Synchronization

/// The host features Sluice gives every LV2 instance, and the URID table behind map/unmap.
///
/// Provided: urid:map and urid:unmap, options:options (sample rate, block lengths, atom
/// sequence size), buf-size:boundedBlockLength (`run` is never given more than
/// `LV2Node.blockFrames`), work:schedule (`LV2Worker`), log:log (`LV2Log`), and at restore
/// state:mapPath and state:freePath (lilv's). state:loadDefaultState is honoured: the plugin's
/// default state is restored after instantiation. A plugin requiring anything else is
/// refused by `sluice check`, naming what it requires.
enum LV2Features {
    static let supported: Set<String> = [
        LV2URI.urid + "map", LV2URI.urid + "unmap",
        LV2URI.options + "options",
        LV2URI.bufSize + "boundedBlockLength",
        LV2URI.worker + "schedule",
        LV2URI.log + "log",
        LV2URI.state + "loadDefaultState", LV2URI.state + "mapPath", LV2URI.state + "freePath",
        LV2URI.core + "hardRTCapable", LV2URI.core + "inPlaceBroken", LV2URI.core + "isLive",
    ]
}

/// Every URI a plugin has mapped, process-wide (as jalv keeps one table per host): map takes
/// a lock, so plugins call it when instantiated, as the URID specification expects, not in
/// `run`.
enum URIDTable {
    private struct Table {
        var ids: [String: LV2_URID] = [:]
        /// Strings unmap returns; kept for the process's life, so their pointers stay valid.
        var uris: [UnsafeMutablePointer<CChar>] = []
    }
    private static let table = Mutex(Table())

    /// The URID of `uri`, 1 upward. [any non-real-time thread]
    static func map(_ uri: String) -> LV2_URID {
        table.withLock { table in
            if let id = table.ids[uri] { return id }
            table.uris.append(strdup(uri))
            let id = LV2_URID(table.uris.count)
            table.ids[uri] = id
            return id
        }
    }

    static func unmap(_ id: LV2_URID) -> UnsafePointer<CChar>? {
        table.withLock { table in
            guard id >= 1, Int(id) <= table.uris.count else { return nil }
            return UnsafePointer(table.uris[Int(id) - 1])
        }
    }

    /// The features' structs: one pair for the whole process.
    nonisolated(unsafe) static let mapFeature: UnsafeMutablePointer<LV2_URID_Map> = {
        let map = UnsafeMutablePointer<LV2_URID_Map>.allocate(capacity: 1)
        map.initialize(to: LV2_URID_Map(handle: nil, map: { _, uri in
            guard let uri else { return 0 }
            return URIDTable.map(String(cString: uri))
        }))
        return map
    }()

    nonisolated(unsafe) static let unmapFeature: UnsafeMutablePointer<LV2_URID_Unmap> = {
        let unmap = UnsafeMutablePointer<LV2_URID_Unmap>.allocate(capacity: 1)
        unmap.initialize(to: LV2_URID_Unmap(handle: nil, unmap: { _, id in URIDTable.unmap(id) }))
        return unmap
    }()
}

/// One instance's feature array, and the structs it points at, alive as long as the instance.
final class LV2FeatureSet {
    /// The null-terminated array `lilv_plugin_instantiate` takes.
    let array: UnsafeMutablePointer<UnsafePointer<LV2_Feature>?>
    private var allocations: [UnsafeMutableRawPointer] = []
    private var features: [UnsafeMutablePointer<LV2_Feature>] = []

    /// - Parameters: `worker` and `log` back work:schedule and log:log.
    init(rate: Int, maximumBlock: Int, nominalBlock: Int, sequenceSize: Int, worker: LV2Worker, log: LV2Log) {
        var entries: [(String, UnsafeMutableRawPointer?)] = [
            (LV2URI.urid + "map", UnsafeMutableRawPointer(URIDTable.mapFeature)),
            (LV2URI.urid + "unmap", UnsafeMutableRawPointer(URIDTable.unmapFeature)),
            (LV2URI.bufSize + "boundedBlockLength", nil),
            (LV2URI.state + "loadDefaultState", nil),
            (LV2URI.worker + "schedule", UnsafeMutableRawPointer(worker.schedule)),
            (LV2URI.log + "log", UnsafeMutableRawPointer(log.feature)),
        ]

        // Options: the values' storage first, then the list pointing at it.
        let rateValue = UnsafeMutablePointer<Float>.allocate(capacity: 1)
        rateValue.initialize(to: Float(rate))
        let blockValues = UnsafeMutablePointer<Int32>.allocate(capacity: 4)
        blockValues.initialize(from: [1, Int32(maximumBlock), Int32(nominalBlock), Int32(sequenceSize)], count: 4)
        allocations += [UnsafeMutableRawPointer(rateValue), UnsafeMutableRawPointer(blockValues)]
        let floatType = URIDTable.map(LV2URI.atom + "Float")
        let intType = URIDTable.map(LV2URI.atom + "Int")
        func option(_ key: String, _ type: LV2_URID, _ value: UnsafeRawPointer, size: Int) -> LV2_Options_Option {
            LV2_Options_Option(
                context: LV2_OPTIONS_INSTANCE, subject: 0, key: URIDTable.map(key),
                size: UInt32(size), type: type, value: value)
        }
        let options = UnsafeMutablePointer<LV2_Options_Option>.allocate(capacity: 6)
        options.initialize(from: [
            option(LV2URI.parameters + "sampleRate", floatType, rateValue, size: 4),
            option(LV2URI.bufSize + "minBlockLength", intType, blockValues, size: 4),
            option(LV2URI.bufSize + "maxBlockLength", intType, blockValues + 1, size: 4),
            option(LV2URI.bufSize + "nominalBlockLength", intType, blockValues + 2, size: 4),
            option(LV2URI.bufSize + "sequenceSize", intType, blockValues + 3, size: 4),
            LV2_Options_Option(context: LV2_OPTIONS_INSTANCE, subject: 0, key: 0, size: 0, type: 0, value: nil),
        ], count: 6)
        allocations.append(UnsafeMutableRawPointer(options))
        entries.append((LV2URI.options + "options", UnsafeMutableRawPointer(options)))

        array = .allocate(capacity: entries.count + 1)
        for (index, (uri, data)) in entries.enumerated() {
            let feature = UnsafeMutablePointer<LV2_Feature>.allocate(capacity: 1)
            feature.initialize(to: LV2_Feature(URI: UnsafePointer(strdup(uri)), data: data))
            features.append(feature)
            array[index] = UnsafePointer(feature)
        }
        array[entries.count] = nil
    }

    deinit {
        for feature in features {
            free(UnsafeMutableRawPointer(mutating: feature.pointee.URI))
            feature.deallocate()
        }
        array.deallocate()
        for allocation in allocations { allocation.deallocate() }
    }
}
