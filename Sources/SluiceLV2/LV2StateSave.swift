import CLilv
import Glibc
import SluiceGraph

extension LV2World {
    /// Writes `instance`'s state and `controls` (port symbol → value) into `folder/state.ttl`
    /// with lilv, as jalv saves a state: files the plugin's state names are linked into the
    /// folder (copied when they cannot be). Under the world's lock, which only control-thread
    /// work on LV2 data waits on: never the cycle, never a client of another kind. [control-thread]
    func save(instance: LV2Instance, controls: [String: Float], into folder: String) throws(NodeStateError) {
        var values = PortValues(controls)
        defer { values.free() }
        let status: Int32? = Self.withStateFeatures(of: instance, scheduling: false) { features in
            withUnsafeMutablePointer(to: &values) { values in
                with { world -> Int32? in
                    let state = lilv_state_new_from_instance(
                        instance.plugin.lilv, instance.lilvInstance, URIDTable.mapFeature,
                        nil, folder, folder, folder,
                        { symbol, context, size, type in
                            // SAFETY: `context` is `values`, alive for the call; the value
                            // it points at lives as long as `values`.
                            guard let symbol, let context, let size, let type else { return nil }
                            return context.assumingMemoryBound(to: PortValues.self).pointee
                                .value(String(cString: symbol), size: size, type: type)
                        },
                        values, UInt32(LV2_STATE_IS_POD.rawValue | LV2_STATE_IS_PORTABLE.rawValue), features)
                    guard let state else { return nil }
                    defer { lilv_state_free(state) }
                    return lilv_state_save(world, URIDTable.mapFeature, URIDTable.unmapFeature, state, nil, folder, "state.ttl")
                }
            }
        }
        guard let status else { throw NodeStateError("the plugin gave no state to save") }
        guard status == 0 else { throw NodeStateError("lilv could not write the state into '\(folder)'") }
    }
}

/// The controls' values as lilv asks for them, one stable Float each.
private struct PortValues {
    private let symbols: [String]
    private let storage: UnsafeMutableBufferPointer<Float>
    private let floatType = URIDTable.map(LV2URI.atom + "Float")

    init(_ controls: [String: Float]) {
        symbols = Array(controls.keys)
        storage = .allocate(capacity: max(symbols.count, 1))
        for (index, symbol) in symbols.enumerated() { storage[index] = controls[symbol]! }
    }

    func value(_ symbol: String, size: UnsafeMutablePointer<UInt32>, type: UnsafeMutablePointer<UInt32>) -> UnsafeRawPointer? {
        guard let index = symbols.firstIndex(of: symbol) else { return nil }
        size.pointee = UInt32(MemoryLayout<Float>.size)
        type.pointee = floatType
        return UnsafeRawPointer(storage.baseAddress! + index)
    }

    func free() { storage.deallocate() }
}

/// Where a state is saved: a folder made for it, or one of the user's own.
enum StateFolder {
    /// Makes `folder` (mode 0755; its parent must exist) or checks the one there: an absolute
    /// path, a real folder (a link is refused, not followed), owned by this user.
    static func prepare(_ folder: String) throws(NodeStateError) {
        guard folder.hasPrefix("/") else {
            throw NodeStateError("'\(folder)' is not an absolute path; give the folder from the root (sluice ctl resolves a relative one)")
        }
        var status = stat()
        if lstat(folder, &status) == 0 {
            if status.st_mode & S_IFMT == S_IFLNK {
                throw NodeStateError("'\(folder)' is a symbolic link; a state is saved into a real folder, never through a link")
            }
            guard status.st_mode & S_IFMT == S_IFDIR else { throw NodeStateError("'\(folder)' exists and is not a folder") }
            guard status.st_uid == geteuid() else {
                throw NodeStateError("'\(folder)' belongs to another user (uid \(status.st_uid)); save into a folder of your own")
            }
            return
        }
        guard mkdir(folder, 0o755) == 0 else {
            throw NodeStateError("cannot make the folder '\(folder)': \(String(cString: strerror(errno)))")
        }
    }
}
