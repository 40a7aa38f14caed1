import BleDBus
import BleTestSupport
import Foundation
import Testing

/// Method calls: replies, error replies, deadlines, connection loss, cancellation, queueing.
@Suite(.timeLimit(.minutes(TestTime.minutes(1)))) @BleLoop struct CallTests {
    nonisolated static let interface = "com.example.Calls"

    /// Exports `/calls` with `Add(u, u) -> u`, `Refuse()` that fails, and `Hold()` whose calls
    /// are handed to `held` unanswered.
    static func exportCallee(on server: Connection, held: Mailbox<IncomingCall>? = nil) {
        server.objects.register("/calls", interfaces: [ExportedInterface(interface, methods: [
            ExportedMethod("Add", in: [ArgumentDescription("a", .uint32), ArgumentDescription("b", .uint32)],
                           out: [ArgumentDescription("sum", .uint32)]) { call in
                guard case .uint32(let a) = call.arguments[0], case .uint32(let b) = call.arguments[1] else { return }
                call.reply([.uint32(a &+ b)])
            },
            ExportedMethod("Refuse") { call in
                call.fail(name: "com.example.Error.Refused", message: "Not today")
            },
            ExportedMethod("Hold") { call in held?.post(call) },
        ])])
    }

    @Test func aCallReturnsTheReplyBody() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        Self.exportCallee(on: server)
        let reply = try await client.call(destination: server.uniqueName, path: "/calls", interface: Self.interface,
                                          member: "Add", arguments: [.uint32(40), .uint32(2)])
        #expect(reply == [.uint32(42)])
    }

    @Test func callReturningMessageGivesTheReplysHeaderFields() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        Self.exportCallee(on: server)
        let reply = try await client.callReturningMessage(.methodCall(
            destination: server.uniqueName, path: "/calls", interface: Self.interface, member: "Add",
            body: [.uint32(1), .uint32(1)]))
        #expect(reply.kind == .methodReturn)
        #expect(reply.sender == server.uniqueName)
        #expect(reply.destination == client.uniqueName)
        #expect(reply.replySerial != 0)
        #expect(reply.signature == "u")
    }

    @Test func anErrorReplyIsARemoteErrorWithItsNameAndMessage() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        Self.exportCallee(on: server)
        let error = await dbusError {
            try await client.call(destination: server.uniqueName, path: "/calls", interface: Self.interface, member: "Refuse")
        }
        #expect(error == .remote(name: "com.example.Error.Refused", message: "Not today"))
        #expect(error?.remoteName == "com.example.Error.Refused")
    }

    @Test func aCallToANameNobodyOwnsIsARemoteServiceUnknownError() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, _) = try await openPair(bus)
        let error = await dbusError {
            try await client.call(destination: "com.example.Nobody", path: "/", interface: Self.interface, member: "Add")
        }
        #expect(error?.remoteName == "org.freedesktop.DBus.Error.ServiceUnknown")
    }

    @Test func aCallThatIsNeverAnsweredTimesOutAtItsDeadline() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        let held = Mailbox<IncomingCall>("the held call")
        Self.exportCallee(on: server, held: held)
        let started = ContinuousClock.now
        let error = await dbusError {
            try await client.call(destination: server.uniqueName, path: "/calls", interface: Self.interface,
                                  member: "Hold", timeout: .milliseconds(200))
        }
        #expect(error == .timeout(member: "Hold", seconds: 0.2))
        #expect(ContinuousClock.now - started >= .milliseconds(200))
        // The callee really had the call and kept it.
        let call = try await held.next()
        #expect(!call.isAnswered)
        #expect(client.outstandingCallCount == 0)
    }

    @Test func theDefaultTimeoutAppliesToCallsThatGiveNone() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        let held = Mailbox<IncomingCall>("the held call")
        Self.exportCallee(on: server, held: held)
        client.defaultTimeout = .milliseconds(100)
        let error = await dbusError {
            try await client.call(destination: server.uniqueName, path: "/calls", interface: Self.interface, member: "Hold")
        }
        #expect(error == .timeout(member: "Hold", seconds: 0.1))
    }

    /// Starts a `Hold` call with a 30 s deadline and returns once the callee holds it.
    static func startHeldCall(from client: Connection, to server: Connection, held: Mailbox<IncomingCall>)
        async throws -> (Task<DBusError?, Never>, IncomingCall) {
        let destination = server.uniqueName
        let pending = Task { @BleLoop in
            await dbusError {
                try await client.call(destination: destination, path: "/calls", interface: Self.interface,
                                      member: "Hold", timeout: .seconds(30))
            }
        }
        return (pending, try await held.next())
    }

    @Test func aCallFailsAtOnceWithDisconnectedWhenTheCallerClosesItsConnection() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        let held = Mailbox<IncomingCall>("the held call")
        Self.exportCallee(on: server, held: held)
        let (pending, call) = try await Self.startHeldCall(from: client, to: server, held: held)
        client.close()
        #expect(await pending.value == .disconnected)
        #expect(!client.isOpen)
        #expect(client.outstandingCallCount == 0)
        withExtendedLifetime(call) {}
    }

    @Test func aCallFailsAtOnceWhenTheCalleesConnectionCloses() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        let held = Mailbox<IncomingCall>("the held call")
        Self.exportCallee(on: server, held: held)
        let (pending, call) = try await Self.startHeldCall(from: client, to: server, held: held)
        server.close()
        // The bus answers for a callee that left: the call ends long before its 30 s deadline.
        #expect(await pending.value?.remoteName == "org.freedesktop.DBus.Error.NoReply")
        #expect(client.isOpen)
        withExtendedLifetime(call) {}
    }

    @Test func aCallFailsAtOnceWithDisconnectedWhenTheBusGoesAway() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        let held = Mailbox<IncomingCall>("the held call")
        Self.exportCallee(on: server, held: held)
        let (pending, call) = try await Self.startHeldCall(from: client, to: server, held: held)
        bus.stop()
        #expect(await pending.value == .disconnected)
        #expect(!client.isOpen)
        withExtendedLifetime(call) {}
    }

    @Test func aCallOnAClosedConnectionFailsAtOnceWithDisconnected() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        Self.exportCallee(on: server)
        client.close()
        let error = await dbusError {
            try await client.call(destination: server.uniqueName, path: "/calls", interface: Self.interface,
                                  member: "Add", arguments: [.uint32(1), .uint32(2)], timeout: .seconds(30))
        }
        #expect(error == .disconnected)
    }

    @Test func onDisconnectHandlersRunOnceWhenTheConnectionCloses() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, _) = try await openPair(bus)
        let runs = LoopBox(0)
        client.onDisconnect { runs.value += 1 }
        let removed = client.onDisconnect { runs.value += 100 }
        client.removeDisconnectHandler(removed)
        client.close()
        client.close()
        #expect(runs.value == 1)
        // Added after the close: runs at once.
        client.onDisconnect { runs.value += 10 }
        #expect(runs.value == 11)
    }

    @Test func openingAnAddressWithoutABusFailsWithCannotConnect() async throws {
        let error = await dbusError {
            try await Connection.open(.address("unix:path=/nonexistent/blekit-\(UUID().uuidString)"))
        }
        guard case .cannotConnect? = error else {
            Issue.record("expected .cannotConnect, got \(String(describing: error))")
            return
        }
    }

    @Test func theCompletionHandlerFormWorksFromAnotherThreadAndCompletesOnTheLoop() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        Self.exportCallee(on: server)
        let destination = server.uniqueName
        let completed = Mailbox<(Result<[DBusValue], DBusError>, onLoop: Bool)>("the completion")
        let callerWasOffLoop = Mailbox<Bool>("the calling thread")
        let thread = Thread {
            callerWasOffLoop.post(!MainLoop.shared.isCurrent)
            client.call(destination: destination, path: "/calls", interface: CallTests.interface, member: "Add",
                        arguments: [.uint32(2), .uint32(3)]) { result in
                completed.post((result, MainLoop.shared.isCurrent))
            }
        }
        thread.start()
        #expect(try await callerWasOffLoop.next())
        let (result, onLoop) = try await completed.next()
        #expect(result == .success([.uint32(5)]))
        #expect(onLoop)
    }

    @Test func cancellingTheAwaitingTaskEndsTheCallWithCancelled() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        let held = Mailbox<IncomingCall>("the held call")
        Self.exportCallee(on: server, held: held)
        let (pending, call) = try await Self.startHeldCall(from: client, to: server, held: held)
        pending.cancel()
        #expect(await pending.value == .cancelled)
        #expect(client.outstandingCallCount == 0)
        // A reply that comes after all is dropped; the connection carries on.
        call.reply()
        let reply = try await client.call(destination: server.uniqueName, path: "/calls", interface: Self.interface,
                                          member: "Add", arguments: [.uint32(1), .uint32(1)])
        #expect(reply == [.uint32(2)])
    }

    @Test func aCallStartedInAnAlreadyCancelledTaskEndsWithCancelledAndSendsNothing() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        Self.exportCallee(on: server)
        let sent = LoopBox(0)
        client.tracer = { direction, _ in if direction == .sent { sent.value += 1 } }
        let destination = server.uniqueName
        let task = Task { @BleLoop in
            withUnsafeCurrentTask { $0?.cancel() }
            return await dbusError {
                try await client.call(destination: destination, path: "/calls", interface: Self.interface,
                                      member: "Add", arguments: [.uint32(1), .uint32(1)])
            }
        }
        #expect(await task.value == .cancelled)
        #expect(sent.value == 0)
    }

    @Test func callsBeyondMaximumPendingCallsQueueAndAllComplete() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        // dbus-daemon refuses a connection more than 128 awaited replies; 250 calls at once only
        // work because the connection keeps the rest queued until replies free slots.
        let count = 250
        let limit = client.maximumPendingCalls
        #expect(limit < 128)
        let held = LoopBox<[IncomingCall]>([])
        let received = LoopBox(0)
        server.objects.register("/batch", interfaces: [ExportedInterface(Self.interface, methods: [
            ExportedMethod("Work", in: [ArgumentDescription("n", .uint32)], out: [ArgumentDescription("n", .uint32)]) { call in
                held.value.append(call)
                received.value += 1
                // Answer only when the caller cannot have more in flight (or sent them all).
                if held.value.count == limit || received.value == count {
                    for waiting in held.value { waiting.reply(waiting.arguments) }
                    held.value.removeAll()
                }
            },
        ])])
        let destination = server.uniqueName
        let calls = (0..<UInt32(count)).map { index in
            Task { @BleLoop in
                try await client.call(destination: destination, path: "/batch", interface: Self.interface,
                                      member: "Work", arguments: [.uint32(index)], timeout: .seconds(30))
            }
        }
        var replies: [(UInt32, [DBusValue])] = []
        for (index, call) in calls.enumerated() { replies.append((UInt32(index), try await call.value)) }
        #expect(replies.count == count)
        #expect(replies.allSatisfy { $0.1 == [.uint32($0.0)] })
        #expect(client.outstandingCallCount == 0)
    }

    @Test func noMoreThanMaximumPendingCallsAwaitRepliesAtOnce() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        client.maximumPendingCalls = 3
        let inFlight = LoopBox(0)
        let mostInFlight = LoopBox(0)
        client.tracer = { direction, message in
            switch (direction, message.kind) {
            case (.sent, .methodCall) where message.member == "Add":
                inFlight.value += 1
                mostInFlight.value = max(mostInFlight.value, inFlight.value)
            case (.received, .methodReturn), (.received, .error):
                inFlight.value -= 1
            default:
                break
            }
        }
        Self.exportCallee(on: server)
        let destination = server.uniqueName
        let calls = (0..<UInt32(20)).map { index in
            Task { @BleLoop in
                try await client.call(destination: destination, path: "/calls", interface: Self.interface,
                                      member: "Add", arguments: [.uint32(index), .uint32(1)])
            }
        }
        for (index, call) in calls.enumerated() { #expect(try await call.value == [.uint32(UInt32(index) + 1)]) }
        #expect(mostInFlight.value == 3)
    }
}
