import Foundation
import SluiceRT
import SluiceTestSupport
import Testing

@Suite("Ring buffer")
struct RingTests {
    /// Pushes and pops random-sized runs through a ring of `capacity`, comparing every result
    /// with a plain array used as a queue. Thousands of steps wrap the positions many times.
    @Test("random pushes and pops match a model queue", arguments: [0, 1, 2, 3, 1000])
    func matchesModel(capacity: Int) {
        let ring = makeRing(of: Int32.self, capacity: capacity)
        var producer = ring.producer
        var consumer = ring.consumer
        var model: [Int32] = []
        var modelHead = 0
        var next: Int32 = 0
        var generator = SeededGenerator(seed: UInt64(capacity) + 1)

        for step in 0..<20_000 {
            let size = Int.random(in: 0...(capacity + 2), using: &generator)
            if step % 2 == 0 {
                let values = (0..<size).map { next + Int32($0) }
                let pushed = values.withUnsafeBufferPointer { producer.push(contentsOf: $0) }
                let expected = min(size, capacity - (model.count - modelHead))
                #expect(pushed == expected)
                model += values.prefix(pushed)
                next += Int32(pushed)
            } else {
                var out = [Int32](repeating: -1, count: size)
                let popped = out.withUnsafeMutableBufferPointer { consumer.pop(into: $0) }
                let expected = min(size, model.count - modelHead)
                #expect(popped == expected)
                #expect(Array(out.prefix(popped)) == Array(model[modelHead..<modelHead + popped]))
                modelHead += popped
            }
            let free = producer.availableSlots()
            let ready = consumer.availableElements()
            #expect(free == capacity - (model.count - modelHead))
            #expect(ready == model.count - modelHead)
        }
    }

    @Test("capacity 0 refuses every push and pops nothing")
    func capacityZero() {
        let ring = makeRing(of: UInt8.self, capacity: 0)
        var producer = ring.producer
        var consumer = ring.consumer
        let pushed = producer.push(7)
        let popped = consumer.pop()
        let regions = producer.writableRegions()
        #expect(!pushed)
        #expect(popped == nil)
        let capacity = producer.capacity
        #expect(regions.count == 0)
        #expect(capacity == 0)
    }

    @Test("single pushes fill the ring exactly; the next one fails")
    func fillsExactly() {
        let ring = makeRing(of: UInt16.self, capacity: 3)
        var producer = ring.producer
        var consumer = ring.consumer
        let first = producer.push(1)
        let second = producer.push(2)
        let third = producer.push(3)
        let overflow = producer.push(4)
        #expect(first && second && third && !overflow)
        let peeked = consumer.peek()
        let values = [consumer.pop(), consumer.pop(), consumer.pop(), consumer.pop()]
        #expect(peeked == 1)
        #expect(values == [1, 2, 3, nil])
    }

    @Test("the gauge counts what is written and not yet read, across the wrap")
    func gaugeCountsHeldElements() {
        let ring = makeRing(of: Float.self, capacity: 5)
        var producer = ring.producer
        var consumer = ring.consumer
        let gauge = producer.gauge
        var counts = [gauge.count]
        for round in 0..<4 {
            for value in 0..<(round + 2) { _ = producer.push(Float(value)) }
            counts.append(gauge.count)
            for _ in 0..<(round + 1) { _ = consumer.pop() }
            counts.append(gauge.count)
        }
        #expect(gauge.capacity == 5)
        // 2 in, 1 out; 3 in (4), 2 out; 4 in (only 3 fit: 5), 3 out; 5 in (3 fit: 5), 4 out.
        #expect(counts == [0, 2, 1, 4, 2, 5, 2, 5, 1])
    }

    @Test("the chunk API hands out two regions across the wrap")
    func chunksAcrossWrap() {
        let ring = makeRing(of: Int.self, capacity: 5)
        var producer = ring.producer
        var consumer = ring.consumer
        // Move both positions to slot 3.
        for value in 0..<3 { _ = producer.push(value) }
        _ = consumer.skip(3)

        let writable = producer.writableRegions(maximum: 4)
        #expect(writable.first.count == 2)
        #expect(writable.second.count == 2)
        for (index, pointer) in [writable.first, writable.second].enumerated() {
            for slot in pointer.indices { pointer[slot] = 100 + index * 10 + slot }
        }
        producer.commit(4)

        let readable = consumer.readableRegions()
        #expect(Array(readable.first) == [100, 101])
        #expect(Array(readable.second) == [110, 111])
        consumer.release(3)
        let remaining = consumer.availableElements()
        let last = consumer.pop()
        #expect(remaining == 1)
        #expect(last == 111)
    }

    @Test("a commit only publishes what it names")
    func partialCommit() {
        let ring = makeRing(of: Float.self, capacity: 8)
        var producer = ring.producer
        var consumer = ring.consumer
        let regions = producer.writableRegions(maximum: 6)
        #expect(regions.count == 6)
        for index in 0..<6 { regions.first[index] = Float(index) }
        producer.commit(2)
        let ready = consumer.availableElements()
        #expect(ready == 2)
        let free = producer.availableSlots()
        #expect(free == 6)
    }

    @Test("pushAll writes all or nothing and reports the free slots")
    func pushAllIsAtomic() throws {
        let ring = makeRing(of: UInt8.self, capacity: 4)
        var producer = ring.producer
        let three: [UInt8] = [1, 2, 3]
        try three.withUnsafeBufferPointer { try producer.pushAll($0) }
        #expect(throws: RingError.tooFewSlots(available: 1)) {
            try three.withUnsafeBufferPointer { try producer.pushAll($0) }
        }
        let free = producer.availableSlots()
        #expect(free == 1)
    }

    @Test("each half learns when the other is dropped")
    func abandonment() {
        let ring = makeRing(of: UInt8.self, capacity: 4)
        var producer = ring.producer
        let consumer = ring.consumer
        _ = producer.push(1)
        let before = producer.isAbandoned
        _ = consume consumer
        let after = producer.isAbandoned
        #expect(!before)
        #expect(after)

        let other = makeRing(of: UInt8.self, capacity: 4)
        var writer = other.producer
        var reader = other.consumer
        _ = writer.push(9)
        _ = consume writer
        let abandoned = reader.isAbandoned
        #expect(abandoned)
        // What was written before the producer left is still readable.
        let value = reader.pop()
        #expect(value == 9)
    }

    @Test("push and pop do not allocate after creation", .enabled(if: AllocationCounter.testsEnabled))
    func noAllocations() throws {
        try #require(AllocationCounter.isActive, "the allocation counter is not counting")
        let ring = makeRing(of: Float.self, capacity: 1000)
        var producer = ring.producer
        var consumer = ring.consumer
        let input = [Float](repeating: 0.25, count: 333)
        var output = [Float](repeating: 0, count: 333)
        let allocations = input.withUnsafeBufferPointer { source in
            output.withUnsafeMutableBufferPointer { target in
                func exercise() {
                    for _ in 0..<1000 {
                        _ = producer.push(contentsOf: source)
                        _ = producer.push(1)
                        let regions = producer.writableRegions(maximum: 10)
                        producer.commit(regions.count)
                        _ = consumer.pop(into: target)
                        _ = consumer.pop()
                        _ = consumer.skip(10)
                    }
                }
                // Warm up first: the first use of a generic type may allocate its metadata.
                exercise()
                return AllocationCounter.count(exercise)
            }
        }
        #expect(allocations == 0)
    }

    /// Two threads move 100 million elements in random-sized chunks; the reader checks every
    /// one arrives once, in order. ThreadSanitizer runs this too (see `.ci/run`).
    @Test("two threads move 100 million elements in order")
    func twoThreadStress() async throws {
        let total = 100_000_000
        let ring = makeRing(of: UInt32.self, capacity: 4099)
        let producerBox = ThreadBox(ring.producer)
        let consumerBox = ThreadBox(ring.consumer)

        let writer = Thread {
            var generator = SeededGenerator(seed: 42)
            var next = 0
            while next < total {
                let want = min(Int.random(in: 1...700, using: &generator), total - next)
                let regions = producerBox.value.writableRegions(maximum: want)
                if regions.count == 0 {
                    sched_yield()
                    continue
                }
                for index in regions.first.indices { regions.first[index] = UInt32(truncatingIfNeeded: next + index) }
                let offset = regions.first.count
                for index in regions.second.indices {
                    regions.second[index] = UInt32(truncatingIfNeeded: next + offset + index)
                }
                producerBox.value.commit(regions.count)
                next += regions.count
            }
        }
        writer.start()

        var generator = SeededGenerator(seed: 7)
        var expected = 0
        var mismatches = 0
        while expected < total {
            let regions = consumerBox.value.readableRegions(maximum: Int.random(in: 1...900, using: &generator))
            if regions.count == 0 {
                sched_yield()
                continue
            }
            for value in regions.first {
                if value != UInt32(truncatingIfNeeded: expected) { mismatches += 1 }
                expected += 1
            }
            for value in regions.second {
                if value != UInt32(truncatingIfNeeded: expected) { mismatches += 1 }
                expected += 1
            }
            consumerBox.value.release(regions.count)
        }
        #expect(expected == total)
        #expect(mismatches == 0)
        let leftover = consumerBox.value.availableElements()
        #expect(leftover == 0)
    }
}
