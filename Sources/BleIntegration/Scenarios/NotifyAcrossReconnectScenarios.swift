import BleCore
import BleDBus
import Foundation
import BlueZVocabulary

/// Notifications across the commonest real event, a reconnect (issue 10): after the link comes
/// back, every notification the peer sends arrives exactly once, with its content, and
/// `isNotifying` tells the truth at every point.
///
/// The app side is written as an iOS app would be: notification state ends with the link
/// (CoreBluetooth), so after reconnecting it discovers again and calls `setNotifyValue(true)`
/// again. A BleKit that re-arms subscriptions by itself on reconnect passes too, as long as
/// the second request doubles nothing.
enum NotifyAcrossReconnectScenarios {
    static let all: [IntegrationScenario] = [linkLossAcquireNotify, linkLossStartNotify, peerRestart]

    /// Checks whose failure does not stop the scenario, so that one run shows everything that
    /// goes wrong after the reconnect; the scenario fails at its end if any did.
    @BleLoop
    final class Problems {
        private(set) var found: [String] = []

        func check(_ context: ScenarioContext, _ work: () async throws -> Void) async throws {
            do {
                try await work()
            } catch let failure as ScenarioFailure {
                found.append(failure.description)
                context.step("problem: \(failure.description)")
            }
        }

        func finish() throws {
            if !found.isEmpty { throw ScenarioFailure(found.joined(separator: "; ")) }
        }
    }

    /// How many notifications each check after the reconnect asks the peer for.
    static let burstAfterReconnect: UInt8 = 20

    static let linkLossAcquireNotify = IntegrationScenario(
        "notify.linkLossAcquireNotify", "Notifications on (AcquireNotify), the peer's controller powered off and on, a reconnect: every notification after it arrives exactly once."
    ) { context in
        try await acrossLinkLoss(context, preferStartNotify: false)
    }

    static let linkLossStartNotify = IntegrationScenario(
        "notify.linkLossStartNotify", "Notifications on (StartNotify), the peer's controller powered off and on, a reconnect: every notification after it arrives exactly once."
    ) { context in
        try await acrossLinkLoss(context, preferStartNotify: true)
    }

    static let peerRestart = IntegrationScenario(
        "notify.peerRestart", "Notifications on, the peer's GATT app exits and starts again: the central follows (reconnect or rediscovery) and every notification after it arrives exactly once."
    ) { context in
        let problems = Problems()
        let (peer, central, peripheral) = try await context.connectedPeer()
        try await enable(context, peripheral, preferStartNotify: false, label: "before the restart")
        try await checkBurst(context, peripheral, count: 5, label: "before the restart")

        let mark = context.probe.mark
        // The central's BlueZ exports the restarted app's service again when it learns of it
        // (Service Changed); armed first, so the announcement cannot be missed.
        let serviceBack = try ServiceAddedWait(connection: try await context.dbus(), uuid: PeerProtocol.service)
        peer.exitProcess()
        context.step("peer app exited")
        let restarted = try await context.peer()
        context.step("peer app started again")
        // bluetoothd may keep the link and announce the changed database, or the link may go:
        // an app handles whichever comes.
        let event = try? await context.probe.wait(since: mark, timeout: .seconds(15), "the central hears the restart") {
            switch $0 {
            case .disconnected(let other, _): return other === peripheral
            case .servicesModified: return true
            default: return false
            }
        }
        switch event {
        case .disconnected(_, let error)?:
            context.step("restart: disconnected \(ProbeEvent.describe(error))")
            try await problems.check(context) { try await checkNotNotifyingWithoutLink(context, peripheral) }
            try context.expect(try await context.connect(central, peripheral, label: "reconnect") == nil, "reconnect after the peer restart failed")
        case .servicesModified(let uuids)?:
            context.step("restart: services modified \(uuids.map(\.uuidString))")
            // The link stayed: rediscover once the service is back, as an app does after
            // didModifyServices.
            try await serviceBack.wait(deadline: context.eventDeadline)
        default:
            context.step("restart: link and services reported unchanged")
        }
        context.step("state after the restart \(peripheral.state)")
        try await context.resolve(peripheral)
        try await afterReconnect(context, peripheral, preferStartNotify: false, problems: problems)
        _ = restarted
        try await context.disconnect(central, peripheral)
        try problems.finish()
    }

    /// (a) and (b): notifications on, link loss by powering off the peer's controller, reconnect.
    @BleLoop
    static func acrossLinkLoss(_ context: ScenarioContext, preferStartNotify: Bool) async throws {
        let problems = Problems()
        let (peer, central, peripheral) = try await context.connectedPeer()
        try await enable(context, peripheral, preferStartNotify: preferStartNotify, label: "before the link loss")
        try await checkBurst(context, peripheral, count: 5, label: "before the link loss")

        let mark = context.probe.mark
        try await context.setPowered(context.backend.peripheralAdapter, false)
        try await context.waitForDisconnect(peripheral, since: mark, label: "link loss")
        try await problems.check(context) { try await checkNotNotifyingWithoutLink(context, peripheral) }
        try await context.setPowered(context.backend.peripheralAdapter, true)
        // A powered-off controller ends the advertisement; the GATT application stays, so the
        // peer's database (and the central's cache of it) is the one from before the loss.
        try await peer.registerAdvertisementAgain()
        context.step("peer advertising again")
        // What an iOS app does in didDisconnectPeripheral: connect the same peripheral again.
        try context.expect(try await context.connect(central, peripheral, label: "reconnect") == nil, "reconnect after the link loss failed")
        try await context.resolve(peripheral)
        try await afterReconnect(context, peripheral, preferStartNotify: preferStartNotify, problems: problems)
        try await context.disconnect(central, peripheral)
        try problems.finish()
    }

    /// Without a link nothing can notify: `isNotifying` must say so.
    @BleLoop
    static func checkNotNotifyingWithoutLink(_ context: ScenarioContext, _ peripheral: Peripheral) async throws {
        let response = try context.characteristic(peripheral, PeerProtocol.response)
        context.step("isNotifying without a link \(response.isNotifying)")
        try context.expect(!response.isNotifying, "isNotifying is true while the peripheral is disconnected")
    }

    /// After the reconnect and a fresh discovery: if BleKit already says notifying (it re-armed
    /// the subscription by itself), notifications must flow before the app asks again; then the
    /// app's own request, as on iOS, and a burst that must arrive exactly once. Whether and when
    /// a re-arm completes depends on timing (it races the discovery), so that check leaves no
    /// entry in the transcript unless it fails.
    @BleLoop
    static func afterReconnect(_ context: ScenarioContext, _ peripheral: Peripheral, preferStartNotify: Bool,
                               problems: Problems) async throws {
        let response = try context.characteristic(peripheral, PeerProtocol.response)
        response.prefersStartNotify = preferStartNotify
        let already = response.isNotifying
        if already {
            try await problems.check(context) { try await checkBurst(context, peripheral, count: 5, label: "re-armed by BleKit", recorded: false) }
        }
        try await enable(context, peripheral, preferStartNotify: preferStartNotify, label: "after the reconnect", alreadyOn: already)
        try await checkBurst(context, peripheral, count: burstAfterReconnect, label: "after the reconnect")
        try await context.setNotify(peripheral, false, response)
        try context.expect(!response.isNotifying, "isNotifying still true after notifications were turned off")
    }

    /// `setNotifyValue(true)` and its callback. When BleKit already reports notifying (it
    /// re-armed by itself), a callback is still expected as CoreBluetooth gives one; its
    /// absence is recorded, not failed, because a redundant request may be answered silently.
    @BleLoop
    static func enable(_ context: ScenarioContext, _ peripheral: Peripheral, preferStartNotify: Bool, label: String,
                       alreadyOn: Bool = false) async throws {
        let response = try context.characteristic(peripheral, PeerProtocol.response)
        response.prefersStartNotify = preferStartNotify
        let mark = context.probe.mark
        peripheral.setNotifyValue(true, for: response)
        let event: ProbeEvent
        do {
            event = try await context.probe.wait(since: mark, timeout: alreadyOn ? .seconds(5) : context.eventDeadline,
                                                 "notify true \(label)") {
                if case .notifyState(let other, _, _) = $0 { return other === response }
                return false
            }
        } catch let timeout as CentralProbe.Timeout {
            guard alreadyOn else { throw timeout }
            context.step("notify \(label) true, no callback (already notifying)")
            try context.expect(response.isNotifying, "isNotifying turned false after a redundant setNotifyValue(true)")
            return
        }
        guard case .notifyState(_, let state, let error) = event else { throw ScenarioFailure("unexpected \(event)") }
        context.step("notify \(label) \(state) \(ProbeEvent.describe(error))")
        try context.expect(error == nil && state, "notify true \(label) failed: \(event)")
        try context.expect(response.isNotifying, "isNotifying false after a successful setNotifyValue(true) \(label)")
    }

    /// Asks the peer for `count` notifications, then two echoes as fences (notifications on one
    /// link keep their order): once the second fence is in, every packet of the burst and the
    /// first fence must have arrived exactly once, in order, with their content. Values are
    /// counted by UUID, whatever `Characteristic` object carries them, so a stale subscription
    /// on the tree of the previous connection counts as a double too.
    @BleLoop
    static func checkBurst(_ context: ScenarioContext, _ peripheral: Peripheral, count: UInt8, label: String,
                           recorded: Bool = true) async throws {
        let command = try context.characteristic(peripheral, PeerProtocol.command)
        let mark = context.probe.mark
        func write(_ data: Data, _ what: String) async throws {
            if recorded {
                try context.expect(try await context.write(peripheral, data, command, label: "\(what) \(label)") == nil, "\(what) write failed \(label)")
                return
            }
            let before = context.probe.mark
            peripheral.writeValue(data, for: command, type: .withResponse)
            let event = try await context.probe.wait(since: before, timeout: context.eventDeadline, "\(what) \(label)") {
                if case .wrote(let other, _) = $0 { return other === command }
                return false
            }
            if case .wrote(_, let error?) = event { throw ScenarioFailure("\(what) write failed \(label): \(ProbeEvent.describe(error))") }
        }
        try await write(Data([PeerProtocol.Opcode.burst.rawValue, count]), "burst \(count)")
        let fences = [Data([PeerProtocol.Opcode.echo.rawValue, 0xf1]), Data([PeerProtocol.Opcode.echo.rawValue, 0xf2])]
        for fence in fences {
            try await write(fence, "fence")
            let answer = Data([0x81]) + fence.dropFirst()
            do {
                try await context.probe.wait(since: mark, timeout: context.eventDeadline, "fence \(ProbeEvent.hex(answer)) \(label)") {
                    if case .value(let characteristic, let data, nil) = $0 { return characteristic.uuid == PeerProtocol.response && data == answer }
                    return false
                }
            } catch is CentralProbe.Timeout {
                let got = received(context, since: mark)
                if recorded { context.step("notifications \(label): \(got.count) received, fence \(ProbeEvent.hex(answer)) never arrived") }
                throw ScenarioFailure("notifications \(label): the fence \(ProbeEvent.hex(answer)) never arrived within \(context.eventDeadline); received \(got.map(ProbeEvent.hex))")
            }
        }
        let got = received(context, since: mark)
        let expected = (0..<count).map { PeerProtocol.burstPacket($0, of: count) } + [Data([0x81, 0xf1]), Data([0x81, 0xf2])]
        let doubled = Set(got.filter { value in got.filter { $0 == value }.count > 1 })
        let missing = expected.filter { !got.contains($0) }
        if recorded { context.step("notifications \(label): \(got.count) received, \(missing.count) missing, \(doubled.count) doubled") }
        try context.expect(got == expected, "notifications \(label): expected \(expected.count) each once in order, received \(got.map(ProbeEvent.hex)); missing \(missing.map(ProbeEvent.hex)), doubled \(doubled.map(ProbeEvent.hex))")
    }

    /// Every successful value of the peer's response characteristic since `mark`.
    @BleLoop
    static func received(_ context: ScenarioContext, since mark: Int) -> [Data] {
        context.probe.events.dropFirst(mark).compactMap { event -> Data? in
            if case .value(let characteristic, let data, nil) = event, characteristic.uuid == PeerProtocol.response { return data }
            return nil
        }
    }
}

/// Waits for the central's BlueZ to export a GATT service with `uuid` (InterfacesAdded).
@BleLoop
final class ServiceAddedWait {
    private var subscription: SignalSubscription?
    private var added = false
    private var continuation: CheckedContinuation<Bool, Never>?
    private let uuid: BluetoothUUID

    init(connection: Connection, uuid: BluetoothUUID) throws {
        self.uuid = uuid
        subscription = try connection.signals.subscribe(SignalMatch(
            sender: "org.bluez", interface: "org.freedesktop.DBus.ObjectManager", member: "InterfacesAdded")) { [weak self] message in
            guard let self, message.body.count >= 2, let interfaces = try? BlueZShapes.interfaceMap(message.body[1]),
                  case .string(let text)? = interfaces["org.bluez.GattService1"]?["UUID"],
                  BluetoothUUID(text) == self.uuid else { return }
            self.finish(true)
        }
    }

    func wait(deadline: Duration) async throws {
        defer { subscription?.cancel() }
        if added { return }
        let timer = LoopTimer.scheduled(after: deadline) { [weak self] in self?.finish(false) }
        let ok = await withCheckedContinuation { continuation in
            if added { continuation.resume(returning: true) } else { self.continuation = continuation }
        }
        timer.cancel()
        if !ok { throw ScenarioFailure("the central's BlueZ did not export service \(uuid) again within \(deadline)") }
    }

    private func finish(_ ok: Bool) {
        if ok { added = true }
        if let continuation {
            self.continuation = nil
            continuation.resume(returning: ok)
        }
    }
}
