@testable import BleCore
import BleSim
import BlueZVocabulary
import BleTestSupport
import Foundation
import Testing

/// A service added from `peripheralManagerDidUpdateState` — where iOS apps add theirs — is
/// registered with bluetoothd once: the power-on's own "register what is due" found the
/// application's registration on its way and asked for it again (an Unregister and a second
/// Register for nothing, seen by a user trying the API from outside).
@Suite @BleLoop
struct RegisterOnceTests {
    @BleLoop final class AddsAtPowerOn: @preconcurrency PeripheralManagerDelegate {
        let events = EventRecorder<String>()
        func peripheralManagerDidUpdateState(_ peripheral: PeripheralManager) {
            guard peripheral.state == .poweredOn else { return }
            let (service, _, _) = PeripheralHarness.chatService()
            peripheral.add(service)
        }
        func peripheralManager(_ peripheral: PeripheralManager, didAdd service: Service, error: Error?) {
            events.append("added \(error.map { "\($0)" } ?? "ok")")
        }
    }

    @Test func aServiceAddedAtPowerOnIsRegisteredOnce() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        let calls = EventRecorder<String>()
        fixture.simulator.traceObserver = { calls.append($0.member) }
        let delegate = AddsAtPowerOn()
        let manager = PeripheralManager(delegate: delegate, queue: nil, options: PeripheralManagerOptions(bus: .address(fixture.bus.address)))
        defer { manager.close() }
        // A central of the process shares the manager's connection: its scan, started once the
        // service is added, reaches BleSim after anything the registration sent (one connection
        // keeps its order), so a second registration would be in the trace by then.
        let central = CentralManager(delegate: nil, queue: nil, options: CentralManagerOptions(bus: .address(fixture.bus.address)))
        defer { central.close() }
        try await delegate.events.wait("the service added", timeout: TestTime.scaled(.seconds(10))) { !$0.isEmpty }
        #expect(delegate.events.events == ["added ok"])
        central.scanForPeripherals(withServices: nil)
        try await calls.wait("the central's StartDiscovery", timeout: TestTime.scaled(.seconds(10))) {
            $0.contains(BlueZ.Adapter1.Method.startDiscovery)
        }
        let members = calls.events
        #expect(members.filter { $0 == BlueZ.GattManager1.Method.registerApplication }.count == 1, "\(members)")
        #expect(!members.contains(BlueZ.GattManager1.Method.unregisterApplication), "\(members)")
    }
}
