@testable import BleCore
import BleDBus
import Foundation
import Glibc
import Testing

/// A subscription owns its AcquireNotify socket: dropped without `end()`, it closes it.
@Suite @BleLoop struct NotifySubscriptionTests {
    @Test func aSubscriptionDroppedWithoutEndClosesItsSocket() throws {
        var pair: [Int32] = [0, 0]
        try #require(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0, &pair) == 0)
        let theirs = pair[1]
        defer { Glibc.close(theirs) }
        var subscription: NotifySubscription? = NotifySubscription(link: 1, path: .acquire)
        subscription?.adopt(descriptor: pair[0], watch: FileDescriptorWatch(descriptor: pair[0]) { _ in })
        #expect(subscription?.isOn == true)
        subscription = nil
        // Our end gone, the peer (bluetoothd) sees the hang-up at once.
        var descriptor = pollfd(fd: theirs, events: Int16(POLLIN), revents: 0)
        #expect(poll(&descriptor, 1, 0) == 1 && descriptor.revents & Int16(POLLHUP) != 0, "revents \(descriptor.revents)")
    }
}
