import CLilv
import Foundation
import Logging
import SluiceGraph
import SluiceRT
import Synchronization

/// The LV2 worker (work:schedule) for one plugin instance: what the plugin schedules from
/// `run` goes through a lock-free ring to a thread of its own, which calls the plugin's
/// `work`; the responses come back through a second ring and are handed to the plugin's
/// `work_response` at the start of its next `run`, in the cycle, before `end_run` (the
/// specification's order, as jalv implements it).
///
/// Work scheduled while state is restored (when the node is prepared, never while it runs)
/// is done at once on the restoring thread, as jalv does it: the responses are delivered by
/// the first `run`, so an offline render is the same every time.
final class LV2Worker: @unchecked Sendable {
    // SAFETY (@unchecked Sendable): `requests`' producer is used by the real-time thread (in
    // `run`), its consumer and `responses`' producer by the worker thread, or by the control
    // thread while the node is prepared and not running; `responses`' consumer by the
    // real-time thread. The semaphore and the join orders each hand-over.

    /// The largest request or response a plugin may pass; more is refused (LV2_WORKER_ERR_NO_SPACE).
    static let messageLimit = 16 * 1024
    static let ringCapacity = 64 * 1024

    /// The structs the features point at (threaded, and at once for restore).
    let schedule: UnsafeMutablePointer<LV2_Worker_Schedule>
    let immediateSchedule: UnsafeMutablePointer<LV2_Worker_Schedule>

    private var requestsOut: RingProducer<UInt8>
    private var requestsIn: RingConsumer<UInt8>
    private var responsesOut: RingProducer<UInt8>
    private var responsesIn: RingConsumer<UInt8>
    private let requestScratch = UnsafeMutableRawBufferPointer.allocate(byteCount: LV2Worker.messageLimit, alignment: 16)
    private let responseScratch = UnsafeMutableRawBufferPointer.allocate(byteCount: LV2Worker.messageLimit, alignment: 16)
    private let wake = WakeSignal()
    private let stopped = WakeSignal()
    private let stopping = Atomic(false)
    private var running = false
    /// The plugin's side, set once instantiated.
    private var interface: UnsafePointer<LV2_Worker_Interface>?
    private var handle: LV2_Handle?
    /// Drained on the worker thread each time it wakes.
    let log: LV2Log

    init(log: LV2Log) {
        self.log = log
        let requests = makeRing(of: UInt8.self, capacity: Self.ringCapacity)
        requestsOut = requests.producer
        requestsIn = requests.consumer
        let responses = makeRing(of: UInt8.self, capacity: Self.ringCapacity)
        responsesOut = responses.producer
        responsesIn = responses.consumer
        schedule = .allocate(capacity: 1)
        immediateSchedule = .allocate(capacity: 1)
        let context = Unmanaged.passUnretained(self).toOpaque()
        schedule.initialize(to: LV2_Worker_Schedule(handle: context, schedule_work: { context, size, data in
            // SAFETY: `context` is this worker, which outlives the instance (LV2Instance).
            Unmanaged<LV2Worker>.fromOpaque(context!)._withUnsafeGuaranteedRef { $0.enqueue(size: size, data: data) }
        }))
        immediateSchedule.initialize(to: LV2_Worker_Schedule(handle: context, schedule_work: { context, size, data in
            // SAFETY: as above; called only while the node is prepared.
            Unmanaged<LV2Worker>.fromOpaque(context!)._withUnsafeGuaranteedRef { $0.work(size: size, data: data) }
        }))
        log.wake = wake
    }

    deinit {
        stop()
        schedule.deallocate()
        immediateSchedule.deallocate()
        requestScratch.deallocate()
        responseScratch.deallocate()
    }

    /// Connects the plugin's worker interface (nil when it has none) and starts the thread.
    /// [control-thread]
    func start(interface: UnsafePointer<LV2_Worker_Interface>?, handle: LV2_Handle?) {
        self.interface = interface
        self.handle = handle
        guard !running else { return }
        running = true
        stopping.store(false, ordering: .relaxed)
        let thread = Thread { [self] in serve() }
        thread.name = "sluice lv2 worker"
        thread.start()
    }

    /// Ends the thread and waits for it. [control-thread]
    func stop() {
        guard running else { return }
        stopping.store(true, ordering: .releasing)
        wake.post()
        stopped.wait(timeout: 10)
        running = false
    }

    // MARK: Real-time side

    /// work:schedule from `run`: the request into the ring, the thread woken. [audio-thread]
    private func enqueue(size: UInt32, data: UnsafeRawPointer?) -> LV2_Worker_Status {
        guard interface != nil, Int(size) <= Self.messageLimit, size == 0 || data != nil else { return LV2_WORKER_ERR_UNKNOWN }
        guard Self.push(size: size, data: data, into: &requestsOut) else { return LV2_WORKER_ERR_NO_SPACE }
        wake.post()
        return LV2_WORKER_SUCCESS
    }

    /// Hands every response waiting to the plugin. [audio-thread, before `run`]
    @inline(__always)
    func deliverResponses() {
        guard let interface, let respond = interface.pointee.work_response else { return }
        while let size = Self.pop(from: &responsesIn, into: responseScratch) {
            _ = respond(handle, UInt32(size), responseScratch.baseAddress)
        }
    }

    /// [audio-thread, after `run`]
    @inline(__always)
    func endRun() {
        guard let endRun = interface?.pointee.end_run else { return }
        _ = endRun(handle)
    }

    // MARK: Worker side

    private func serve() {
        while true {
            wake.wait(timeout: 1)
            while let size = Self.pop(from: &requestsIn, into: requestScratch) {
                _ = work(size: UInt32(size), data: requestScratch.baseAddress)
            }
            log.drain()
            if stopping.load(ordering: .acquiring) { break }
        }
        stopped.post()
    }

    /// The plugin's `work`, its responses queued for the cycle. [worker thread, or the
    /// control thread while prepared]
    private func work(size: UInt32, data: UnsafeRawPointer?) -> LV2_Worker_Status {
        guard let work = interface?.pointee.work else { return LV2_WORKER_ERR_UNKNOWN }
        let context = Unmanaged.passUnretained(self).toOpaque()
        return work(handle, { context, size, data in
            // SAFETY: `context` is this worker, alive for the call.
            Unmanaged<LV2Worker>.fromOpaque(context!)._withUnsafeGuaranteedRef { worker in
                guard Int(size) <= LV2Worker.messageLimit, size == 0 || data != nil else { return LV2_WORKER_ERR_UNKNOWN }
                return LV2Worker.push(size: size, data: data, into: &worker.responsesOut)
                    ? LV2_WORKER_SUCCESS : LV2_WORKER_ERR_NO_SPACE
            }
        }, context, size, data)
    }

    // MARK: Framing

    /// A message as its size (4 bytes) and its bytes, all or nothing.
    private static func push(size: UInt32, data: UnsafeRawPointer?, into producer: inout RingProducer<UInt8>) -> Bool {
        var length = size
        return withUnsafeBytes(of: &length) { header in
            producer.pushMessage(header: header, body: UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : Int(size)))
        }
    }

    /// The next message into `scratch`, or nil when none is waiting.
    private static func pop(from consumer: inout RingConsumer<UInt8>, into scratch: UnsafeMutableRawBufferPointer) -> Int? {
        consumer.popMessage(UInt32.self, into: scratch) { Int($0) }?.length
    }
}

/// log:log for one plugin instance. A line logged from the real-time thread goes through a
/// lock-free ring and reaches Sluice's log from the worker thread; from any other thread it
/// is logged at once.
final class LV2Log: @unchecked Sendable {
    // SAFETY (@unchecked Sendable): the ring's producer is used only by the real-time thread
    // (`realtimeThread`), its consumer only by the worker thread; `target` never moves.

    let feature: UnsafeMutablePointer<LV2_Log_Log>
    private let target: UnsafeMutablePointer<sluice_lv2_log_target>
    private var linesOut: RingProducer<UInt8>
    private var linesIn: RingConsumer<UInt8>
    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 1024, alignment: 16)
    /// The thread running the instance's cycle, set at the start of each render.
    let realtimeThread = Atomic<UInt>(0)
    /// Lines the ring had no room for.
    let droppedLines = Atomic(0)
    /// Posted when a line is queued (the worker thread drains).
    var wake: WakeSignal?
    private let logger: Logger
    private let errorType = URIDTable.map(LV2URI.log + "Error")
    private let warningType = URIDTable.map(LV2URI.log + "Warning")
    private let traceType = URIDTable.map(LV2URI.log + "Trace")

    init(plugin: String) {
        var logger = Logger(label: "sluice.lv2")
        logger[metadataKey: "plugin"] = .string(plugin)
        self.logger = logger
        let lines = makeRing(of: UInt8.self, capacity: 16 * 1024)
        linesOut = lines.producer
        linesIn = lines.consumer
        feature = .allocate(capacity: 1)
        target = .allocate(capacity: 1)
        target.initialize(to: sluice_lv2_log_target(sink: { context, type, line, length in
            // SAFETY: `context` is this log, which outlives the instance.
            Unmanaged<LV2Log>.fromOpaque(context!)._withUnsafeGuaranteedRef { log in
                log.receive(type: type, line: line!, length: Int(length))
            }
        }, context: Unmanaged.passUnretained(self).toOpaque()))
        sluice_lv2_log_init(feature, target)
    }

    deinit {
        feature.deallocate()
        target.deallocate()
        scratch.deallocate()
    }

    private func receive(type: LV2_URID, line: UnsafePointer<CChar>, length: Int) {
        if pthread_self() == realtimeThread.load(ordering: .relaxed) {
            let count = min(length, scratch.count)
            var header = (UInt32(type), UInt32(count))
            let queued = withUnsafeBytes(of: &header) { header in
                linesOut.pushMessage(header: header, body: UnsafeRawBufferPointer(start: line, count: count))
            }
            guard queued else {
                droppedLines.add(1, ordering: .relaxed)
                return
            }
            wake?.post()
        } else {
            emit(type: type, text: String(decoding: UnsafeRawBufferPointer(start: line, count: length), as: UTF8.self))
        }
    }

    /// Every queued line into Sluice's log. [worker thread]
    func drain() {
        while let (header, count) = linesIn.popMessage((UInt32, UInt32).self, into: scratch, bodyLength: { Int($0.1) }) {
            emit(type: header.0, text: String(decoding: UnsafeRawBufferPointer(rebasing: scratch[..<count]), as: UTF8.self))
        }
        let dropped = droppedLines.exchange(0, ordering: .relaxed)
        if dropped > 0 { logger.warning("\(dropped) log lines from the plugin's cycle were dropped (the queue was full)") }
    }

    private func emit(type: LV2_URID, text: String) {
        let message = Logger.Message(stringLiteral: text.hasSuffix("\n") ? String(text.dropLast()) : text)
        switch type {
        case errorType: logger.error(message)
        case warningType: logger.warning(message)
        case traceType: logger.trace(message)
        default: logger.info(message)
        }
    }
}
