import Foundation
import Synchronization

/// Ctrl-C and SIGTERM for the commands that run a graph. The first SIGINT or SIGTERM calls the
/// command's cancel, which fades out and ends the run cleanly (a file stays complete and
/// playable). Should that not finish within `grace` — a JACK server that hung renders no fade,
/// so the run would wait for it forever — the process exits anyway, 130 after SIGINT and 143
/// after SIGTERM (`ExitStatus.interrupted`). A second signal exits at once.
final class InterruptHandler {
    /// The last of SIGINT and SIGTERM received (0: none); it decides the exit status.
    static var lastSignal: Int32 { received.load(ordering: .relaxed) }
    private static let received = Atomic<Int32>(0)

    /// How long a cancelled run may take to fade out and close, beyond which it is ended.
    static let grace = 1.0

    private let sources: [any DispatchSourceSignal]
    private let signals = SignalCount()

    /// The SIGINTs so far, shared with the signal handler.
    private final class SignalCount: Sendable {
        let value = Atomic<Int>(0)
    }

    /// [control-thread] Takes over SIGINT and SIGTERM until `stop()`.
    init(cancel: @escaping @Sendable () -> Void) {
        let signals = signals
        sources = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                Self.received.store(number, ordering: .relaxed)
                let word = number == SIGTERM ? "terminated" : "interrupted"
                if signals.value.add(1, ordering: .relaxed).newValue > 1 { Self.exitNow("\(word) again: exiting at once") }
                cancel()
                DispatchQueue.global().asyncAfter(deadline: .now() + Self.grace) {
                    Self.exitNow("\(word): the run did not end within \(Self.grace) s of \(number == SIGTERM ? "SIGTERM" : "Ctrl-C") (is the JACK server hung?); exiting")
                }
            }
            source.resume()
            return source
        }
    }

    /// Whether Ctrl-C was pressed (or SIGTERM came).
    var interrupted: Bool { signals.value.load(ordering: .relaxed) > 0 }

    /// [control-thread] The run ended: Ctrl-C is the shell's again.
    func stop() {
        for source in sources { source.cancel() }
        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)
    }

    /// Ends the process without unwinding (the thread that would unwind may be the one stuck).
    private static func exitNow(_ message: String) -> Never {
        FileHandle.standardError.write(Data((message + "\n").utf8))
        _exit(ExitStatus.interrupted)
    }
}
