import Foundation
import Synchronization

/// Ctrl-C for the commands that run a graph. The first SIGINT calls the command's cancel,
/// which fades out and ends the run cleanly (a file stays complete and playable). Should that
/// not finish within `grace` — a JACK server that hung renders no fade, so the run would wait
/// for it forever — the process exits 130 anyway. A second SIGINT exits 130 at once.
final class InterruptHandler {
    /// How long a cancelled run may take to fade out and close, beyond which it is ended.
    static let grace = 1.0

    private let source: any DispatchSourceSignal
    private let signals = SignalCount()

    /// The SIGINTs so far, shared with the signal handler.
    private final class SignalCount: Sendable {
        let value = Atomic<Int>(0)
    }

    /// [control-thread] Takes over SIGINT until `stop()`.
    init(cancel: @escaping @Sendable () -> Void) {
        signal(SIGINT, SIG_IGN)
        source = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        let signals = signals
        source.setEventHandler {
            if signals.value.add(1, ordering: .relaxed).newValue > 1 { Self.exitNow("interrupted again: exiting at once") }
            cancel()
            DispatchQueue.global().asyncAfter(deadline: .now() + Self.grace) {
                Self.exitNow("interrupted: the run did not end within \(Self.grace) s of Ctrl-C (is the JACK server hung?); exiting")
            }
        }
        source.resume()
    }

    /// Whether Ctrl-C was pressed.
    var interrupted: Bool { signals.value.load(ordering: .relaxed) > 0 }

    /// [control-thread] The run ended: Ctrl-C is the shell's again.
    func stop() {
        source.cancel()
        signal(SIGINT, SIG_DFL)
    }

    /// Ends the process without unwinding (the thread that would unwind may be the one stuck).
    private static func exitNow(_ message: String) -> Never {
        FileHandle.standardError.write(Data((message + "\n").utf8))
        _exit(ExitStatus.interrupted)
    }
}
