import CJack
import Foundation
import SluiceRT
import Synchronization

/// Two-thread byte throughput of Sluice's SPSC ring against JACK's `jack_ringbuffer`.
///
/// Both rings are 65 536 bytes: ours with `capacity: 65_536` (all of it usable), JACK's with
/// `jack_ringbuffer_create(65_536)` (already a power of two, so not rounded up; 65 535 usable).
/// A producer thread writes whole chunks, a consumer thread reads whole chunks; whoever finds
/// the ring full or empty calls `sched_yield()` and tries again.
enum RingSuite {
    static let ringBytes = 65_536
    /// Runs move a whole number of these; the warm-up moves one.
    static let byteQuantum = 512 << 20
    static let chunkSizes = [(bytes: 1_024, name: "1KiB"), (bytes: 4_096, name: "4KiB")]

    static func run(runs: Int) {
        let cpus = allowedCPUs()
        note(cpus.count >= 2
            ? "producer pinned to CPU \(cpus[0]), consumer to CPU \(cpus[1])"
            : "fewer than two CPUs available: threads not pinned, figures are not comparable")
        for chunk in chunkSizes {
            let bench = "ring.\(chunk.name)"
            // Both rings live in cache and move tens of GB/s, so a fixed 512 MiB would take
            // a few milliseconds. The warm-up sizes the runs instead: the same byte count for
            // both sides, enough that the faster one takes at least `minimumRunSeconds`.
            let fastestWarmUp = min(
                sluiceTransfer(chunk: chunk.bytes, bytes: byteQuantum),
                jackTransfer(chunk: chunk.bytes, bytes: byteQuantum))
            let quanta = max(1, Int((minimumRunSeconds * 1.1 / fastestWarmUp).rounded(.up)))
            let bytesPerRun = quanta * byteQuantum
            note("\(bench): \(bytesPerRun >> 20) MiB per run through a \(ringBytes)-byte ring")
            let megabytesPerSecond = { (seconds: Double) in Double(bytesPerRun) / seconds / 1e6 }
            let medians = interleavedMedians(
                runs: runs, label: bench,
                sluice: { megabytesPerSecond(sluiceTransfer(chunk: chunk.bytes, bytes: bytesPerRun)) },
                reference: { megabytesPerSecond(jackTransfer(chunk: chunk.bytes, bytes: bytesPerRun)) })
            Figure(
                bench: bench, metric: "throughput", sluice: medians.sluice,
                reference: medians.reference, unit: "MB/s",
                referenceName: "jack_ringbuffer (libjack, jack_ringbuffer_create(65536))",
                runs: runs, goal: ">= 1.0"
            ).emit()
        }
    }

    // MARK: The two sides

    /// Seconds to move `bytes` through a fresh Sluice ring.
    static func sluiceTransfer(chunk: Int, bytes: Int) -> Double {
        let halves = makeRing(of: UInt8.self, capacity: ringBytes)
        let producerBox = Box(halves.producer)
        let consumerBox = Box(halves.consumer)
        return timeTransfer(
            chunk: chunk, bytes: bytes,
            producer: { startLine in
                var producer = producerBox.take()
                produce(chunk: chunk, total: bytes, startLine: startLine) { source, count in
                    producer.push(contentsOf: UnsafeBufferPointer(start: source, count: count))
                }
            },
            consumer: { startLine, check in
                var consumer = consumerBox.take()
                consume(chunk: chunk, total: bytes, startLine: startLine, check: check) { target, count in
                    consumer.pop(into: UnsafeMutableBufferPointer(start: target, count: count))
                }
            })
    }

    /// Seconds to move `bytes` through a fresh `jack_ringbuffer`.
    static func jackTransfer(chunk: Int, bytes: Int) -> Double {
        guard let created = jack_ringbuffer_create(ringBytes) else { fail("jack_ringbuffer_create failed") }
        defer { jack_ringbuffer_free(created) }
        let ring = JackRing(pointer: created)
        return timeTransfer(
            chunk: chunk, bytes: bytes,
            producer: { startLine in
                produce(chunk: chunk, total: bytes, startLine: startLine) { source, count in
                    // SAFETY: `source` holds `count` bytes; only this thread writes the ring.
                    source.withMemoryRebound(to: CChar.self, capacity: count) {
                        jack_ringbuffer_write(ring.pointer, $0, count)
                    }
                }
            },
            consumer: { startLine, check in
                consume(chunk: chunk, total: bytes, startLine: startLine, check: check) { target, count in
                    // SAFETY: `target` has room for `count` bytes; only this thread reads the ring.
                    target.withMemoryRebound(to: CChar.self, capacity: count) {
                        jack_ringbuffer_read(ring.pointer, $0, count)
                    }
                }
            })
    }

    // MARK: Shared transfer loop

    /// Runs a producer and a consumer thread, starting the clock once both are ready, and
    /// returns the seconds until both finished. Fails if any byte went missing or wrong.
    private static func timeTransfer(
        chunk: Int, bytes: Int,
        producer: @escaping @Sendable (StartLine) -> Void,
        consumer: @escaping @Sendable (StartLine, TransferCheck) -> Void
    ) -> Double {
        precondition(chunk >= 16 && bytes % chunk == 0, "a run moves whole chunks of 16 bytes or more")
        let startLine = StartLine()
        let check = TransferCheck()
        // One CPU each, so the two threads always run at once, as the JACK thread and the
        // graph worker do, and never time-share one CPU.
        let cpus = allowedCPUs()
        let (producerCPU, consumerCPU) = cpus.count >= 2 ? (cpus[0], cpus[1]) : (nil, nil)
        let threads = [
            JoinableThread {
                if let producerCPU { pinCurrentThread(toCPU: producerCPU) }
                producer(startLine)
            },
            JoinableThread {
                if let consumerCPU { pinCurrentThread(toCPU: consumerCPU) }
                consumer(startLine, check)
            },
        ]
        while startLine.ready.load(ordering: .acquiring) < threads.count { sched_yield() }
        let start = monotonicSeconds()
        startLine.go.store(true, ordering: .releasing)
        for thread in threads { thread.join() }
        let seconds = monotonicSeconds() - start

        let received = check.receivedBytes.load(ordering: .relaxed)
        let corrupt = check.corruptChunks.load(ordering: .relaxed)
        guard received == bytes, corrupt == 0 else {
            fail("ring transfer broken: \(received) of \(bytes) bytes arrived, \(corrupt) chunks corrupt")
        }
        return seconds
    }

    /// The byte at `index` of every chunk (after the 8-byte sequence stamp).
    @inline(__always)
    private static func patternByte(_ index: Int) -> UInt8 {
        UInt8(truncatingIfNeeded: index &* 31 &+ 7)
    }

    /// Writes `total` bytes as whole `chunk`-byte chunks, each stamped with its sequence
    /// number, retrying partial writes. `write` returns how many bytes it took.
    @inline(__always)
    private static func produce(
        chunk: Int, total: Int, startLine: StartLine,
        write: (UnsafePointer<UInt8>, Int) -> Int
    ) {
        // Cache-line aligned, so the copies' alignment is the same in every run and on both sides.
        let source = UnsafeMutableRawPointer.allocate(byteCount: chunk, alignment: 64)
            .bindMemory(to: UInt8.self, capacity: chunk)
        defer { source.deallocate() }
        for index in 0..<chunk {
            // SAFETY: index < chunk, the buffer's size; UInt8 needs no deinitialisation.
            (source + index).initialize(to: patternByte(index))
        }
        startLine.arriveAndWait()

        var sequence: UInt64 = 0
        for _ in 0..<(total / chunk) {
            // SAFETY: chunks are at least 8 bytes; the stamp goes in their first 8. Below,
            // written < chunk, so `source + written` has `chunk - written` bytes behind it.
            UnsafeMutableRawPointer(source).storeBytes(of: sequence, as: UInt64.self)
            var written = 0
            while written < chunk {
                let taken = write(source + written, chunk - written)
                if taken == 0 { sched_yield() }
                written += taken
            }
            sequence &+= 1
        }
    }

    /// Reads `total` bytes as whole chunks, checking each one's sequence stamp and last byte,
    /// and records what arrived in `check`. `read` returns how many bytes it copied out.
    @inline(__always)
    private static func consume(
        chunk: Int, total: Int, startLine: StartLine, check: TransferCheck,
        read: (UnsafeMutablePointer<UInt8>, Int) -> Int
    ) {
        let target = UnsafeMutableRawPointer.allocate(byteCount: chunk, alignment: 64)
            .bindMemory(to: UInt8.self, capacity: chunk)
        defer { target.deallocate() }
        target.initialize(repeating: 0, count: chunk)
        startLine.arriveAndWait()

        var received = 0
        var corrupt = 0
        for sequence in 0..<UInt64(total / chunk) {
            // SAFETY: filled < chunk, so `target + filled` has room for `chunk - filled` bytes.
            var filled = 0
            while filled < chunk {
                let copied = read(target + filled, chunk - filled)
                if copied == 0 { sched_yield() }
                filled += copied
            }
            received += filled
            // SAFETY: the chunk buffer holds `chunk` (>= 16) initialised bytes.
            let stamp = UnsafeRawPointer(target).loadUnaligned(as: UInt64.self)
            let middle = chunk / 2
            if stamp != sequence || target[middle] != patternByte(middle)
                || target[chunk - 1] != patternByte(chunk - 1)
            {
                corrupt += 1
            }
        }
        check.receivedBytes.store(received, ordering: .relaxed)
        check.corruptChunks.store(corrupt, ordering: .relaxed)
    }
}

/// Lets both threads finish their setup before the clock starts.
private final class StartLine: Sendable {
    let ready = Atomic<Int>(0)
    let go = Atomic<Bool>(false)

    func arriveAndWait() {
        ready.add(1, ordering: .releasing)
        while !go.load(ordering: .acquiring) { sched_yield() }
    }
}

/// What the consumer saw; read after the threads are joined.
private final class TransferCheck: Sendable {
    let receivedBytes = Atomic<Int>(0)
    let corruptChunks = Atomic<Int>(0)
}

/// A `jack_ringbuffer` shared by the producer and consumer threads.
private struct JackRing: @unchecked Sendable {
    // SAFETY (@unchecked Sendable): jack_ringbuffer is lock-free SPSC: one thread only writes,
    // the other only reads, and the ring is freed after both are joined.
    let pointer: UnsafeMutablePointer<jack_ringbuffer_t>
}
