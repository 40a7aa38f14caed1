import BleDBus
import CSocketShim
import Foundation
import Glibc

/// Our end of a socket pair handed to bluetoothd by `AcquireWrite` or `AcquireNotify` on a
/// local characteristic (AF_UNIX, SOCK_SEQPACKET: one datagram per ATT value, as bluetoothd's
/// own client-side pairs).
@BleLoop
final class ServerSocket {
    private var descriptor: Int32
    private var readWatch: FileDescriptorWatch?
    private var writeWatch: FileDescriptorWatch?
    private let onClose: @BleLoop () -> Void

    /// The outcome of one send.
    enum SendResult {
        case sent
        /// The socket is full: bluetoothd has not read the earlier values yet.
        case full
        case closed
    }

    private init(descriptor: Int32, onClose: @escaping @BleLoop () -> Void) {
        self.descriptor = descriptor
        self.onClose = onClose
    }

    /// What one datagram from bluetoothd turned out to be.
    enum Datagram: Equatable {
        /// A value that fit its record: delivered as it was sent.
        case whole(Data)
        /// A datagram of `length` bytes, longer than the record (the MTU): not delivered, since
        /// its head alone is not the value the central wrote.
        case tooLong(length: Int)
    }

    /// Makes the pair; `theirs` goes to bluetoothd in the reply. `onPacket` receives what
    /// bluetoothd writes (write commands), each datagram whole up to `recordSize` bytes (the
    /// MTU handed out with it); `onClose` runs once when bluetoothd closes its end.
    static func make(recordSize: Int = 23, onPacket: (@BleLoop (Datagram) -> Void)?,
                     onClose: @escaping @BleLoop () -> Void) -> (ours: ServerSocket, theirs: UnixFileDescriptor)? {
        var pair: [Int32] = [-1, -1]
        let type = Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        guard socketpair(AF_UNIX, type, 0, &pair) == 0 else { return nil }
        let ours = ServerSocket(descriptor: pair[0], onClose: onClose)
        let theirs = UnixFileDescriptor(adopting: pair[1])
        let records = DatagramRecords(recordSize: max(1, recordSize))
        ours.readWatch = FileDescriptorWatch(descriptor: pair[0]) { [weak ours] events in
            guard let ours else { return }
            ours.readable(events, records, onPacket)
        }
        return (ours, theirs)
    }

    /// Reads what is waiting, as the central side's notification sockets do: one `recvmmsg`
    /// of at most `Peripheral.packetsPerWakeUp` records per wake-up, so a flood cannot hold
    /// the loop (the level-triggered watch brings us back for the rest).
    private func readable(_ events: FileDescriptorWatch.Events, _ records: DatagramRecords, _ onPacket: (@BleLoop (Datagram) -> Void)?) {
        let descriptor = self.descriptor
        guard descriptor >= 0 else { return }
        if events.contains(.readable) {
            let received = blekit_receive_whole_records(descriptor, records.buffer, records.recordSize,
                                                        UInt32(Peripheral.packetsPerWakeUp), records.lengths, records.truncated)
            if received < 0 {
                if errno != EAGAIN && errno != EWOULDBLOCK { return peerClosed() }
            } else {
                var datagrams: [Datagram] = []
                datagrams.reserveCapacity(Int(received))
                var ended = received == 0
                for index in 0..<Int(received) {
                    let length = records.lengths[index]
                    // A zero-length record is SEQPACKET's end of file.
                    guard length > 0 else { ended = true; break }
                    if records.truncated[index] != 0 {
                        datagrams.append(.tooLong(length: length))
                    } else {
                        datagrams.append(.whole(Data(bytes: records.buffer + index * records.recordSize, count: length)))
                    }
                }
                for datagram in datagrams {
                    onPacket?(datagram)
                    // A callback may have closed the socket.
                    guard self.descriptor == descriptor else { return }
                }
                if ended { return peerClosed() }
                if Int(received) == Peripheral.packetsPerWakeUp { return }
            }
        }
        if events.contains(.hangUp) || events.contains(.error) { peerClosed() }
    }

    /// Sends one value without blocking.
    func send(_ data: Data) -> SendResult {
        guard descriptor >= 0 else { return .closed }
        let sent = data.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
        if sent >= 0 { return .sent }
        if errno == EAGAIN || errno == EWOULDBLOCK { return .full }
        peerClosed()
        return .closed
    }

    /// Calls `ready` once when the socket takes data again.
    func whenWritable(_ ready: @escaping @BleLoop () -> Void) {
        guard descriptor >= 0, writeWatch == nil else { return }
        writeWatch = FileDescriptorWatch(descriptor: descriptor, events: .writable) { [weak self] events in
            guard let self else { return }
            self.writeWatch?.cancel()
            self.writeWatch = nil
            if events.contains(.writable) { ready() }
        }
    }

    private func peerClosed() {
        guard descriptor >= 0 else { return }
        close()
        onClose()
    }

    /// Freed without `close()` (its owner dropped it): our end closes with it instead of
    /// staying open, unseen, until the process exits.
    isolated deinit {
        close()
    }

    /// Closes our end (bluetoothd sees the hang-up).
    func close() {
        readWatch?.cancel()
        readWatch = nil
        writeWatch?.cancel()
        writeWatch = nil
        if descriptor >= 0 {
            _ = Glibc.close(descriptor)
            descriptor = -1
        }
    }
}

/// One socket's receive buffer: `Peripheral.packetsPerWakeUp` records of `recordSize` bytes,
/// allocated once with the socket rather than per read.
@BleLoop
final class DatagramRecords {
    let recordSize: Int
    let buffer: UnsafeMutablePointer<UInt8>
    let lengths: UnsafeMutablePointer<Int>
    let truncated: UnsafeMutablePointer<UInt8>

    init(recordSize: Int) {
        self.recordSize = recordSize
        let count = Peripheral.packetsPerWakeUp
        buffer = .allocate(capacity: recordSize * count)
        lengths = .allocate(capacity: count)
        truncated = .allocate(capacity: count)
        truncated.initialize(repeating: 0, count: count)
    }

    isolated deinit {
        buffer.deallocate()
        lengths.deallocate()
        truncated.deallocate()
    }
}
