import Foundation
import SluicePluginABI
import SluiceTestSupport
import Testing

/// Every ABI header compiles on its own as C11 and as C++17, with `-pedantic -Werror`, under
/// gcc/g++ and the toolchain's clang/clang++; so does the C plugin shipped with Sluice.
@Suite struct HeaderCompileTests {
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let includeFolder = packageRoot.appendingPathComponent("Sources/SluicePluginABI/include")

    static var headers: [String] {
        let folder = includeFolder.appendingPathComponent("sluice")
        return ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter { $0.hasSuffix(".h") }.sorted()
    }

    /// A compiler and the flags that make it strict in one language.
    struct Dialect: CustomStringConvertible, Sendable {
        var compiler: String
        var flags: [String]
        var description: String { ([compiler] + flags.prefix(2)).joined(separator: " ") }
    }

    static let dialects = [
        Dialect(compiler: "gcc", flags: ["-x", "c", "-std=c11"]),
        Dialect(compiler: "clang", flags: ["-x", "c", "-std=c11"]),
        Dialect(compiler: "g++", flags: ["-x", "c++", "-std=c++17"]),
        Dialect(compiler: "clang++", flags: ["-x", "c++", "-std=c++17"]),
    ]

    /// The compiler on PATH.
    static func find(_ program: String) throws -> URL {
        for folder in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
            let candidate = URL(fileURLWithPath: String(folder)).appendingPathComponent(program)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        throw CompilerMissing(program: program)
    }

    struct CompilerMissing: Error, CustomStringConvertible {
        var program: String
        var description: String { "'\(program)' is not on PATH" }
    }

    static func compile(_ source: String, as dialect: Dialect, extra: [String] = []) throws -> CommandRunner.Outcome {
        try CommandRunner.run(
            executable: find(dialect.compiler),
            dialect.flags + ["-pedantic", "-Wall", "-Wextra", "-Werror", "-I", includeFolder.path] + extra + ["-fsyntax-only", "-"],
            standardInput: Data(source.utf8))
    }

    @Test("the header set is the one the docs name")
    func headerSet() {
        #expect(Self.headers == [
            "common.h", "descriptor.h", "entry.h", "events.h", "factory.h", "processor.h", "provider.h", "sluice.h",
        ])
    }

    @Test("each header alone, strict C11 and C++17", arguments: dialects)
    func eachHeader(_ dialect: Dialect) throws {
        for header in Self.headers {
            let outcome = try Self.compile("#include <sluice/\(header)>\n", as: dialect)
            #expect(outcome.status == 0, "\(dialect): sluice/\(header)\n\(outcome.standardError)")
        }
    }

    @Test("a translation unit using every type, strict C11 and C++17", arguments: dialects)
    func everyType(_ dialect: Dialect) throws {
        let source = """
            #include <sluice/sluice.h>
            #include <string.h>
            static bool touch(const sluice_plugin_entry_t *entry, const sluice_node_factory_t *factory,
                              const sluice_provider_t *provider, const sluice_processor_t *processor) {
                sluice_error_t error;
                sluice_pcm_format_t format = {SLUICE_SAMPLE_S16LE, 24000, 1};
                sluice_param_value_t value;
                sluice_process_t process;
                sluice_param_event_t change;
                sluice_marker_event_t marker;
                const sluice_event_header_t *events[2];
                memset(&error, 0, sizeof error);
                memset(&value, 0, sizeof value);
                memset(&process, 0, sizeof process);
                memset(&change, 0, sizeof change);
                memset(&marker, 0, sizeof marker);
                change.header.kind = SLUICE_EVENT_PARAM;
                marker.header.kind = SLUICE_EVENT_MARKER;
                marker.marker = SLUICE_MARKER_TEXT_SPAN;
                marker.flags = SLUICE_MARKER_DISCONTINUOUS;
                events[0] = &change.header;
                events[1] = &marker.header;
                process.size = (uint32_t)sizeof process;
                process.event_count = 2;
                process.events = events;
                (void)format;
                return entry->abi_version == SLUICE_ABI_VERSION && SLUICE_ABI_VERSION_MIN <= SLUICE_ABI_VERSION
                    && factory->count != NULL
                    && provider->vtable->read != NULL && processor->vtable->process != NULL
                    && processor->vtable->size >= sizeof(sluice_processor_vtable_t)
                    && SLUICE_HAS_FIELD(&process, sluice_process_t, events)
                    && (SLUICE_PARAM_LIVE & 1u) != 0
                    && sizeof(sluice_node_descriptor_t) > 0 && SLUICE_READ_ERROR < 0 && SLUICE_PROCESS_ERROR < 0;
            }
            int main(void) { return touch(NULL, NULL, NULL, NULL) ? 1 : 0; }
            """
        let outcome = try Self.compile(source, as: dialect)
        #expect(outcome.status == 0, "\(dialect)\n\(outcome.standardError)")
    }

    @Test("the C ducker plugin compiles strictly as C11 (gcc and clang)", arguments: dialects.prefix(2))
    func duckerCompiles(_ dialect: Dialect) throws {
        let source = try String(contentsOf: Self.packageRoot.appendingPathComponent("Plugins/ducker/ducker.c"), encoding: .utf8)
        let outcome = try Self.compile(source, as: dialect)
        #expect(outcome.status == 0, "\(dialect)\n\(outcome.standardError)")
    }

    @Test("the C espeak provider compiles strictly as C11 (gcc and clang)", arguments: dialects.prefix(2))
    func espeakCompiles(_ dialect: Dialect) throws {
        let source = try String(contentsOf: Self.packageRoot.appendingPathComponent("Plugins/espeak/espeak.c"), encoding: .utf8)
        let outcome = try Self.compile(source, as: dialect)
        #expect(outcome.status == 0, "\(dialect)\n\(outcome.standardError)")
    }

    @Test("the values Swift sees match the header")
    func constants() {
        #expect(SLUICE_ABI_VERSION == 2)
        #expect(SLUICE_ABI_VERSION_MIN == 1)
        #expect(SLUICE_PLUGIN_ENTRY_SYMBOL == "sluice_plugin_entry")
        #expect(SLUICE_NODE_FACTORY_ID == "sluice.node-factory/1")
        #expect(MemoryLayout<sluice_error_t>.size == 512)
    }
}
