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

    @Test("the C espeak provider and its engine process compile strictly as C11 (gcc and clang)", arguments: dialects.prefix(2))
    func espeakCompiles(_ dialect: Dialect) throws {
        let folder = Self.packageRoot.appendingPathComponent("Plugins/espeak")
        for file in ["espeak.c", "engines.c", "engine/main.c"] {
            let source = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            // From standard input, so quoted includes are searched for in the plugin's folder.
            let outcome = try Self.compile(source, as: dialect, extra: ["-I", folder.path, "-I", folder.appendingPathComponent("engine").path])
            #expect(outcome.status == 0, "\(dialect): \(file)\n\(outcome.standardError)")
        }
    }

    /// Version 1's structs, field by field (Tests/Fixtures/Plugins/abi-v1/sluice-v1 keeps its headers).
    static let versionOneFields: [(type: String, fields: [String], grew: Bool)] = [
        ("sluice_param_descriptor_t", [
            "name", "type", "minimum", "maximum", "choices", "choice_count", "required", "has_default", "default_value",
            "unit", "summary",
        ], true),
        ("sluice_node_descriptor_t", [
            "type_name", "kind", "summary", "inputs", "input_count", "outputs", "output_count", "params", "param_count",
        ], true),
        ("sluice_process_t", ["position", "frames", "channels", "input_count", "output_count", "inputs", "outputs"], true),
        ("sluice_processor_vtable_t", ["activate", "process", "reset", "deactivate", "destroy"], true),
        ("sluice_provider_vtable_t", [
            "get_format", "begin_utterance", "push_text", "end_utterance", "end_text", "read", "cancel", "destroy",
            "get_counters", "get_capabilities",
        ], true),
        ("sluice_plugin_entry_t", ["abi_version", "init", "deinit", "get_factory"], false),
        ("sluice_node_factory_t", ["count", "get_descriptor", "create_provider", "create_processor"], false),
        ("sluice_port_descriptor_t", ["name", "medium", "summary"], false),
        ("sluice_param_value_t", ["name", "type", "value"], false),
        ("sluice_value_t", ["number", "integer", "boolean", "string"], false),
        ("sluice_error_t", ["code", "message"], false),
        ("sluice_pcm_format_t", ["sample_format", "sample_rate", "channels"], false),
        ("sluice_counter_t", ["name", "value"], false),
        ("sluice_provider_t", ["instance", "vtable"], false),
        ("sluice_processor_t", ["instance", "vtable"], false),
    ]

    /// Compiles `source` with gcc and runs it; its standard output.
    static func runC(_ source: String, include: String, in folder: TemporaryFolder, name: String) throws -> String {
        let file = try folder.write(source, to: name + ".c")
        let program = folder.path(name)
        let compiled = try CommandRunner.run(
            executable: find("gcc"), ["-std=c11", "-Wall", "-Werror", "-I", include, "-o", program, file.path])
        #expect(compiled.status == 0, "\(compiled.standardError)")
        let ran = try CommandRunner.run(executable: URL(fileURLWithPath: program), [])
        #expect(ran.status == 0)
        return ran.standardOutput
    }

    @Test("version 2 keeps every field of version 1 where it was, and a grown struct's `size` begins where version 1's fields ended")
    func versionOneIsAPrefix() throws {
        let folder = TemporaryFolder()
        var lines = ""
        for (type, fields, _) in Self.versionOneFields {
            for field in fields {
                lines += "    printf(\"\(type).\(field) %zu %zu\\n\", offsetof(\(type), \(field)), sizeof(((\(type) *)0)->\(field)));\n"
            }
        }
        func program(_ header: String) -> String {
            "#include <stdio.h>\n#include <stddef.h>\n#include \"\(header)\"\nint main(void) {\n\(lines)    return 0;\n}\n"
        }
        let versionOne = try Self.runC(
            program("sluice-v1/sluice.h"), include: Self.packageRoot.appendingPathComponent("Tests/Fixtures/Plugins/abi-v1").path,
            in: folder, name: "v1")
        let versionTwo = try Self.runC(program("sluice/sluice.h"), include: Self.includeFolder.path, in: folder, name: "v2")
        #expect(!versionOne.isEmpty)
        #expect(versionOne == versionTwo)

        // Where version 1's fields ended: `size` for the structs that grew, the whole struct
        // (same size in both) for the others.
        var ends: [String: Int] = [:]
        for line in versionOne.split(separator: "\n") {
            let parts = line.split(separator: " ")
            let type = String(parts[0].split(separator: ".")[0])
            ends[type] = max(ends[type] ?? 0, Int(parts[1])! + Int(parts[2])!)
        }
        var checks = ""
        for (type, _, grew) in Self.versionOneFields {
            checks += grew
                ? "    printf(\"\(type) %zu\\n\", offsetof(\(type), size));\n"
                : "    printf(\"\(type) %zu\\n\", sizeof(\(type)));\n"
        }
        let source = "#include <stdio.h>\n#include <stddef.h>\n#include \"sluice/sluice.h\"\nint main(void) {\n\(checks)    return 0;\n}\n"
        let sizes = try Self.runC(source, include: Self.includeFolder.path, in: folder, name: "sizes")
        for line in sizes.split(separator: "\n") {
            let parts = line.split(separator: " ")
            let type = String(parts[0])
            let grew = Self.versionOneFields.first { $0.type == type }!.grew
            let versionOneEnd = ends[type]!
            if grew {
                #expect(Int(parts[1]) == versionOneEnd, "\(type): size at \(parts[1]), version 1 ended at \(versionOneEnd)")
            } else {
                // Unchanged structs: as large as their fields plus the padding both versions share.
                #expect(Int(parts[1])! >= versionOneEnd, "\(type)")
            }
        }
        let unchangedSizes = try Self.runC(
            source.replacingOccurrences(of: "sluice/sluice.h", with: "sluice-v1/sluice.h")
                .split(separator: "\n").filter { line in
                    !Self.versionOneFields.filter(\.grew).contains { line.contains("offsetof(\($0.type), size)") }
                }.joined(separator: "\n"),
            include: Self.packageRoot.appendingPathComponent("Tests/Fixtures/Plugins/abi-v1").path, in: folder, name: "v1sizes")
        for line in unchangedSizes.split(separator: "\n") {
            #expect(sizes.split(separator: "\n").contains(line), "\(line): the same size in both versions")
        }
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
