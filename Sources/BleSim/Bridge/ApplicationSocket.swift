import BleDBus
import Foundation
import Glibc

/// bluetoothd's end of a socket an app handed over with `AcquireWrite` or `AcquireNotify` on
/// its own characteristic (the server side): write commands go in, notifications come out, one
/// datagram per ATT value. Closing it is how bluetoothd tells the app it is done.
@BleLoop
final class ApplicationSocket {
    private var descriptor: Int32
    private var watch: FileDescriptorWatch?

    /// Takes over `handle`; `onPacket` gets what the app writes, `onClose` runs once when the app closes its end.
    init?(_ handle: UnixFileDescriptor, onPacket: (@BleLoop (Data) -> Void)?, onClose: @escaping @BleLoop () -> Void) {
        guard let taken = handle.take() else { return nil }
        descriptor = taken
        _ = fcntl(taken, F_SETFL, fcntl(taken, F_GETFL) | O_NONBLOCK)
        watch = FileDescriptorWatch(descriptor: taken) { [weak self] events in
            guard let self, self.descriptor >= 0 else { return }
            if events.contains(.readable) {
                var buffer = [UInt8](repeating: 0, count: 1024)
                while self.descriptor >= 0 {
                    let count = recv(taken, &buffer, buffer.count, Int32(MSG_DONTWAIT))
                    if count > 0 {
                        onPacket?(Data(buffer[0..<count]))
                        continue
                    }
                    if count == 0 || (errno != EAGAIN && errno != EWOULDBLOCK) {
                        self.close()
                        return onClose()
                    }
                    break
                }
            }
            if events.contains(.hangUp) || events.contains(.error) {
                self.close()
                onClose()
            }
        }
    }

    /// Passes one write command to the app; a full socket drops it, as bluetoothd does.
    func send(_ data: Data) {
        guard descriptor >= 0 else { return }
        _ = data.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
    }

    var isOpen: Bool { descriptor >= 0 }

    func close() {
        watch?.cancel()
        watch = nil
        if descriptor >= 0 {
            _ = Glibc.close(descriptor)
            descriptor = -1
        }
    }
}
