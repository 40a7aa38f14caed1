import BleCore
import BleDBus
import BleTestSupport
import Foundation

/// BleKit on both sides: a `PeripheralManager` serves and advertises from the peripheral
/// adapter, BleKit's central uses it from the other one.
///
/// Its bluetoothd transcript was recorded in the VM (scenario run alone, under software
/// emulation: 18.8 s).
public enum PeripheralManagerScenarios {
    static let all: [IntegrationScenario] = [serve]
    static let service = BluetoothUUID(string: "b1e40001-0000-4000-8000-00805f9b34fb")
    static let command = BluetoothUUID(string: "b1e40002-0000-4000-8000-00805f9b34fb")
    static let response = BluetoothUUID(string: "b1e40003-0000-4000-8000-00805f9b34fb")
    static let name = "blekit-pm"

    /// Records the manager's events; answers command 01 with two notifications.
    final class Server: PeripheralManagerDelegate, Sendable {
        let events: EventRecorder<String>
        let response: MutableCharacteristic
        @BleLoop init(response: MutableCharacteristic) {
            events = EventRecorder<String>()
            self.response = response
        }
        private func record(_ text: String) { BleLoop.assumeIsolated { events.append(text) } }
        func peripheralManagerDidUpdateState(_ peripheral: PeripheralManager) { record("state \(peripheral.state)") }
        func peripheralManager(_ peripheral: PeripheralManager, didAdd service: Service, error: Error?) { record("added \(error.map { "\($0)" } ?? "ok")") }
        func peripheralManager(_ peripheral: PeripheralManager, advertisementDidUpdate registration: AdvertisementRegistration) { record("advertisement \(registration.state)") }
        func peripheralManager(_ peripheral: PeripheralManager, centralDidConnect central: Central) { record("central connected") }
        func peripheralManager(_ peripheral: PeripheralManager, centralDidDisconnect central: Central) { record("central disconnected") }
        func peripheralManager(_ peripheral: PeripheralManager, central: Central, didSubscribeTo characteristic: Characteristic) { record("subscribed") }
        func peripheralManager(_ peripheral: PeripheralManager, didReceiveWrite requests: [ATTRequest]) {
            guard let first = requests.first else { return }
            peripheral.respond(to: first, withResult: .success)
            record("write \(ProbeEvent.hex(first.value ?? Data())) mtu=\(first.mtu)")
            guard first.value?.first == 0x01 else { return }
            for packet in [Data([0x01, 0xA0, 0xA1]), Data([0x01, 0xA2, 0xA3])] {
                if !peripheral.updateValue(packet, for: response, onSubscribedCentrals: nil) { record("queue full") }
            }
        }
    }

    /// The whole path: serve, advertise, discovered and connected by BleKit's central,
    /// subscribe, a command written, its two-packet answer notified, the central's connection
    /// events on the serving side.
    public static let serve = IntegrationScenario(
        "peripheralManager.serve", "PeripheralManager serves and advertises; BleKit's central connects, subscribes, writes a command and gets two notifications."
    ) { context in
        let gatt = MutableService(type: service, primary: true)
        let responseCharacteristic = MutableCharacteristic(type: response, properties: [.notify], value: nil, permissions: [.readable])
        gatt.characteristics = [
            MutableCharacteristic(type: command, properties: [.write, .writeWithoutResponse], value: nil, permissions: [.writeable]),
            responseCharacteristic,
        ]
        let server = Server(response: responseCharacteristic)
        let manager = PeripheralManager(delegate: server, queue: nil,
                                        options: PeripheralManagerOptions(bus: context.backend.bleBus, adapter: context.backend.peripheralAdapter))
        context.onCleanup { manager.close() }
        @BleLoop func wait(_ what: String) async throws {
            try await server.events.wait(what, timeout: context.eventDeadline) { $0.contains(what) }
            context.step("peripheral: \(what)")
        }
        try await wait("state poweredOn")
        manager.add(gatt)
        try await wait("added ok")
        let registration = manager.startAdvertising(Advertisement(localName: name, serviceUUIDs: [service]))
        try await wait("advertisement active")
        context.refreshOnDiscovery(manager, registration)
        let central = try await context.central()
        let peripheral = try await context.discoverPeer(central, services: [service], name: name)
        try context.expect(try await context.connect(central, peripheral) == nil, "connect failed")
        try await context.resolve(peripheral, recording: [service], requiring: [service])
        try await wait("central connected")
        let responseOnCentral = try context.characteristic(peripheral, response, in: service)
        let commandOnCentral = try context.characteristic(peripheral, command, in: service)
        try await context.setNotify(peripheral, true, responseOnCentral)
        try await wait("subscribed")
        let mark = context.probe.mark
        try context.expect(try await context.write(peripheral, Data([0x01]), commandOnCentral) == nil, "write failed")
        let values = try await context.notifications(of: responseOnCentral, since: mark, count: 2)
        context.step("notifications \(values.map(ProbeEvent.hex))")
        try context.expect(values == [Data([0x01, 0xA0, 0xA1]), Data([0x01, 0xA2, 0xA3])], "wrong notifications \(values)")
        try await context.disconnect(central, peripheral)
        try await wait("central disconnected")
        registration.cancel()
    }
}
