import CSocketShim
import Foundation
import Glibc

/// One end of an AF_UNIX `SOCK_SEQPACKET` socket, owned: the socket that carries
/// `AcquireNotify` and `AcquireWrite` values between an app and bluetoothd, one datagram per
/// ATT value, on whichever side of the pair BleKit is.
///
/// It owns its descriptor and its loop watches: `close()` releases both (once; later calls do
/// nothing), and so does releasing the object, so an owner that forgets it cannot leak the
/// descriptor or leave bluetoothd writing into a socket nobody reads. Reads take every waiting
/// datagram up to `packetsPerWakeUp` in one `recvmmsg`; sends never block and say why they
/// did not go out.
@BleLoop
package final class SeqPacketSocket {
    /// Datagrams read from one socket per loop wake-up: a peer flooding its socket must not
    /// starve the loop (the watch is level-triggered and brings the reader back for the rest).
    package static let packetsPerWakeUp = 32

    /// What a reader hears, in order.
    package enum Received {
        /// One datagram, whole.
        case packet(Data)
        /// A datagram of `length` bytes, longer than a record of the reader's
        /// `SeqPacketRecords` (which asked to be told): not delivered, since its head alone is
        /// not the value the peer sent.
        case tooLong(length: Int)
        /// The peer closed its end (end of file or hang-up) or the socket failed; the socket
        /// has closed itself. Heard once, after every datagram that came before it, and never
        /// for a `close()` of ours.
        case peerClosed
    }

    /// The outcome of one `send(_:)`.
    package enum SendResult: Equatable {
        /// The datagram is in the socket.
        case sent
        /// The socket is full (EAGAIN): the peer has not read the earlier datagrams yet.
        /// Nothing was sent; `whenWritable(_:)` says when to try again.
        case wouldBlock
        /// The peer closed its end (EPIPE, ECONNRESET, ENOTCONN). The socket stays open until
        /// its owner closes it; a reader hears `.peerClosed` from the read side.
        case peerClosed
        /// The send failed with `errno` (EBADF once this socket is closed, EMSGSIZE for a
        /// datagram larger than the socket takes).
        case failed(errno: Int32)
    }

    /// A failure a test makes the socket report instead of calling the system, to drive the
    /// real code paths through EAGAIN, a hung-up peer or a broken read.
    package enum Fault: Equatable, Sendable {
        /// Every send fails with `errno` (EAGAIN: the socket looks full); nothing is sent.
        case send(errno: Int32)
        /// Every read fails with `errno`; nothing is read (EAGAIN with data waiting makes the
        /// level-triggered watch fire again at once: clear the fault to let the data through).
        case receive(errno: Int32)
    }

    /// While set, sends or reads fail as it says instead of reaching the kernel.
    package var fault: Fault?

    /// The descriptor while open, -1 once closed.
    package private(set) var descriptor: Int32
    private var readWatch: FileDescriptorWatch?
    private var writeWatch: FileDescriptorWatch?

    private init(owning descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Takes over `descriptor` (one received from bluetoothd or an app) after checking that it
    /// is a `SOCK_SEQPACKET` socket. It is this object's from the call on: refused, it is
    /// closed before the error is thrown.
    ///
    /// Anything else (a pipe, a file, a stream socket from a hostile `org.bluez`) would never
    /// become readable, or would merge records: a subscription on it would look on and stay deaf.
    package convenience init(adopting descriptor: Int32) throws(SeqPacketSocketError) {
        var type: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_TYPE, &type, &length) == 0 else {
            let code = errno
            // EBADF: there is nothing to close (and the number may be someone else's by now).
            if code != EBADF { _ = Glibc.close(descriptor) }
            throw .notASocket(errno: code)
        }
        guard type == Int32(SOCK_SEQPACKET.rawValue) else {
            _ = Glibc.close(descriptor)
            throw .notSeqPacket(type: type)
        }
        self.init(owning: descriptor)
    }

    /// Makes a connected pair (non-blocking, close-on-exec, as bluetoothd's own): `ours` stays
    /// here, `theirs` is the descriptor to hand over in a D-Bus reply. The caller owns
    /// `theirs` and gives it to its new owner at once (BleDBus's `UnixFileDescriptor(adopting:)`).
    package static func makePair() throws(SeqPacketSocketError) -> (ours: SeqPacketSocket, theirs: Int32) {
        var pair: [Int32] = [-1, -1]
        let type = Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        guard socketpair(AF_UNIX, type, 0, &pair) == 0 else { throw .pairFailed(errno: errno) }
        return (SeqPacketSocket(owning: pair[0]), pair[1])
    }

    /// True until `close()`, or until the reader heard `.peerClosed`.
    package var isOpen: Bool { descriptor >= 0 }

    // MARK: Reading

    /// Starts reading: `handler` gets each datagram as it arrives, on the loop, then
    /// `.peerClosed` once when the peer goes. Each wake-up reads at most `packetsPerWakeUp`
    /// datagrams into `records` in one `recvmmsg`, copies them all out, then delivers them; a
    /// handler that closes the socket stops the rest. A second call, or one on a closed
    /// socket, does nothing.
    package func startReading(into records: SeqPacketRecords = .shared, _ handler: @escaping @BleLoop (Received) -> Void) {
        guard descriptor >= 0, readWatch == nil else { return }
        readWatch = FileDescriptorWatch(descriptor: descriptor) { [weak self] events in
            self?.readable(events, records, handler)
        }
    }

    private func readable(_ events: FileDescriptorWatch.Events, _ records: SeqPacketRecords, _ handler: @BleLoop (Received) -> Void) {
        let descriptor = self.descriptor
        guard descriptor >= 0 else { return }
        let received: Int32
        if case .receive(let code)? = fault {
            received = -1
            errno = code
        } else {
            received = blekit_receive_whole_records(descriptor, records.buffer, records.recordSize, UInt32(Self.packetsPerWakeUp),
                                                    records.lengths, records.truncated)
        }
        if received < 0 {
            if errno == EAGAIN || errno == EWOULDBLOCK, !events.contains(.hangUp), !events.contains(.error) { return }
        } else {
            // Every record is copied out before any is delivered: a handler may run code that
            // reads again (into the same shared records).
            var datagrams: [Received] = []
            datagrams.reserveCapacity(Int(received))
            var ended = received == 0
            for index in 0..<Int(received) {
                let length = records.lengths[index]
                // A zero-length record is SEQPACKET's end of file.
                guard length > 0 else {
                    ended = true
                    break
                }
                if let truncated = records.truncated, truncated[index] != 0 {
                    datagrams.append(.tooLong(length: length))
                } else {
                    datagrams.append(.packet(Data(bytes: records.buffer + index * records.recordSize, count: length)))
                }
            }
            for datagram in datagrams {
                handler(datagram)
                // The handler may have closed the socket (its owner ended the subscription).
                guard self.descriptor == descriptor else { return }
            }
            // A full batch may have left more: the level-triggered watch brings us back.
            if !ended, Int(received) == Self.packetsPerWakeUp { return }
            if !ended, !events.contains(.hangUp), !events.contains(.error) { return }
        }
        // End of file, hang-up, or a read that failed for another reason than EAGAIN.
        close()
        handler(.peerClosed)
    }

    // MARK: Writing

    /// Sends `data` as one datagram without blocking (and without SIGPIPE when the peer is gone).
    package func send(_ data: Data) -> SendResult {
        let descriptor = self.descriptor
        guard descriptor >= 0 else { return .failed(errno: EBADF) }
        let sent: Int
        if case .send(let code)? = fault {
            sent = -1
            errno = code
        } else {
            sent = data.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
        }
        if sent >= 0 { return .sent }
        let code = errno
        switch code {
        case EAGAIN, EWOULDBLOCK: return .wouldBlock
        case EPIPE, ECONNRESET, ENOTCONN: return .peerClosed
        default: return .failed(errno: code)
        }
    }

    /// Calls `handler` once, on the loop, when the socket can take data again or the peer
    /// hung up (`events` says which). Waiting already, or closed, it does nothing.
    package func whenWritable(_ handler: @escaping @BleLoop (FileDescriptorWatch.Events) -> Void) {
        guard descriptor >= 0, writeWatch == nil else { return }
        writeWatch = FileDescriptorWatch(descriptor: descriptor, events: .writable) { [weak self] events in
            guard let self else { return }
            self.writeWatch?.cancel()
            self.writeWatch = nil
            handler(events)
        }
    }

    // MARK: Closing

    /// Stops reading and keeps the descriptor open, so that its next owner can `startReading`
    /// with a handler of its own.
    package func stopReading() {
        readWatch?.cancel()
        readWatch = nil
    }

    /// Stops the watches and closes the descriptor (the peer sees the hang-up). Idempotent.
    package func close() {
        readWatch?.cancel()
        readWatch = nil
        writeWatch?.cancel()
        writeWatch = nil
        if descriptor >= 0 {
            _ = Glibc.close(descriptor)
            descriptor = -1
        }
    }

    /// Released without `close()` (its owner forgot it or was dropped): it closes now, so
    /// the descriptor never outlives the last reference.
    isolated deinit {
        close()
    }
}
