import BleDBus
import BleDSL
import BleSim
import BleTestSupport
import Foundation
import Testing

/// Records what a `PeripheralHandler` saw, and when.
final class RecordingHandler: PeripheralHandler, @unchecked Sendable {
    var peripheral: Peripheral?
    var disconnects = 0
    func peripheralDidDisconnect(error: Error?) { disconnects += 1 }
}

struct DropAllBut: PeripheralFilter {
    let name: String
    func filter(peripheralInfo: PeripheralInfo) -> PeripheralInfo? {
        peripheralInfo.peripheral.name == name || peripheralInfo.advertisement.localName == name ? peripheralInfo : nil
    }
}

final class DiscoveryLog: DiscoverPeripheral, @unchecked Sendable {
    let recorder: EventRecorder<[PeripheralInfo]>
    init(_ recorder: EventRecorder<[PeripheralInfo]>) { self.recorder = recorder }
    func discover(peripheralGroup: [PeripheralInfo]) { recorder.appendFromAnyThread(peripheralGroup) }
}

final class DisconnectLog: PeripheralDidDisConnect, @unchecked Sendable {
    let recorder: EventRecorder<String>
    init(_ recorder: EventRecorder<String>) { self.recorder = recorder }
    func centralManager(_ central: CentralManager, didDisconnectPeripheral peripheral: Peripheral, error: Error?) {
        recorder.appendFromAnyThread(peripheral.address)
    }
}

@BleLoop
@Suite struct BleManagerTests {
    func manager(_ fixture: SimulatorFixture) -> BleManager {
        BleManager(centralOptions: CentralManagerOptions(bus: .address(fixture.bus.address), connectTimeout: .seconds(5)))
    }

    @Test func executeRightAfterInitWaitsForPoweredOnInsteadOfFailing() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Logger.spec()])
        defer { fixture.tearDown() }
        let manager = manager(fixture)
        defer { manager.centralManager.centralManager.close() }
        let events = EventRecorder<String>()
        // No wait for the state: FXBlueTooth failed here with `.unknown` and lost the handler.
        manager.execute(commandItems: [.connect(.uuid(Logger.address))]) { result in
            events.appendFromAnyThread(result.value.map { "\($0)" }.map { _ in "connected" } ?? "failed")
        }
        try await events.wait(count: 1)
        #expect(events.events == ["connected"])
    }

    @Test func filterReturningNilDropsTheDeviceAndRSSIIsKnownAtFirstSighting() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Logger.spec(), Logger.spec(address: "C0:FF:EE:00:00:09", name: "Other")])
        defer { fixture.tearDown() }
        let manager = manager(fixture)
        defer { manager.centralManager.centralManager.close() }
        let lists = EventRecorder<[PeripheralInfo]>()
        manager.execute(commandItems: [.filter(DropAllBut(name: "Other")), .discover(DiscoveryLog(lists)), .scanTimeout(TestTime.scaled(3))])
        try await lists.wait(count: 1)
        let first = try #require(lists.events.first)
        #expect(first.count == 1)
        #expect(first.first?.peripheral.address == "C0:FF:EE:00:00:09")
        #expect(first.first?.rssi != nil)
        try await fixture.waitForSignal { $0.member == "PropertiesChanged" && SimulatorFixture.changedValue($0, "Discovering") == .boolean(false) }
        #expect(lists.events.allSatisfy { list in list.allSatisfy { $0.peripheral.address != Logger.address } })
    }

    @Test func connectByAddressIsCaseInsensitiveAndHandleIsAttachedBeforeTheHandler() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Logger.spec()])
        defer { fixture.tearDown() }
        let manager = manager(fixture)
        defer { manager.centralManager.centralManager.close() }
        let handler = RecordingHandler()
        let events = EventRecorder<Bool>()
        manager.execute(commandItems: [.connect(.uuid(Logger.address.lowercased())), .handle(handler)]) { result in
            if case .success(.connected(let peripheral)) = result { events.appendFromAnyThread(handler.peripheral === peripheral) }
        }
        try await events.wait(count: 1)
        #expect(events.events == [true])
    }

    @Test func peripheralDeviceDiscoversByItselfOnceAttached() async throws {
        let stack = try await DSLStack.start()
        defer { stack.tearDown() }
        try await stack.connect()
        #expect(stack.characteristic.writeCharacteristic != nil)
        #expect(stack.characteristic.readCharacteristic != nil)
        #expect(stack.adapter.isReady)
    }

    @Test func sameUUIDMayServeAsReadAndWriteCharacteristic() async throws {
        let spec = PeripheralSpec(address: "C0:FF:EE:00:00:05", name: "Serial", services: [
            ServiceSpec(uuid: Logger.service, characteristics: [
                CharacteristicSpec(uuid: Logger.write, flags: ["write", "notify"]),
            ]),
        ], rules: [BehaviourRule(.write(characteristic: Logger.write, prefix: nil), [.echo(characteristic: Logger.write)])])
        let fixture = try await SimulatorFixture.start(peripherals: [spec])
        let stack = DSLStack(fixture: fixture, readUUID: Logger.write)
        defer { stack.tearDown() }
        try await stack.connect(address: "C0:FF:EE:00:00:05")
        let result = try await stack.run(EchoCommand(cmdData: Data([0x33])))
        #expect(result.value == [Data([0x33])])
    }

    @Test func disconnectReachesTheListenerOfTheCommandThatConnectedEvenAfterLaterExecutes() async throws {
        let stack = try await DSLStack.start(peripherals: [Logger.spec()])
        defer { stack.tearDown() }
        let disconnects = EventRecorder<String>()
        try await stack.connect(extra: [.didDisConnect(DisconnectLog(disconnects))])
        // A later, unrelated command (a plain scan) must not steal the listener.
        stack.manager.execute(commandItems: [.scanTimeout(0.2)])
        stack.fixture.simulator.peripheral(Logger.address)?.dropLinks()
        try await disconnects.wait(count: 1)
        #expect(disconnects.events == [Logger.address])
        try await stack.events.wait("disconnected event") { $0.contains("disconnected") }
    }

    @Test func scanTimeoutEndsACommandWhoseTargetNeverAppears() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Logger.spec()])
        defer { fixture.tearDown() }
        let manager = manager(fixture)
        defer { manager.centralManager.centralManager.close() }
        let events = EventRecorder<String>()
        manager.execute(commandItems: [.connect(.uuid("AA:AA:AA:AA:AA:AA")), .scanTimeout(0.3)]) { result in
            if case .failure(.scanTimeout) = result { events.appendFromAnyThread("scan timeout") } else { events.appendFromAnyThread("other") }
        }
        try await events.wait(count: 1)
        #expect(events.events == ["scan timeout"])
    }

    @Test func connectTimeoutCancelsTheAttempt() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Logger.spec()])
        defer { fixture.tearDown() }
        fixture.simulator.faults.failConnect(Logger.address, with: .neverAnswer, times: nil)
        let manager = manager(fixture)
        defer { manager.centralManager.centralManager.close() }
        let calls = EventRecorder<String>()
        fixture.simulator.traceObserver = { calls.append($0.member) }
        let events = EventRecorder<String>()
        manager.execute(commandItems: [.connect(.uuid(Logger.address)), .connectTimeout(0.3)]) { result in
            if case .failure(.centralConnectError(.timeout)) = result { events.appendFromAnyThread("timeout") } else {
                events.appendFromAnyThread("other: \(result)")
            }
        }
        try await events.wait(count: 1)
        #expect(events.events == ["timeout"])
        // Cancelling goes through Disconnect, which cancels BlueZ's pending Connect.
        try await calls.wait("Disconnect") { $0.contains("Disconnect") }
    }

    @Test func reconnectPolicyReconnectsAfterLinkLossAndRearmsTheEngine() async throws {
        let stack = try await DSLStack.start(peripherals: [Logger.spec()])
        defer { stack.tearDown() }
        try await stack.connect(extra: [.reconnect(.exponentialBackoff(initialDelay: 0.05, maximumAttempts: 3))])
        stack.fixture.simulator.peripheral(Logger.address)?.dropLinks()
        try await stack.events.wait("reconnected") { $0.filter { $0 == "connected" }.count == 2 }
        #expect(stack.events.events == ["connected", "disconnected", "connected"])
        let ready = EventRecorder<Bool>()
        stack.adapter.readyForCommand { _ in ready.appendFromAnyThread(true) }
        try await ready.wait(count: 1)
        let result = try await stack.run(EchoCommand(cmdData: Data([0x02, 0x0D])))
        #expect(result.value == [Data([0x02, 0x0D])])
    }

    @Test func twoPeripheralsAreConnectedAndHandledAtOnce() async throws {
        let second = "C0:FF:EE:00:00:04"
        let fixture = try await SimulatorFixture.start(peripherals: [Logger.spec(), Logger.spec(address: second, name: "Logger2")])
        defer { fixture.tearDown() }
        let manager = manager(fixture)
        defer { manager.centralManager.centralManager.close() }
        let events = EventRecorder<String>()
        let first = RecordingHandler()
        let other = RecordingHandler()
        manager.execute(commandItems: [.connect(.uuid(Logger.address)), .handle(first)]) { result in
            if case .success(.connected(let peripheral)) = result { events.appendFromAnyThread(peripheral.address) }
        }
        try await events.wait(count: 1)
        manager.execute(commandItems: [.connect(.uuid(second)), .handle(other)]) { result in
            if case .success(.connected(let peripheral)) = result { events.appendFromAnyThread(peripheral.address) }
        }
        try await events.wait(count: 2)
        #expect(events.events == [Logger.address, second])
        #expect(first.peripheral?.state == .connected)
        #expect(other.peripheral?.state == .connected)
    }

    @Test func predicateTargetConnectsToTheFirstMatchingPeripheral() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Logger.spec(), Logger.spec(address: "C0:FF:EE:00:00:07", name: "Wanted")])
        defer { fixture.tearDown() }
        let manager = manager(fixture)
        defer { manager.centralManager.centralManager.close() }
        let events = EventRecorder<String>()
        manager.execute(commandItems: [.connect(.predicate { $0.advertisement.localName == "Wanted" })]) { result in
            if case .success(.connected(let peripheral)) = result { events.appendFromAnyThread(peripheral.address) }
        }
        try await events.wait(count: 1)
        #expect(events.events == ["C0:FF:EE:00:00:07"])
    }

    @Test func commandFoldingKeepsTheLastOfEachKind() {
        let command = BleManagerCommand([.scanTimeout(1), .scanTimeout(2), .connect(.uuid("a")), .connect(.uuid("b"))])
        #expect(command.scanTimeout == 2)
        if case .uuid(let text, _)? = command.connect { #expect(text == "b") } else { Issue.record("no connect target") }
        #expect(BleManagerCommand(nil).connect == nil)
    }
}

/// Seen against the real bluetoothd in the VM (`dsl.commands`): a BleManager created just
/// before `execute` has not loaded BlueZ's devices yet, so a target named by identifier was
/// looked up too early and then searched by scanning — which misses a device that advertises
/// rarely (btvirt: once per scan start).
@BleLoop
@Suite struct ConnectByIdentifierTests {
    @Test func aKnownDeviceIsConnectedByIdentifierWithoutScanningEvenRightAfterInit() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Logger.spec()])
        defer { fixture.tearDown() }
        let options = CentralManagerOptions(bus: .address(fixture.bus.address), connectTimeout: .seconds(5))
        // A first manager makes BlueZ know the device.
        let scout = BleManager(centralOptions: options)
        defer { scout.centralManager.centralManager.close() }
        let found = EventRecorder<Peripheral>()
        scout.execute(commandItems: [.connect(.uuid(Logger.address)), .scanTimeout(TestTime.scaled(10))]) { result in
            if case .success(.connected(let peripheral)) = result { found.appendFromAnyThread(peripheral) }
        }
        try await found.wait(count: 1)
        let identifier = found.events[0].identifier.uuidString
        let gone = EventRecorder<String>()
        scout.execute(commandItems: [.cancelConnect(found.events[0])]) { _ in gone.appendFromAnyThread("done") }
        try await gone.wait(count: 1)

        fixture.simulator.clearTrace()
        let manager = BleManager(centralOptions: options)
        defer { manager.centralManager.centralManager.close() }
        let events = EventRecorder<String>()
        manager.execute(commandItems: [.connect(.uuid(identifier)), .scanTimeout(TestTime.scaled(10))]) { result in
            switch result {
            case .success(.connected(let peripheral)): events.appendFromAnyThread("connected \(peripheral.address)")
            case .success(.disconnected): break
            case .failure(let error): events.appendFromAnyThread("failed \(error)")
            }
        }
        try await events.wait(count: 1)
        #expect(events.events == ["connected \(Logger.address)"])
        #expect(!fixture.simulator.trace.contains { $0.member == "StartDiscovery" }, "it scanned for a device BlueZ already knew")
    }
}
