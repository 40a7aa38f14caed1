import BleDBus
import Foundation
import Glibc

/// Our end of an `AcquireWrite`/`AcquireNotify` socket pair (AF_UNIX, SOCK_SEQPACKET): one
/// datagram per ATT packet, as bluetoothd's `socketpair`.
@BleLoop
final class AcquiredSocket {
    private var descriptor: Int32
    private var watch: FileDescriptorWatch?

    private init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Makes the pair; `theirs` goes to the client in the reply.
    static func make(onClose: @escaping @BleLoop () -> Void,
                     onPacket: (@BleLoop (Data) -> Void)?) -> (ours: AcquiredSocket, theirs: UnixFileDescriptor)? {
        var pair: [Int32] = [-1, -1]
        let type = Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        guard socketpair(AF_UNIX, type, 0, &pair) == 0 else { return nil }
        let ours = AcquiredSocket(descriptor: pair[0])
        let theirs = UnixFileDescriptor(adopting: pair[1])
        let descriptor = pair[0]
        ours.watch = FileDescriptorWatch(descriptor: descriptor) { [weak ours] events in
            guard let ours, ours.descriptor >= 0 else { return }
            if events.contains(.readable) {
                var buffer = [UInt8](repeating: 0, count: 1024)
                while true {
                    let count = recv(descriptor, &buffer, buffer.count, Int32(MSG_DONTWAIT))
                    if count > 0 {
                        onPacket?(Data(buffer[0..<count]))
                        continue
                    }
                    if count == 0 || (errno != EAGAIN && errno != EWOULDBLOCK) {
                        onClose()
                        return
                    }
                    break
                }
            }
            if events.contains(.hangUp) || events.contains(.error) { onClose() }
        }
        return (ours, theirs)
    }

    /// Sends one packet; a full socket drops it, as a slow reader would lose notifications.
    func send(_ data: Data) {
        guard descriptor >= 0 else { return }
        _ = data.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
    }

    func close() {
        watch?.cancel()
        watch = nil
        if descriptor >= 0 {
            _ = Glibc.close(descriptor)
            descriptor = -1
        }
    }

    isolated deinit { close() }
}
