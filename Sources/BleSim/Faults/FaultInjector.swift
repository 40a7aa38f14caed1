import BleDBus
import Foundation

/// Faults to inject, by device address (and characteristic), as the real stack produces them.
///
/// Set them before or during a test; each has a count of how many times it fires (nil: always).
@BleLoop
public final class FaultInjector {
    /// How a `Connect` fails.
    public enum ConnectFailure: String, Sendable, Codable, CaseIterable {
        /// `Connected` turns true briefly, then `Failed "le-connection-abort-by-local"`.
        case abortByLocal
        /// `org.bluez.Error.InProgress "In Progress"` at once.
        case inProgress
        /// No reply at all until the caller gives up or calls Disconnect.
        case neverAnswer
        /// After the timing model's connect timeout: `Failed "le-connection-abort-by-local"`.
        case timeout
    }

    /// Which GATT operation an ATT error applies to.
    public enum Operation: String, Sendable, Codable, CaseIterable {
        /// ReadValue.
        case read
        /// WriteValue (and AcquireWrite packets).
        case write
    }

    /// What happens to notifications.
    public enum NotificationFault: Sendable, Codable, Equatable {
        /// Every `n`-th notification is lost.
        case dropEvery(Int)
        /// Every notification arrives twice.
        case duplicate
        /// Notifications arrive in swapped pairs: each odd one is held back and sent after the
        /// next (a controller that reorders, or two bearers racing).
        case reorderPairs
    }

    struct Counted<Value> {
        var value: Value
        var remaining: Int?

        mutating func take() -> Value? {
            if let count = remaining {
                guard count > 0 else { return nil }
                remaining = count - 1
            }
            return value
        }
    }

    private var connectFailures: [String: Counted<ConnectFailure>] = [:]
    private var linkLossPackets: [String: Int] = [:]
    private var notificationFaults: [String: NotificationFault] = [:]
    private var notificationCounters: [String: Int] = [:]
    private var heldNotifications: [String: Data] = [:]
    private var attErrors: [String: Counted<AttError>] = [:]
    private var silentMethods: [String: Counted<Void>] = [:]
    private var wrongShapeReplies: [String: Counted<[DBusValue]>] = [:]
    private var failedMethods: [String: Counted<(name: String, message: String)>] = [:]
    private var deniedClients: Set<String> = []
    private var earlyResolution: [String: Counted<Double>] = [:]
    private var missedConnected: [String: Counted<Void>] = [:]
    private var slowDiscoveryStops: Counted<Double>?
    /// Advertisers are heard once per scan start only (btvirt); see `reportOnlyAtScanStart`.
    public private(set) var reportsOnlyAtScanStart = false
    private var denyEveryone = false

    init() {}

    /// Makes the next `times` Connects to `address` fail (nil: every one).
    public func failConnect(_ address: String, with failure: ConnectFailure, times: Int? = 1) {
        connectFailures[address.uppercased()] = Counted(value: failure, remaining: times)
    }

    /// Drops the link to `address` once it carried `packets` ATT packets.
    public func loseLink(_ address: String, afterPackets packets: Int) {
        linkLossPackets[address.uppercased()] = packets
    }

    /// Applies `fault` to notifications from `address` (nil clears it).
    public func setNotificationFault(_ address: String, _ fault: NotificationFault?) {
        notificationFaults[address.uppercased()] = fault
    }

    /// Answers the next `times` operations on characteristic `uuid` of `address` with `error`.
    public func injectAttError(_ address: String, characteristic uuid: String, operation: Operation, error: AttError,
                               times: Int? = 1) {
        attErrors[key(address, uuid, operation)] = Counted(value: error, remaining: times)
    }

    /// On the next `times` connections to `address` that discover services, announces
    /// `ServicesResolved=true` first and exports the GATT objects `milliseconds` later, as
    /// bluetoothd sometimes does (bluez #1489).
    public func announceServicesResolvedEarly(_ address: String, objectsAfterMilliseconds milliseconds: Double, times: Int? = 1) {
        earlyResolution[address.uppercased()] = Counted(value: milliseconds, remaining: times)
    }

    /// On the next `times` connections to `address`, never announces `Connected=true` (the
    /// property reads true, and `ServicesResolved=true` follows), as bluetoothd 5.66 does when
    /// the ATT socket connects before it reads the kernel's Device Connected event ("Device …
    /// is already connected" in its log; seen in the VM of `make test-bluez`).
    public func missConnectedAnnouncement(_ address: String, times: Int? = 1) {
        missedConnected[address.uppercased()] = Counted(value: (), remaining: times)
    }

    /// Makes the controller take `milliseconds` to confirm the next `times` stops of the last
    /// discovery session, as bluetoothd 5.66 waits for MGMT Stop Discovery before it answers
    /// `StopDiscovery`: meanwhile the client still counts as discovering, so its
    /// `StartDiscovery` is refused with InProgress, and the stop then ends discovery.
    public func slowDiscoveryStop(milliseconds: Double, times: Int? = 1) {
        slowDiscoveryStops = Counted(value: milliseconds, remaining: times)
    }

    /// Makes every advertiser heard once when a scan starts and never again during it, as the
    /// VM's emulated controller (btvirt) sends each advertisement once per LE Set Scan Enable,
    /// where a real advertiser repeats. A device whose one report is missed, or is not taken
    /// as a discovery, stays unseen until the next scan start (`central.scanFilters` in
    /// `make test-bluez`: a device removed and re-created by its one report went unreported).
    public func reportOnlyAtScanStart(_ on: Bool = true) {
        reportsOnlyAtScanStart = on
    }

    /// Makes the simulator never answer the next `times` calls of `member` (e.g. `ReadValue`).
    public func neverReply(to member: String, times: Int? = 1) {
        silentMethods[member] = Counted(value: (), remaining: times)
    }

    /// Answers the next `times` calls of `member` with `body` instead of the documented reply,
    /// as a broken or hostile owner of `org.bluez` would (a string where bytes belong, MTU 0).
    public func replyWrongShape(to member: String, with body: [DBusValue], times: Int? = 1) {
        wrongShapeReplies[member] = Counted(value: body, remaining: times)
    }

    /// Answers the next `times` calls of `member` with the error `name` and `message`.
    public func failCall(_ member: String, name: String, message: String, times: Int? = 1) {
        failedMethods[member] = Counted(value: (name, message), remaining: times)
    }

    /// Answers every call from the client with this unique name with `AccessDenied`.
    public func denyAccess(to client: String) { deniedClients.insert(client) }
    /// Answers every call with `AccessDenied` (a user not allowed to talk to bluetoothd).
    public func denyAccessToEveryone(_ deny: Bool = true) { denyEveryone = deny }
    /// Removes every fault.
    public func clear() {
        connectFailures.removeAll()
        linkLossPackets.removeAll()
        notificationFaults.removeAll()
        heldNotifications.removeAll()
        attErrors.removeAll()
        silentMethods.removeAll()
        wrongShapeReplies.removeAll()
        failedMethods.removeAll()
        deniedClients.removeAll()
        earlyResolution.removeAll()
        slowDiscoveryStops = nil
        reportsOnlyAtScanStart = false
        missedConnected.removeAll()
        denyEveryone = false
    }

    // MARK: Queries

    func connectFailure(address: String) -> ConnectFailure? { connectFailures[address.uppercased()]?.take() }

    func linkLossDue(address: String, packets: Int) -> Bool {
        guard let limit = linkLossPackets[address.uppercased()], packets >= limit else { return false }
        linkLossPackets.removeValue(forKey: address.uppercased())
        return true
    }

    func notificationCopies(address: String, value: Data) -> [Data] {
        switch notificationFaults[address.uppercased()] {
        case .none: return [value]
        case .duplicate: return [value, value]
        case .reorderPairs:
            guard let held = heldNotifications.removeValue(forKey: address.uppercased()) else {
                heldNotifications[address.uppercased()] = value
                return []
            }
            return [value, held]
        case .dropEvery(let n):
            let count = (notificationCounters[address.uppercased()] ?? 0) + 1
            notificationCounters[address.uppercased()] = count
            return n > 0 && count % n == 0 ? [] : [value]
        }
    }

    func attError(address: String, uuid: String, operation: Operation) -> AttError? {
        attErrors[key(address, uuid, operation)]?.take()
    }

    func servicesResolvedEarly(address: String) -> Double? { earlyResolution[address.uppercased()]?.take() }
    func discoveryStopDelay() -> Double? { slowDiscoveryStops?.take() }

    func missesConnectedAnnouncement(address: String) -> Bool { missedConnected[address.uppercased()]?.take() != nil }

    func shouldSwallow(member: String) -> Bool { silentMethods[member]?.take() != nil }

    func wrongShapeReply(member: String) -> [DBusValue]? { wrongShapeReplies[member]?.take() }

    func injectedFailure(member: String) -> (name: String, message: String)? { failedMethods[member]?.take() }

    func isDenied(_ client: String) -> Bool { denyEveryone || deniedClients.contains(client) }

    private func key(_ address: String, _ uuid: String, _ operation: Operation) -> String {
        "\(address.uppercased())|\(SimUUID.full(uuid) ?? uuid.lowercased())|\(operation.rawValue)"
    }
}
