import Foundation
import Glibc

/// A one-line progress bar on standard error, drawn only when standard error is a terminal.
final class ProgressBar {
    private let enabled = isatty(STDERR_FILENO) == 1
    private var lastDrawn = -1

    func update(_ fraction: Double) {
        guard enabled else { return }
        let percent = Int((min(max(fraction, 0), 1) * 100).rounded(.down))
        guard percent != lastDrawn else { return }
        lastDrawn = percent
        let width = 40
        let filled = width * percent / 100
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        FileHandle.standardError.write(Data("\r[\(bar)] \(percent)%".utf8))
    }

    func finish() {
        guard enabled, lastDrawn >= 0 else { return }
        FileHandle.standardError.write(Data("\n".utf8))
    }
}
