@testable import BleCore
import BleDBus
import BleSim
import BleTestSupport
import BlueZVocabulary
import Foundation
import Testing

/// Issue 27, item 1: every manager and agent of a process shares one session per bus — one
/// connection, one cache — and what bluetoothd keeps once per D-Bus sender (a discovery
/// session, a StartNotify session) is shared between them, so one client's stop does not end
/// another's scan or notifications.
@Suite(.serialized) @BleLoop
struct SharedBusSessionTests {
    /// The unique names this process holds on the fixture's bus, asked of the bus daemon.
    private static func ourConnections(_ fixture: SimulatorFixture) async throws -> Set<String> {
        let names = try await fixture.client.call(destination: FreedesktopDBus.busName, path: FreedesktopDBus.path,
                                                  interface: FreedesktopDBus.interface, member: FreedesktopDBus.Method.listNames)
        guard case .array(_, let values)? = names.first else { throw WaitTimeout(what: "ListNames' array", seen: ["\(names)"]) }
        var ours: Set<String> = []
        for case .string(let name) in values where name.hasPrefix(":") {
            // A name may leave between the two calls: it is not ours any more then.
            guard let reply = try? await fixture.client.call(destination: FreedesktopDBus.busName, path: FreedesktopDBus.path,
                                                             interface: FreedesktopDBus.interface,
                                                             member: FreedesktopDBus.Method.getConnectionUnixProcessID,
                                                             arguments: [.string(name)]),
                  case .uint32(let pid)? = reply.first else { continue }
            if pid == UInt32(getpid()) { ours.insert(name) }
        }
        return ours
    }

    /// Asks the bus daemon until this process holds `count` more connections than `baseline`,
    /// or the deadline passes; returns the last answer.
    private static func waitForConnections(_ fixture: SimulatorFixture, baseline: Set<String>, count: Int) async throws -> Set<String> {
        let deadline = ContinuousClock.now + TestTime.scaled(.seconds(10))
        var added: Set<String> = []
        repeat {
            added = try await ourConnections(fixture).subtracting(baseline)
            if added.count == count { return added }
            // Each question is a round trip through the bus daemon: the names a closed
            // connection held are gone once the daemon processed its disconnect.
            await Task.yield()
        } while ContinuousClock.now < deadline
        return added
    }

    /// The three roles' delegates (callbacks come on the loop: no queue was given).
    @BleLoop final class Roles: @preconcurrency CentralManagerDelegate, @preconcurrency PeripheralManagerDelegate, @preconcurrency PairingAgentDelegate {
        let central = EventRecorder<ManagerState>()
        let peripheral = EventRecorder<ManagerState>()
        let agent = EventRecorder<String>()
        func centralManagerDidUpdateState(_ central: CentralManager) { self.central.append(central.state) }
        func peripheralManagerDidUpdateState(_ peripheral: PeripheralManager) { self.peripheral.append(peripheral.state) }
        func pairingAgent(_ agent: PairingAgent, didReceive request: PairingRequest) { request.reject() }
        func pairingAgent(_ agent: PairingAgent, didRegister error: Error?) {
            self.agent.append(error.map { "failed: \($0)" } ?? "registered")
        }
    }

    @Test func aCentralAPeripheralManagerAndAnAgentHoldOneConnection() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Sample.spec()])
        defer { fixture.tearDown() }
        guard case .address(let bus) = fixture.bus.busAddress else { preconditionFailure("a private bus has an address") }
        // The simulator's connection and the test's client.
        let baseline = try await Self.ourConnections(fixture)
        let roles = Roles()
        let central = CentralManager(delegate: roles, queue: nil, options: CentralManagerOptions(bus: .address(bus), adapter: "hci0"))
        let manager = PeripheralManager(delegate: roles, queue: nil, options: PeripheralManagerOptions(bus: .address(bus), adapter: "hci0"))
        let agent = PairingAgent(central: central, capability: .displayYesNo, delegate: roles)
        agent.start()
        try await roles.central.first(timeout: TestTime.scaled(.seconds(10)), "the central powered on") { $0 == .poweredOn }
        try await roles.peripheral.first(timeout: TestTime.scaled(.seconds(10)), "the peripheral manager powered on") { $0 == .poweredOn }
        let registered = try await roles.agent.first(timeout: TestTime.scaled(.seconds(10)), "the agent registered") { _ in true }
        #expect(registered == "registered")

        let held = try await Self.waitForConnections(fixture, baseline: baseline, count: 1)
        #expect(held.count == 1, "a central, a peripheral manager and an agent hold \(held.count) connections: \(held.sorted())")
        // Each asked bluetoothd for something on that one connection.
        let senders = Set(fixture.simulator.trace.filter {
            [BlueZ.AgentManager1.Method.registerAgent, FreedesktopDBus.ObjectManager.getManagedObjects].contains($0.member)
        }.map(\.sender))
        #expect(senders == held, "bluetoothd heard the managers and the agent from \(senders.sorted()), not \(held.sorted())")

        agent.stop()
        central.close()
        manager.close()
        let left = try await Self.waitForConnections(fixture, baseline: baseline, count: 0)
        #expect(left.isEmpty, "closing every manager left \(left.sorted()) open")
    }

    @Test func aSecondCentralsStopScanDoesNotEndTheFirstsDiscovery() async throws {
        let bench = try await Bench.start()
        defer { bench.tearDown() }
        let second = try await Self.secondCentral(on: bench)
        defer { second.central.close() }

        bench.central.scanForPeripherals(withServices: nil)
        try await bench.recorder.wait("the first central's discovery") { if case .discovered = $0 { return true }; return false }
        second.central.scanForPeripherals(withServices: nil)
        let found = try await second.recorder.wait("the second central's discovery") { if case .discovered = $0 { return true }; return false }
        guard case .discovered(let peripheral, _, _) = found else { throw WaitTimeout(what: "a discovery", seen: ["\(found)"]) }
        peripheral.delegate = second.recorder
        #expect(bench.trace(BlueZ.Adapter1.Method.startDiscovery) == 1, "each scan started a discovery session of its own")

        bench.central.stopScan()
        // A call on the shared connection after the stop: had the stop sent StopDiscovery, the
        // simulator would have received it first.
        try await second.connect(peripheral)
        #expect(bench.trace(BlueZ.Adapter1.Method.stopDiscovery) == 0, "the first central's stopScan ended the second's scan")
        #expect(bench.simulator.adapter("hci0")?.discovering == true, "the adapter stopped discovering")

        second.central.stopScan()
        try await bench.waitForCall(BlueZ.Adapter1.Method.stopDiscovery)
        #expect(bench.trace(BlueZ.Adapter1.Method.stopDiscovery) == 1)
    }

    /// Two centrals of one process subscribed to one characteristic over StartNotify (one
    /// session per D-Bus sender in bluetoothd): each gets every value once, one's unsubscribe
    /// leaves the other's notifications on, and both go on after the link drops.
    @Test func twoCentralsSubscribedToOneCharacteristicEachGetEveryValueOnce() async throws {
        try await twoCentralsEachGetEveryValueOnce(overStartNotify: true)
    }

    /// The same over AcquireNotify: bluetoothd hands out one socket per characteristic (a
    /// second AcquireNotify or StartNotify is refused "Notify acquired"), so the second central
    /// rides the first's socket, and inherits it, open, when the first unsubscribes.
    @Test func twoCentralsShareOneAcquiredSocketAndEachGetEveryValueOnce() async throws {
        try await twoCentralsEachGetEveryValueOnce(overStartNotify: false)
    }

    private func twoCentralsEachGetEveryValueOnce(overStartNotify: Bool) async throws {
        let prefixes: [UInt8] = [0xA0, 0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6]
        let rules = prefixes.map { prefix in
            BehaviourRule(.write(characteristic: Sample.full("ff01"), prefix: Data([prefix])),
                          [.notify(characteristic: Sample.full("ff02"), value: Data([prefix]), packets: 1)])
        }
        let bench = try await Bench.start([Sample.spec(rules: rules)])
        defer { bench.tearDown() }
        let second = try await Self.secondCentral(on: bench)
        defer { second.central.close() }
        let one = try await bench.connected()
        let two = try await second.connected()
        let first = bench.characteristic(one, Sample.notify)
        let other = second.characteristic(two, Sample.notify)
        try await Self.subscribe(bench, one, first, overStartNotify: overStartNotify)
        try await Self.subscribe(second, two, other, overStartNotify: overStartNotify)
        let enable = overStartNotify ? BlueZ.GattCharacteristic1.Method.startNotify : BlueZ.GattCharacteristic1.Method.acquireNotify
        #expect(bench.trace(enable) == 1, "bluetoothd keeps one notify session per sender, and one socket per characteristic")
        #expect(bench.trace(overStartNotify ? BlueZ.GattCharacteristic1.Method.acquireNotify : BlueZ.GattCharacteristic1.Method.startNotify) == 0)

        var sent: [UInt8] = []
        func send(_ prefix: UInt8, expecting receivers: [(Bench, Characteristic)]) async throws {
            let marks = receivers.map { $0.0.recorder.mark }
            one.writeValue(Data([prefix]), for: bench.characteristic(one, Sample.readWrite), type: .withResponse)
            sent.append(prefix)
            for ((receiver, characteristic), mark) in zip(receivers, marks) {
                try await receiver.await("0x\(String(prefix, radix: 16)) on \(receiver === bench ? "the first" : "the second") central", since: mark) { _ in
                    Self.values(of: characteristic, in: receiver.recorder.events[mark...]).contains(prefix)
                }
            }
        }
        let start = (bench.recorder.mark, second.recorder.mark)
        try await send(0xA0, expecting: [(bench, first), (second, other)])
        try await send(0xA1, expecting: [(bench, first), (second, other)])
        #expect(Self.values(of: first, in: bench.recorder.events[start.0...]) == [0xA0, 0xA1])
        #expect(Self.values(of: other, in: second.recorder.events[start.1...]) == [0xA0, 0xA1])

        // The first unsubscribes: the second still hears, bluetoothd's session stays.
        var mark = bench.recorder.mark
        one.setNotifyValue(false, for: first)
        try await bench.await("the first central's unsubscribe", since: mark) {
            if case .notifyState(let target, false, nil) = $0 { return target === first }
            return false
        }
        #expect(bench.trace(BlueZ.GattCharacteristic1.Method.stopNotify) == 0, "one central's unsubscribe ended the other's notify session")
        #expect(bench.trace(enable) == 1, "the socket or session was not handed over: it was asked for again")
        let afterUnsubscribe = (bench.recorder.mark, second.recorder.mark)
        try await send(0xA2, expecting: [(second, other)])
        // A value after it, so a stray 0xA2 to the first would have arrived by now.
        try await send(0xA3, expecting: [(second, other)])
        #expect(Self.values(of: first, in: bench.recorder.events[afterUnsubscribe.0...]).isEmpty)
        #expect(Self.values(of: other, in: second.recorder.events[afterUnsubscribe.1...]) == [0xA2, 0xA3])
        try await Self.subscribe(bench, one, first, overStartNotify: overStartNotify)

        // The link drops under both; each reconnects and subscribes again (a subscription ends
        // with its link, as on iOS), and bluetoothd's own re-enabling must not double a value.
        mark = bench.recorder.mark
        let secondMark = second.recorder.mark
        guard let virtual = bench.simulator.peripheral(Sample.address) else { throw WaitTimeout(what: "the virtual peripheral", seen: []) }
        virtual.dropLinks()
        try await bench.await("the first central's disconnect", since: mark) { if case .disconnected = $0 { return true }; return false }
        try await second.await("the second central's disconnect", since: secondMark) { if case .disconnected = $0 { return true }; return false }
        try await bench.connect(one)
        try await second.connect(two)
        try await bench.resolve(one)
        try await second.resolve(two)
        let firstAgain = bench.characteristic(one, Sample.notify)
        let otherAgain = second.characteristic(two, Sample.notify)
        try await Self.subscribe(bench, one, firstAgain, overStartNotify: overStartNotify)
        try await Self.subscribe(second, two, otherAgain, overStartNotify: overStartNotify)
        let afterReconnect = (bench.recorder.mark, second.recorder.mark)
        try await send(0xA4, expecting: [(bench, firstAgain), (second, otherAgain)])
        try await send(0xA5, expecting: [(bench, firstAgain), (second, otherAgain)])
        try await send(0xA6, expecting: [(bench, firstAgain), (second, otherAgain)])
        #expect(Self.values(of: firstAgain, in: bench.recorder.events[afterReconnect.0...]) == [0xA4, 0xA5, 0xA6])
        #expect(Self.values(of: otherAgain, in: second.recorder.events[afterReconnect.1...]) == [0xA4, 0xA5, 0xA6])
        #expect(sent == prefixes)
    }

    /// A second central of the process on the bench's bus, powered on.
    private static func secondCentral(on bench: Bench) async throws -> Bench {
        let second = Bench(fixture: bench.fixture)
        second.central = second.makeCentral()
        try await second.recorder.wait("the second central's poweredOn") { if case .state(.poweredOn) = $0 { return true }; return false }
        return second
    }

    private static func subscribe(_ bench: Bench, _ peripheral: Peripheral, _ characteristic: Characteristic,
                                  overStartNotify: Bool) async throws {
        characteristic.prefersStartNotify = overStartNotify
        let mark = bench.recorder.mark
        peripheral.setNotifyValue(true, for: characteristic)
        try await bench.await("notifications on \(characteristic.uuid)", since: mark) {
            if case .notifyState(let target, true, nil) = $0 { return target === characteristic }
            return false
        }
    }

    private static func values(of characteristic: Characteristic, in events: ArraySlice<Event>) -> [UInt8] {
        events.compactMap { event -> UInt8? in
            guard case .value(let target, let data?, nil) = event, target === characteristic else { return nil }
            return data.first
        }
    }
}
