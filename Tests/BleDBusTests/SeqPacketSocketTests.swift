import BleDBus
import BleTestSupport
import Foundation
import Glibc
import Testing

/// BleRuntime's owned SEQPACKET socket: it owns its descriptor (closed on `close()` and when
/// released, never twice), refuses what is not a SEQPACKET socket, reads whole datagrams in
/// batches and says why a send did not go out.
///
/// Closing is checked from the peer's end (it reads end of file), which holds however
/// descriptor numbers are reused by tests running meanwhile.
@Suite(.timeLimit(.minutes(TestTime.minutes(1)))) @BleLoop struct SeqPacketSocketTests {
    /// Our end as a socket, theirs as a descriptor the test owns (closed by `defer`).
    static func pair() throws -> (ours: SeqPacketSocket, theirs: Int32) {
        try SeqPacketSocket.makePair()
    }

    static func send(_ bytes: [UInt8], to descriptor: Int32) -> Bool {
        Glibc.send(descriptor, bytes, bytes.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) == bytes.count
    }

    // MARK: Owning the descriptor

    @Test func aSocketReleasedWithoutCloseHangsUpOnThePeer() async throws {
        var made: (ours: SeqPacketSocket, theirs: Int32)? = try Self.pair()
        let theirs = try #require(made?.theirs)
        defer { close(theirs) }
        let inode = try #require(made.flatMap { Descriptors.target(of: $0.ours.descriptor) })
        made?.ours.startReading { _ in }
        made = nil
        #expect(await PeerEnd.hungUp(theirs))
        // And nothing in the process refers to our end's socket any more.
        #expect(Descriptors.count(referringTo: inode) == 0)
    }

    @Test func closeHangsUpOnThePeerOnceAndIsNotReportedAsThePeerClosing() async throws {
        let (ours, theirs) = try Self.pair()
        defer { close(theirs) }
        let heard = EventRecorder<String>()
        ours.startReading { received in
            if case .peerClosed = received { heard.append("peerClosed") }
        }
        ours.close()
        ours.close()
        #expect(!ours.isOpen && ours.descriptor == -1)
        #expect(await PeerEnd.hungUp(theirs))
        // A loop turn later, the reader has heard nothing: the close was ours.
        await withCheckedContinuation { continuation in BleLoop.perform { continuation.resume() } }
        #expect(heard.events.isEmpty)
        #expect(ours.send(Data([1])) == .failed(errno: EBADF))
    }

    // MARK: Adopting

    @Test func aPipeIsRefusedAsNotASocketAndClosed() throws {
        var ends: [Int32] = [-1, -1]
        try #require(pipe(&ends) == 0)
        defer { close(ends[0]) }
        // Both ends name the pipe's inode; the count says whether the refused end is closed,
        // whatever a child process spawned meanwhile inherited (this pipe is not close-on-exec).
        let inode = try #require(Descriptors.target(of: ends[0]))
        #expect(Descriptors.count(referringTo: inode) == 2)
        #expect(throws: SeqPacketSocketError.notASocket(errno: ENOTSOCK)) { _ = try SeqPacketSocket(adopting: ends[1]) }
        #expect(Descriptors.count(referringTo: inode) == 1)
    }

    @Test func aStreamSocketIsRefusedWithItsTypeAndClosed() async throws {
        let (stream, peer) = try Descriptors.socketPair()
        defer { close(peer) }
        #expect(throws: SeqPacketSocketError.notSeqPacket(type: Int32(SOCK_STREAM.rawValue))) {
            _ = try SeqPacketSocket(adopting: stream)
        }
        #expect(await PeerEnd.hungUp(peer))
    }

    @Test func aSeqPacketDescriptorIsAdoptedAndCarriesDatagrams() async throws {
        let (ours, theirs) = try Self.pair()
        let adopted = try SeqPacketSocket(adopting: theirs)
        let heard = EventRecorder<Data>()
        adopted.startReading { received in
            if case .packet(let value) = received { heard.append(value) }
        }
        #expect(ours.send(Data([7, 8, 9])) == .sent)
        try await heard.wait(count: 1, timeout: .seconds(10))
        #expect(heard.events == [Data([7, 8, 9])])
        adopted.close()
        ours.close()
    }

    // MARK: Reading

    @Test func datagramsArriveWholeAndInOrderThenThePeerClosingOnce() async throws {
        let (ours, theirs) = try Self.pair()
        // More than one wake-up's budget is waiting before the reader starts.
        let count = SeqPacketSocket.packetsPerWakeUp * 3 + 5
        for index in 0..<count { #expect(Self.send([UInt8(index & 0xff), 0xaa, 0xbb], to: theirs)) }
        close(theirs)
        let heard = EventRecorder<String>()
        ours.startReading { received in
            switch received {
            case .packet(let value): heard.append(value.map { String($0) }.joined(separator: ","))
            case .tooLong(let length): heard.append("tooLong \(length)")
            case .peerClosed: heard.append("peerClosed")
            }
        }
        try await heard.wait("the peer closing", timeout: .seconds(10)) { $0.last == "peerClosed" }
        let expected = (0..<count).map { "\($0 & 0xff),170,187" } + ["peerClosed"]
        #expect(heard.events == expected)
        #expect(!ours.isOpen, "the socket closed itself when the peer went")
    }

    @Test func aDatagramLongerThanTheRecordIsReportedWithItsLengthNotCut() async throws {
        let (ours, theirs) = try Self.pair()
        defer { close(theirs) }
        let heard = EventRecorder<String>()
        ours.startReading(into: SeqPacketRecords(recordSize: 4, reportsTooLong: true)) { received in
            switch received {
            case .packet(let value): heard.append("packet \(value.count)")
            case .tooLong(let length): heard.append("tooLong \(length)")
            case .peerClosed: heard.append("peerClosed")
            }
        }
        for length in [3, 10, 4] { #expect(Self.send([UInt8](repeating: 1, count: length), to: theirs)) }
        try await heard.wait(count: 3, timeout: .seconds(10))
        #expect(heard.events == ["packet 3", "tooLong 10", "packet 4"])
        ours.close()
    }

    @Test func aReaderThatClosesTheSocketHearsNoMoreOfTheBatch() async throws {
        let (ours, theirs) = try Self.pair()
        defer { close(theirs) }
        for index in 0..<5 { #expect(Self.send([UInt8(index)], to: theirs)) }
        let heard = EventRecorder<String>()
        ours.startReading { [weak ours] received in
            heard.append("\(received)")
            ours?.close()
        }
        try await heard.wait(count: 1, timeout: .seconds(10))
        await withCheckedContinuation { continuation in BleLoop.perform { continuation.resume() } }
        #expect(heard.events.count == 1)
    }

    // MARK: Sending

    @Test func aFullSocketSaysWouldBlockAndWhenWritableCallsBackOnceItDrains() async throws {
        let (ours, theirs) = try Self.pair()
        defer { close(theirs) }
        var sent = 0
        var result = SeqPacketSocket.SendResult.sent
        while sent < 100_000 {
            result = ours.send(Data(repeating: 0x42, count: 20))
            guard result == .sent else { break }
            sent += 1
        }
        #expect(result == .wouldBlock, "after \(sent) datagrams")
        let writable = EventRecorder<FileDescriptorWatch.Events>()
        ours.whenWritable { writable.append($0) }
        ours.whenWritable { _ in Issue.record("a second wait while one is armed") }
        // The peer reads everything (off the loop's clock: these are non-blocking reads).
        var buffer = [UInt8](repeating: 0, count: 64)
        var drained = 0
        while recv(theirs, &buffer, buffer.count, Int32(MSG_DONTWAIT)) > 0 { drained += 1 }
        #expect(drained == sent)
        try await writable.wait(count: 1, timeout: .seconds(10))
        #expect(writable.events.first?.contains(.writable) == true)
        #expect(ours.send(Data([1])) == .sent)
        ours.close()
    }

    @Test func aSendAfterThePeerClosedSaysPeerClosed() throws {
        let (ours, theirs) = try Self.pair()
        close(theirs)
        #expect(ours.send(Data([1])) == .peerClosed)
        ours.close()
    }

    // MARK: The fault hook

    @Test func aSendFaultIsReportedAndNothingIsSent() throws {
        let (ours, theirs) = try Self.pair()
        defer { close(theirs) }
        ours.fault = .send(errno: EAGAIN)
        #expect(ours.send(Data([1])) == .wouldBlock)
        ours.fault = .send(errno: EPIPE)
        #expect(ours.send(Data([2])) == .peerClosed)
        ours.fault = .send(errno: EIO)
        #expect(ours.send(Data([3])) == .failed(errno: EIO))
        #expect(PeerEnd.isQuiet(theirs), "a faulted send reached the peer")
        ours.fault = nil
        #expect(ours.send(Data([4])) == .sent)
        var byte: UInt8 = 0
        #expect(recv(theirs, &byte, 1, Int32(MSG_DONTWAIT)) == 1 && byte == 4)
        ours.close()
    }

    @Test func aReceiveFaultEndsTheSocketAsABrokenPeer() async throws {
        let (ours, theirs) = try Self.pair()
        defer { close(theirs) }
        ours.fault = .receive(errno: ECONNRESET)
        let heard = EventRecorder<String>()
        ours.startReading { heard.append("\($0)") }
        // A datagram wakes the reader; the faulted read fails and the socket gives up.
        #expect(Self.send([1], to: theirs))
        try await heard.wait(count: 1, timeout: .seconds(10))
        #expect(heard.events == ["peerClosed"])
        #expect(!ours.isOpen)
        #expect(await PeerEnd.hungUp(theirs), "the socket that gave up closed its descriptor")
    }
}
