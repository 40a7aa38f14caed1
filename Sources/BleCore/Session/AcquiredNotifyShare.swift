import BleDBus
import Foundation

/// One characteristic's AcquireNotify socket, shared by every manager of the process.
///
/// bluetoothd hands out one notification socket per characteristic, whoever asks: while it is
/// held, another AcquireNotify or a StartNotify is refused ("Notify acquired"), even from the
/// same client. So the first subscriber of the process owns the socket and the others ride
/// it: each packet the owner reads goes to every rider's characteristic too. When the owner
/// unsubscribes (or its manager closes) on a live link, the socket goes to a rider, open, so
/// nobody misses a packet; when the socket ends on a live link, every member falls back.
@BleLoop
final class AcquiredNotifyShare {
    /// A subscription of one manager's characteristic to the share.
    struct Member {
        weak var peripheral: Peripheral?
        weak var characteristic: Characteristic?
        weak var subscription: NotifySubscription?

        /// Still subscribed, on a live link, to this share.
        @BleLoop var isLive: Bool {
            guard let peripheral, let characteristic, let subscription else { return false }
            return !subscription.isEnded && characteristic.subscription === subscription && peripheral.isLinkUp
        }

        @BleLoop func holds(_ subscription: NotifySubscription) -> Bool { self.subscription === subscription }
    }

    let path: ObjectPath
    /// Whose socket it is.
    private(set) var owner: Member
    /// Who rides it, in subscription order.
    private(set) var riders: [Member] = []

    init(path: ObjectPath, owner: Member) {
        self.path = path
        self.owner = owner
    }

    /// Whether packets must be copied to riders (checked once per packet by the owner).
    var hasRiders: Bool { !riders.isEmpty }

    /// Adds a rider.
    func add(_ rider: Member) {
        riders.append(rider)
    }

    /// Forgets the member holding `subscription` (a rider that left, or dead ones).
    func remove(_ subscription: NotifySubscription) {
        riders.removeAll { $0.holds(subscription) || !$0.isLive }
    }

    /// Gives `value`, which the owner read, to every live rider.
    func deliverToRiders(_ value: Data) {
        for rider in riders {
            guard let peripheral = rider.peripheral, let characteristic = rider.characteristic, rider.isLive else { continue }
            peripheral.deliverNotification(value, characteristic)
        }
    }

    /// The first live rider becomes the owner (it takes the socket); nil when none is left.
    func promoteHeir() -> Member? {
        riders.removeAll { !$0.isLive }
        guard !riders.isEmpty else { return nil }
        owner = riders.removeFirst()
        return owner
    }

    /// Every live rider, taken out of the share (the socket is gone).
    func takeRiders() -> [Member] {
        let live = riders.filter(\.isLive)
        riders.removeAll()
        return live
    }
}
