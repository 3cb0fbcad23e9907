import Foundation
import SluiceTestSupport

/// Prometheus' text format read by prometheus_client's parser (Python): each sample as
/// `name{labels}` (labels sorted, as written) to its value.
enum PrometheusText {
    static func parse(_ text: String) throws -> [String: Double] {
        let script = """
            import sys
            from prometheus_client.parser import text_string_to_metric_families
            for family in text_string_to_metric_families(sys.stdin.read()):
                for sample in family.samples:
                    labels = ",".join('%s="%s"' % (k, v) for k, v in sorted(sample.labels.items()))
                    print(sample.name + ("{" + labels + "}" if labels else ""), repr(float(sample.value)))
            """
        let outcome = try CommandRunner.run(
            executable: URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", script], timeout: 30, standardInput: Data(text.utf8))
        guard outcome.status == 0 else { throw TestFailure("prometheus_client refused /metrics: \(outcome.standardError)") }
        var samples: [String: Double] = [:]
        for line in outcome.standardOutput.split(separator: "\n") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            samples[String(line[..<space])] = value
        }
        return samples
    }
}
