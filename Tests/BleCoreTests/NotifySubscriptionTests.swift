@testable import BleCore
import BleDBus
import BleTestSupport
import Foundation
import Glibc
import Testing

/// A subscription owns its AcquireNotify socket: ended or dropped without `end()`, it closes it.
///
/// Checked from the peer's end (bluetoothd's, here the test's): it reads end of file, which
/// descriptor numbers reused by tests running meanwhile cannot fake.
@Suite(.timeLimit(.minutes(TestTime.minutes(1)))) @BleLoop struct NotifySubscriptionTests {
    /// Gives `subscription` a socket that is being read, as AcquireNotify's reply does, and
    /// keeps no other reference to it; returns the peer's descriptor.
    static func acquire(_ subscription: NotifySubscription) throws -> Int32 {
        let (ours, theirs) = try SeqPacketSocket.makePair()
        ours.startReading { _ in }
        subscription.adopt(ours)
        return theirs
    }

    @Test func aSubscriptionDroppedWithoutEndClosesItsSocket() async throws {
        var subscription: NotifySubscription? = NotifySubscription(link: 1, path: .acquire)
        let theirs = try Self.acquire(try #require(subscription))
        defer { close(theirs) }
        #expect(subscription?.isOn == true)
        #expect(subscription?.descriptor != nil)
        subscription = nil
        #expect(await PeerEnd.hungUp(theirs))
    }

    @Test func anEndedSubscriptionClosesItsSocketAndRefusesALateOne() async throws {
        let (first, firstPeer) = try SeqPacketSocket.makePair()
        let (late, latePeer) = try SeqPacketSocket.makePair()
        defer {
            close(firstPeer)
            close(latePeer)
        }
        let subscription = NotifySubscription(link: 1, path: .acquire)
        subscription.adopt(first)
        subscription.end()
        #expect(await PeerEnd.hungUp(firstPeer))
        // A socket arriving for an ended subscription (a late reply) is closed at once.
        subscription.adopt(late)
        #expect(subscription.descriptor == nil)
        #expect(await PeerEnd.hungUp(latePeer))
    }
}
