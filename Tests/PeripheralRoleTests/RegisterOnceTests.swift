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
            peripheral.startAdvertising([CBAdvertisementDataLocalNameKey: "once"])
        }
        func peripheralManagerDidStartAdvertising(_ peripheral: PeripheralManager, error: Error?) {
            events.append("advertising \(error.map { "\($0)" } ?? "ok")")
        }
    }

    @Test func aServiceAddedAtPowerOnIsRegisteredOnce() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        let delegate = AddsAtPowerOn()
        let manager = PeripheralManager(delegate: delegate, queue: nil, options: PeripheralManagerOptions(bus: .address(fixture.bus.address)))
        defer { manager.close() }
        // A second registration would go out on the same connection as the service's answer
        // is handled, so BleSim has it before it answers the advertisement registered then.
        try await delegate.events.wait("advertising", timeout: TestTime.scaled(.seconds(10))) { $0.contains { $0.hasPrefix("advertising") } }
        #expect(delegate.events.events == ["added ok", "advertising ok"])
        let members = fixture.simulator.trace.map(\.member)
        #expect(members.filter { $0 == BlueZ.GattManager1.Method.registerApplication }.count == 1, "\(members)")
        #expect(!members.contains(BlueZ.GattManager1.Method.unregisterApplication), "\(members)")
    }
}
