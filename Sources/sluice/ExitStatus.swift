import ArgumentParser
import Foundation
import SluiceGraph

/// The exit statuses every command uses, so a script, a CI job or a supervisor can tell what
/// happened without reading the messages.
enum ExitStatus {
    /// The command did what was asked.
    static let success: Int32 = 0
    /// It failed: the graph, a device, a file, or a node that failed during the run (what
    /// was received before the failure was still written or played, faded).
    static let failure: Int32 = 1
    /// The command line was wrong (an unknown option, a value out of range).
    static let usage: Int32 = 2
    /// A signal ended it (what was rendered or played so far was faded out): 130 for Ctrl-C
    /// (SIGINT), 143 for SIGTERM (what a service manager sends), as a shell reports them.
    static var interrupted: Int32 { InterruptHandler.lastSignal == SIGTERM ? 128 + SIGTERM : 128 + SIGINT }

    /// The table `sluice --help` shows.
    static let help = """
        Exit status: 0 success; 1 failure (a graph, device or file error, or a node that failed \
        during the run: the audio received before it is written or played, faded; --keep-going \
        makes that 0); 2 usage error; 130 interrupted (Ctrl-C); 143 terminated (SIGTERM, faded out as Ctrl-C).
        """
}

/// `--keep-going`, shared by the commands that run a graph.
struct FailureOptions: ParsableArguments {
    @Flag(name: .long, help: "Exit 0 when a node fails during the run (its partial audio still counts as the result).")
    var keepGoing = false

    /// [control-thread] Ends the command the way its report says: 130 when interrupted, 1 when a
    /// node failed (unless `--keep-going`), otherwise returns.
    func finish(_ report: RunReport) throws {
        if report.cancelled { throw ExitCode(ExitStatus.interrupted) }
        guard !report.failures.isEmpty else { return }
        for failure in report.failures {
            if keepGoing { log.warning("\(failure)") } else { printError("error: \(failure)") }
        }
        if !keepGoing {
            let nodes = report.failures.count == 1 ? "a node" : "\(report.failures.count) nodes"
            printError("error: \(nodes) failed; the audio received before the failure was kept, faded (--keep-going exits 0)")
            throw ExitCode(ExitStatus.failure)
        }
    }
}
