import BleDBus
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

    /// Makes the pair; `theirs` goes to bluetoothd in the reply. `onPacket` receives what
    /// bluetoothd writes (write commands); `onClose` runs once when bluetoothd closes its end.
    static func make(onPacket: (@BleLoop (Data) -> Void)?, onClose: @escaping @BleLoop () -> Void) -> (ours: ServerSocket, theirs: UnixFileDescriptor)? {
        var pair: [Int32] = [-1, -1]
        let type = Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        guard socketpair(AF_UNIX, type, 0, &pair) == 0 else { return nil }
        let ours = ServerSocket(descriptor: pair[0], onClose: onClose)
        let theirs = UnixFileDescriptor(adopting: pair[1])
        let descriptor = pair[0]
        ours.readWatch = FileDescriptorWatch(descriptor: descriptor) { [weak ours] events in
            guard let ours, ours.descriptor >= 0 else { return }
            if events.contains(.readable) {
                var buffer = [UInt8](repeating: 0, count: 1024)
                while ours.descriptor >= 0 {
                    let count = recv(descriptor, &buffer, buffer.count, Int32(MSG_DONTWAIT))
                    if count > 0 {
                        onPacket?(Data(buffer[0..<count]))
                        continue
                    }
                    if count == 0 || (errno != EAGAIN && errno != EWOULDBLOCK) { return ours.peerClosed() }
                    break
                }
            }
            if events.contains(.hangUp) || events.contains(.error) { ours.peerClosed() }
        }
        return (ours, theirs)
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
