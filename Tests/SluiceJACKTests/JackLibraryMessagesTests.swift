import Foundation
import Glibc
@testable import SluiceJACK
import Testing

/// libjack's messages: a JACK process thread's are counted, never logged there; the table of
/// those threads works without locks. (That they reach the logger at debug level, and stay
/// off standard error otherwise, is tested end to end: SluiceCLITests' DiagnosticsTests.)
@Suite(.serialized) struct JackLibraryMessagesTests {
    @Test("the thread table: insert, find, remove; 0 is never a thread; a full table tracks no more")
    func threadTable() {
        let table = JackLibraryMessages.ThreadTable()
        #expect(!table.contains(42))
        table.insert(42)
        table.insert(7)
        #expect(table.contains(42) && table.contains(7))
        table.remove(42)
        #expect(!table.contains(42) && table.contains(7))
        table.insert(0)  // not a thread: ignored
        for thread in 100..<(100 + UInt(JackLibraryMessages.ThreadTable.capacity)) { table.insert(thread) }
        #expect(table.contains(7))
        #expect(!table.contains(100 + UInt(JackLibraryMessages.ThreadTable.capacity) - 1), "the table was full: not tracked")
    }

    @Test("a message on a registered process thread is counted, not logged; the count is taken once")
    func messageOnProcessThreadIsCounted() {
        JackLibraryMessages.reportDropped()
        let me = UInt(pthread_self())
        JackLibraryMessages.realtimeThreads.insert(me)
        defer { JackLibraryMessages.realtimeThreads.remove(me) }
        "Cannot lock down memory".withCString { sluiceJackLibraryMessage($0) }
        "xrun".withCString { sluiceJackLibraryMessage($0) }
        #expect(JackLibraryMessages.droppedOnRealtimeThread.load(ordering: .relaxed) == 2)
        JackLibraryMessages.reportDropped()
        #expect(JackLibraryMessages.droppedOnRealtimeThread.load(ordering: .relaxed) == 0)
        JackLibraryMessages.realtimeThreads.remove(me)
        "elsewhere".withCString { sluiceJackLibraryMessage($0) }
        #expect(JackLibraryMessages.droppedOnRealtimeThread.load(ordering: .relaxed) == 0, "another thread's message is logged")
    }
}
