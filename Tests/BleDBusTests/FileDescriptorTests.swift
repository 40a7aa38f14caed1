import BleDBus
import BleTestSupport
import Foundation
import Glibc
import Testing

/// Unix file descriptors in messages, both ways, and their ownership: every received or sent
/// `UnixFileDescriptor` closes its descriptor when released, so nothing leaks.
///
/// Leaks are counted per kernel object (the `socket:[inode]` that `/proc/self/fd` links to), not
/// as the total of open descriptors: other tests open and close descriptors in parallel, which
/// would make a total meaningless, while a leaked duplicate of our socket is always ours.
@Suite(.timeLimit(.minutes(TestTime.minutes(1)))) @BleLoop struct FileDescriptorTests {
    nonisolated static let interface = "com.example.Pipes"

    @Test func aMethodReturnsASocketThatTheCallerWritesAndTheCalleeReads() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        let calleeEnd = LoopBox<Int32>(-1)
        let handedOut = LoopBox<String?>(nil)
        server.objects.register("/pipes", interfaces: [ExportedInterface(Self.interface, methods: [
            ExportedMethod("AcquireWrite", out: [ArgumentDescription("fd", .unixFD)]) { call in
                guard let (mine, theirs) = try? Descriptors.socketPair() else {
                    return call.fail(name: "com.example.Error.Failed", message: "socketpair failed")
                }
                calleeEnd.value = mine
                handedOut.value = Descriptors.target(of: theirs)
                call.reply([.unixFD(UnixFileDescriptor(adopting: theirs))])
            },
        ])])
        defer { if calleeEnd.value >= 0 { close(calleeEnd.value) } }
        var reply: [DBusValue]? = try await client.call(destination: server.uniqueName, path: "/pipes",
                                                        interface: Self.interface, member: "AcquireWrite")
        let descriptor = try UnixFileDescriptor.decode(reply?.first ?? .int32(0))
        #expect(Descriptors.write("ping", to: descriptor.rawValue))
        #expect(Descriptors.read(from: calleeEnd.value) == "ping")
        // Only the caller's descriptor still refers to the handed-out end: the callee's and
        // libdbus's copies are closed.
        guard let handedOut = handedOut.value else {
            Issue.record("no handed-out socket")
            return
        }
        #expect(Descriptors.count(referringTo: handedOut) == 1)
        reply = nil
        descriptor.close()
        #expect(Descriptors.count(referringTo: handedOut) == 0)
    }

    @Test func aCallerSendsADescriptorThatTheCalleeReads() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        server.objects.register("/pipes", interfaces: [ExportedInterface(Self.interface, methods: [
            ExportedMethod("Drain", in: [ArgumentDescription("fd", .unixFD)], out: [ArgumentDescription("text", .string)]) { call in
                guard case .unixFD(let received) = call.arguments[0] else { return }
                call.reply([.string(Descriptors.read(from: received.rawValue))])
            },
        ])])
        let (readEnd, writeEnd) = try Descriptors.socketPair()
        defer { close(writeEnd) }
        #expect(Descriptors.write("hello through a descriptor", to: writeEnd))
        let reply = try await client.call(destination: server.uniqueName, path: "/pipes", interface: Self.interface,
                                          member: "Drain", arguments: [.unixFD(UnixFileDescriptor(adopting: readEnd))])
        #expect(reply == [.string("hello through a descriptor")])
    }

    @Test func aHundredDescriptorRoundTripsLeakNoDescriptor() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        let (original, peer) = try Descriptors.socketPair()
        defer {
            close(original)
            close(peer)
        }
        guard let socket = Descriptors.target(of: original) else {
            Issue.record("no /proc/self/fd entry")
            return
        }
        #expect(Descriptors.count(referringTo: socket) == 1)
        for round in 0..<100 {
            let sent = try UnixFileDescriptor(duplicating: original)
            let reply = try await client.echo([.unixFD(sent), .uint32(UInt32(round))], through: server)
            guard case .unixFD(let received)? = reply.first else {
                Issue.record("round \(round): no descriptor in \(reply)")
                return
            }
            #expect(Descriptors.target(of: received.rawValue) == socket)
            if round == 0 {
                // The count sees the duplicates alive now: the one sent and the one received.
                #expect(Descriptors.count(referringTo: socket) == 3)
            }
        }
        await loopTurn()
        #expect(Descriptors.count(referringTo: socket) == 1)
    }

    @Test func aDescriptorThatWasTakenCannotBeSentAndNothingIsSent() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        let (first, second) = try Descriptors.socketPair()
        defer { close(second) }
        let descriptor = UnixFileDescriptor(adopting: first)
        if let taken = descriptor.take() { close(taken) }
        let sent = LoopBox(0)
        client.tracer = { direction, _ in if direction == .sent { sent.value += 1 } }
        let error = await dbusError { try await client.echo([.unixFD(descriptor)], through: server) }
        guard case .encoding? = error else {
            Issue.record("expected .encoding, got \(String(describing: error))")
            return
        }
        #expect(sent.value == 0)
    }

    // MARK: Ownership

    /// A fresh descriptor at a number far above what other tests use, so that no parallel test
    /// can be handed the same number right after we close it.
    static func highDescriptor() throws -> (Int32, peer: Int32) {
        var limits = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limits)
        let ceiling = Int32(clamping: min(limits.rlim_cur, 16000))
        let (low, peer) = try Descriptors.socketPair()
        let high = fcntl(low, F_DUPFD_CLOEXEC, Int32.random(in: ceiling / 2 ..< ceiling - 1))
        close(low)
        guard high >= 0 else { throw POSIXError(.EMFILE) }
        return (high, peer)
    }

    @Test func releasingAUnixFileDescriptorClosesItsDescriptor() throws {
        let (descriptor, peer) = try Self.highDescriptor()
        defer { close(peer) }
        var owner: UnixFileDescriptor? = UnixFileDescriptor(adopting: descriptor)
        #expect(Descriptors.isOpen(descriptor))
        #expect(owner?.rawValue == descriptor)
        owner = nil
        #expect(fcntl(descriptor, F_GETFD) == -1 && errno == EBADF)
    }

    @Test func closeClosesTheDescriptorAtOnceAndOnlyOnce() throws {
        let (descriptor, peer) = try Self.highDescriptor()
        defer { close(peer) }
        let owner = UnixFileDescriptor(adopting: descriptor)
        owner.close()
        #expect(!Descriptors.isOpen(descriptor))
        #expect(owner.rawValue == -1)
        owner.close()
        #expect(owner.take() == nil)
    }

    @Test func takeHandsTheDescriptorOverSoReleasingDoesNotCloseIt() throws {
        let (descriptor, peer) = try Self.highDescriptor()
        defer { close(peer) }
        var owner: UnixFileDescriptor? = UnixFileDescriptor(adopting: descriptor)
        let taken = owner?.take()
        #expect(taken == descriptor)
        #expect(owner?.rawValue == -1)
        owner = nil
        #expect(Descriptors.isOpen(descriptor))
        close(descriptor)
    }

    @Test func duplicatingKeepsTheOriginalOpenAfterTheCopyIsReleased() throws {
        let (descriptor, peer) = try Self.highDescriptor()
        defer {
            close(descriptor)
            close(peer)
        }
        var copy: UnixFileDescriptor? = try UnixFileDescriptor(duplicating: descriptor)
        let copied = copy?.rawValue ?? -1
        #expect(copied >= 0 && copied != descriptor)
        #expect(Descriptors.target(of: copied) == Descriptors.target(of: descriptor))
        copy = nil
        #expect(Descriptors.isOpen(descriptor))
    }

    @Test func duplicatingAClosedDescriptorIsAnInvalidArgument() throws {
        let (descriptor, peer) = try Self.highDescriptor()
        close(descriptor)
        close(peer)
        #expect(throws: DBusError.self) { try UnixFileDescriptor(duplicating: descriptor) }
    }
}
