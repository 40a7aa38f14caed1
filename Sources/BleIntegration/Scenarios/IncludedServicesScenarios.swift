import BleCore
import BleDBus
import BleTestSupport
import Foundation

/// Included services end to end: a `PeripheralManager` on the peripheral adapter serves a
/// service that includes two others (one primary, one secondary), and BleKit's central on the
/// other adapter finds them with `discoverIncludedServices`.
///
/// Its bluetoothd transcript was recorded in the VM (scenario run alone, under software
/// emulation: 3.2 s, 16.3 s with the boot).
public enum IncludedServicesScenarios {
    static let all: [IntegrationScenario] = [includedServices]
    static let outer = BluetoothUUID(string: "b1e40020-0000-4000-8000-00805f9b34fb")
    static let primaryIncluded = BluetoothUUID(string: "b1e40021-0000-4000-8000-00805f9b34fb")
    static let secondaryIncluded = BluetoothUUID(string: "b1e40022-0000-4000-8000-00805f9b34fb")
    static let outerValue = BluetoothUUID(string: "b1e40030-0000-4000-8000-00805f9b34fb")
    static let primaryValue = BluetoothUUID(string: "b1e40031-0000-4000-8000-00805f9b34fb")
    static let secondaryValue = BluetoothUUID(string: "b1e40032-0000-4000-8000-00805f9b34fb")
    static let name = "blekit-incl"

    /// Records the manager's events.
    final class Server: PeripheralManagerDelegate, Sendable {
        let events: EventRecorder<String>
        @BleLoop init() { events = EventRecorder<String>() }
        private func record(_ text: String) { BleLoop.assumeIsolated { events.append(text) } }
        func peripheralManagerDidUpdateState(_ peripheral: PeripheralManager) { record("state \(peripheral.state)") }
        func peripheralManager(_ peripheral: PeripheralManager, didAdd service: Service, error: Error?) {
            record("added \(service.uuid.uuidString) \(Self.describe(error))")
        }
        /// The case a caller would switch on, with its detail.
        static func describe(_ error: Error?) -> String {
            guard let error else { return "ok" }
            if case .invalidLocalAttribute(let detail)? = error as? BleError { return "invalidLocalAttribute: \(detail)" }
            return "\(error)"
        }
        func peripheralManager(_ peripheral: PeripheralManager, advertisementDidUpdate registration: AdvertisementRegistration) { record("advertisement \(registration.state)") }
    }

    static func readable(_ uuid: BluetoothUUID, _ value: UInt8) -> MutableCharacteristic {
        MutableCharacteristic(type: uuid, properties: [.read], value: Data([value]), permissions: [.readable])
    }

    /// The outer service includes the secondary one first, then the primary one (not handle
    /// order), so the transcript shows whose order `Includes` keeps. A service including one
    /// never added is refused by `add(_:)` before anything reaches the daemon.
    public static let includedServices = IntegrationScenario(
        "gatt.includedServices", "PeripheralManager serves a service including a primary and a secondary service; BleKit's central discovers the included services (all, by UUID, after the disconnect)."
    ) { context in
        let primary = MutableService(type: primaryIncluded, primary: true)
        primary.characteristics = [readable(primaryValue, 0x21)]
        let secondary = MutableService(type: secondaryIncluded, primary: false)
        secondary.characteristics = [readable(secondaryValue, 0x22)]
        let service = MutableService(type: outer, primary: true)
        service.characteristics = [readable(outerValue, 0x20)]
        service.includedServices = [secondary, primary]
        let server = Server()
        let manager = PeripheralManager(delegate: server, queue: nil,
                                        options: PeripheralManagerOptions(bus: context.backend.bleBus, adapter: context.backend.peripheralAdapter))
        context.onCleanup { manager.close() }
        @BleLoop func wait(_ what: String) async throws {
            try await server.events.wait(what, timeout: context.eventDeadline) { $0.contains(what) }
            context.step("peripheral: \(what)")
        }
        try await wait("state poweredOn")
        let stray = MutableService(type: outer, primary: true)
        stray.includedServices = [MutableService(type: primaryIncluded, primary: true)]
        manager.add(stray)
        try await wait("added \(outer.uuidString) invalidLocalAttribute: includedServices[0] (\(primaryIncluded.uuidString)) was not added to this peripheral manager before the service that includes it")
        manager.add(primary)
        manager.add(secondary)
        manager.add(service)
        try await wait("added \(primaryIncluded.uuidString) ok")
        try await wait("added \(secondaryIncluded.uuidString) ok")
        try await wait("added \(outer.uuidString) ok")
        let registration = manager.startAdvertising(Advertisement(localName: name, serviceUUIDs: [outer]))
        try await wait("advertisement active")
        context.refreshOnDiscovery(manager, registration)

        let central = try await context.central()
        let peripheral = try await context.discoverPeer(central, services: [outer], name: name)
        try context.expect(try await context.connect(central, peripheral) == nil, "connect failed")
        try await context.resolve(peripheral, recording: [outer, primaryIncluded, secondaryIncluded], requiring: [outer])
        for found in peripheral.services ?? [] {
            let uuids = try await context.includedServices(peripheral, nil, of: found)
            guard found.uuid == outer else { continue }
            try context.expect(uuids == [secondaryIncluded, primaryIncluded], "included services of the outer service: \(uuids)")
        }
        guard let outerService = peripheral.services?.first(where: { $0.uuid == outer }) else {
            throw ScenarioFailure("the outer service is gone")
        }
        // The included Service objects are those of `peripheral.services`: discovered, readable.
        for included in outerService.includedServices ?? [] {
            for characteristic in included.characteristics ?? [] { try await context.read(peripheral, characteristic) }
        }
        let filtered = try await context.includedServices(peripheral, [primaryIncluded], of: outerService)
        try context.expect(filtered == [primaryIncluded], "included services by UUID: \(filtered)")
        try await context.disconnect(central, peripheral)
        _ = try await context.includedServices(peripheral, nil, of: outerService, label: "included after disconnect")
        registration.cancel()
    }
}

extension ScenarioContext {
    /// Asks for `service`'s included services, records the answer and returns their UUIDs.
    @discardableResult
    func includedServices(_ peripheral: Peripheral, _ uuids: [BluetoothUUID]?, of service: Service,
                          label: String = "included") async throws -> [BluetoothUUID] {
        let mark = probe.mark
        peripheral.discoverIncludedServices(uuids, for: service)
        let event = try await probe.wait(since: mark, timeout: eventDeadline, "\(label) of \(service.uuid.uuidString)") {
            if case .includedServices(let other, _) = $0 { return other === service }
            return false
        }
        guard case .includedServices(_, let error) = event else { throw ScenarioFailure("unexpected \(event)") }
        let found = (service.includedServices ?? []).map(\.uuid)
        let filter = uuids.map { " for \($0.map(\.uuidString))" } ?? ""
        step("\(label) of \(service.uuid.uuidString)\(filter): \(ProbeEvent.describe(error)) \(found.map(\.uuidString))")
        return found
    }
}
