import CJack
import Glibc
import JackTestSupport
import SluiceJACK
import Testing

// A JACK server that stops answering ends a client open or close in a clear error within its
// deadline, instead of holding the process (the whole test run, once) for ever.

@Suite("JACK calls with a deadline", .timeLimit(.minutes(1)))
struct JackDeadlineTests {
    // libjack serves one server per process: this runs in an exit test, with a server of its own.
    @Test("a stopped server fails an open and a close within their deadlines, naming the server")
    func stoppedServer() async {
        await #expect(processExitsWith: .success) {
            // The abandoned calls finish when the server is stopped below, writing to its
            // closed socket: EPIPE for them, not SIGPIPE for the process.
            signal(SIGPIPE, SIG_IGN)
            let server = try JackTestServer.start()
            defer { server.stop() }
            let options = jack_options_t(rawValue: JackNoStartServer.rawValue)
            let open = try JackDeadline.openClient(named: "deadline-open", options: options, server: server.name)

            // SIGSTOP: the socket still accepts, nobody answers (a wedged server).
            kill(server.pid, SIGSTOP)
            defer { kill(server.pid, SIGCONT) }
            let clock = ContinuousClock()
            let started = clock.now
            #expect {
                _ = try JackDeadline.openClient(
                    named: "deadline-late", options: options, server: server.name, within: .seconds(1))
            } throws: { error in
                let message = (error as? JackError)?.message ?? ""
                return message.contains("JACK server '\(server.name)' did not answer within 1 s while opening client 'deadline-late'")
            }
            #expect(clock.now - started < .seconds(3))

            let closing = clock.now
            #expect(JackDeadline.close(open, server: server.name, within: .seconds(1)) == false)
            #expect(clock.now - closing < .seconds(3))
        }
    }

    @Test("a call that finishes in time gives its value; a late one gives it to `abandoned`")
    func lateValueGoesToAbandoned() async throws {
        #expect(JackDeadline.run(within: .seconds(5), { 42 }, abandoned: { _ in }) == 42)

        let late = AsyncStream<Int>.makeStream()
        let value = JackDeadline.run(within: .milliseconds(50), {
            usleep(300_000)
            return 7
        }, abandoned: { late.continuation.yield($0) })
        #expect(value == nil)
        var iterator = late.stream.makeAsyncIterator()
        #expect(await iterator.next() == 7)
    }
}
