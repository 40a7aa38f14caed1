@testable import BleCore
import BleDBus
import Foundation
import Glibc
import Testing

/// The socket a served characteristic hands bluetoothd (AcquireNotify/AcquireWrite): our end
/// must never outlive its owner.
@Suite @BleLoop struct ServerSocketTests {
    @Test func aServerSocketDroppedWithoutCloseHangsUpOnThePeer() async throws {
        var made = ServerSocket.make(onPacket: nil, onClose: {})
        let theirs = try #require(made?.theirs.take())
        defer { Glibc.close(theirs) }
        made = nil
        // Our end gone, the peer's end reads end of file (a SEQPACKET pair's hang-up).
        var descriptor = pollfd(fd: theirs, events: Int16(POLLIN), revents: 0)
        let ready = poll(&descriptor, 1, 10_000)
        #expect(ready == 1 && descriptor.revents & Int16(POLLHUP) != 0, "revents \(descriptor.revents)")
        var byte: UInt8 = 0
        #expect(recv(theirs, &byte, 1, Int32(MSG_DONTWAIT)) == 0)
    }
}
