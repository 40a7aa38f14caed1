import BleCore
import Foundation

/// Two managers of one process on one bus share one BlueZ session (issue 27): bluetoothd sees
/// one D-Bus client, and keeps one StartNotify session per characteristic for it. Each
/// manager must still get every notification once — while both listen, after one of them
/// stops, and across a link loss after which bluetoothd re-enables its notify session by
/// itself (the quirk bleak avoids by giving every client a connection of its own).
enum SharedSessionScenarios {
    static let all: [IntegrationScenario] = [twoCentralsOneNotifySession, twoCentralsOneNotifySocket]

    static let twoCentralsOneNotifySession = IntegrationScenario(
        "notify.twoCentralsOneSession", "Two CentralManagers of one process, one bus connection, both subscribed to one characteristic (StartNotify): each gets every notification once, one's unsubscribe leaves the other's on, and both do again after a link loss and reconnect."
    ) { context in
        try await twoCentrals(context, overStartNotify: true)
    }

    static let twoCentralsOneNotifySocket = IntegrationScenario(
        "notify.twoCentralsOneSocket", "Two CentralManagers of one process subscribed to one characteristic over AcquireNotify (one socket per characteristic in bluetoothd): the second rides the first's socket and inherits it on the first's unsubscribe; each gets every notification once, also after a link loss."
    ) { context in
        try await twoCentrals(context, overStartNotify: false)
    }

    @BleLoop
    static func twoCentrals(_ context: ScenarioContext, overStartNotify: Bool) async throws {
        let peer = try await context.peer()
        let first = try await context.central()
        let second = try await context.central()
        try context.expect(first.dbusConnection != nil && first.dbusConnection === second.dbusConnection,
                           "the two centrals of the process hold different bus connections")
        context.step("two centrals on one bus connection")
        let one = try await context.discoverPeer(first)
        try context.expect(try await context.connect(first, one) == nil, "connect failed")
        try await context.resolve(one)
        let two = try await secondPeripheral(context, second, label: "second central")
        var responses = try await subscribeBoth(context, one, two, overStartNotify: overStartNotify)

        try await burst(context, from: one, count: 10, hearing: [("first", responses.0), ("second", responses.1)], label: "both subscribed")

        try await context.setNotify(one, false, responses.0)
        try await burst(context, from: one, count: 5, hearing: [("second", responses.1)], silent: [("first", responses.0)],
                        label: "first unsubscribed")
        try await context.setNotify(one, true, responses.0)
        try await burst(context, from: one, count: 5, hearing: [("first", responses.0), ("second", responses.1)], label: "first again")

        // The link drops under both; each app reconnects and subscribes again, as on iOS.
        let mark = context.probe.mark
        try await context.setPowered(context.backend.peripheralAdapter, false)
        try await context.waitForDisconnect(one, since: mark, label: "first central's link loss")
        try await context.waitForDisconnect(two, since: mark, label: "second central's link loss")
        try await context.setPowered(context.backend.peripheralAdapter, true)
        try await peer.registerAdvertisementAgain()
        context.step("peer advertising again")
        try context.expect(try await context.connect(first, one, label: "first reconnect") == nil, "the first central's reconnect failed")
        try await context.resolve(one)
        try context.expect(try await context.connect(second, two, label: "second reconnect") == nil, "the second central's reconnect failed")
        try await context.resolve(two)
        responses = try await subscribeBoth(context, one, two, overStartNotify: overStartNotify)
        try await burst(context, from: one, count: 20, hearing: [("first", responses.0), ("second", responses.1)], label: "after the reconnect")

        try await context.setNotify(one, false, responses.0)
        try await context.setNotify(two, false, responses.1)
        try await context.disconnect(first, one)
        // The second central's link is the same link: it ends with the first's disconnect.
        if two.state != .disconnected { try await context.disconnect(second, two) }
    }

    /// The second central's peripheral object for the peer the first one connected: the
    /// device is known to the shared session, so it is retrieved, then connected (bluetoothd
    /// already has the link) and resolved.
    @BleLoop
    static func secondPeripheral(_ context: ScenarioContext, _ central: CentralManager, label: String) async throws -> Peripheral {
        let connected = central.retrieveConnectedPeripherals(withServices: [PeerProtocol.service])
        let peripheral = try context.expectValue(connected.first, "the \(label) does not see the peer the first one connected")
        context.step("\(label) retrieved the connected peer")
        peripheral.delegate = context.probe
        try context.expect(try await context.connect(central, peripheral, label: "\(label) connect") == nil, "the \(label)'s connect failed")
        try await context.resolve(peripheral)
        return peripheral
    }

    /// Both centrals turn notifications on for the response characteristic, over StartNotify
    /// or AcquireNotify.
    @BleLoop
    static func subscribeBoth(_ context: ScenarioContext, _ one: Peripheral, _ two: Peripheral, overStartNotify: Bool)
        async throws -> (Characteristic, Characteristic) {
        let first = try context.characteristic(one, PeerProtocol.response)
        let second = try context.characteristic(two, PeerProtocol.response)
        try context.expect(first !== second, "the two centrals share a Characteristic object")
        first.prefersStartNotify = overStartNotify
        second.prefersStartNotify = overStartNotify
        try await context.setNotify(one, true, first)
        try await context.setNotify(two, true, second)
        return (first, second)
    }

    /// Asks the peer for `count` notifications and an echo as the fence (one link keeps their
    /// order): once each listener has the fence, each must have every packet exactly once, in
    /// order, and a silent characteristic nothing at all.
    @BleLoop
    static func burst(_ context: ScenarioContext, from peripheral: Peripheral, count: UInt8, hearing listeners: [(String, Characteristic)],
                      silent: [(String, Characteristic)] = [], label: String) async throws {
        let command = try context.characteristic(peripheral, PeerProtocol.command)
        let mark = context.probe.mark
        try context.expect(try await context.write(peripheral, Data([PeerProtocol.Opcode.burst.rawValue, count]), command,
                                                   label: "burst \(count) \(label)") == nil, "the burst write failed (\(label))")
        let fence = Data([PeerProtocol.Opcode.echo.rawValue, 0xf1])
        try context.expect(try await context.write(peripheral, fence, command, label: "fence \(label)") == nil, "the fence write failed (\(label))")
        let answer = Data([0x81, 0xf1])
        for (name, characteristic) in listeners {
            try await context.probe.wait(since: mark, timeout: context.eventDeadline, "the fence on the \(name) central (\(label))") {
                if case .value(let other, let data, nil) = $0 { return other === characteristic && data == answer }
                return false
            }
        }
        let expected = (0..<count).map { PeerProtocol.burstPacket($0, of: count) } + [answer]
        var problems: [String] = []
        for (name, characteristic) in listeners {
            let got = values(context, of: characteristic, since: mark)
            let missing = expected.filter { !got.contains($0) }.count
            context.step("\(label): \(name) central \(got.count) received, \(missing) missing, \(got.count - Set(got).count) doubled")
            if got != expected { problems.append("the \(name) central received \(got.map(ProbeEvent.hex)), not each of \(expected.count) once in order") }
        }
        for (name, characteristic) in silent {
            let got = values(context, of: characteristic, since: mark)
            context.step("\(label): \(name) central (unsubscribed) \(got.count) received")
            if !got.isEmpty { problems.append("the unsubscribed \(name) central received \(got.count) notifications") }
        }
        try context.expect(problems.isEmpty, "notifications \(label): \(problems.joined(separator: "; "))")
    }

    /// Successful values of exactly this `Characteristic` object since `mark`.
    @BleLoop
    static func values(_ context: ScenarioContext, of characteristic: Characteristic, since mark: Int) -> [Data] {
        context.probe.events.dropFirst(mark).compactMap { event -> Data? in
            if case .value(let other, let data, nil) = event, other === characteristic { return data }
            return nil
        }
    }
}
