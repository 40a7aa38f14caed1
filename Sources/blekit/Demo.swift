import BleDBus
import BleSim
import BleTestSupport
import Foundation

/// The demo: for now, BleSim on a private bus with a scenario, and a raw BlueZ client over
/// BleDBus that scans, connects, reads and subscribes — the path every BleKit layer takes.
@MainActor
func runDemo(arguments: [String]) async -> Int32 {
    do {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let simulator = await Scenario(peripherals: [DemoScenario.thermometer]).makeSimulator()
        try await simulator.start(on: bus.busAddress)
        print("BleSim: virtual BlueZ on a private bus (\(bus.address))")
        try await DemoClient.run(address: bus.address)
        await simulator.stop(.clean)
        return 0
    } catch {
        FileHandle.standardError.write(Data("blekit demo: \(error)\n".utf8))
        return 1
    }
}

enum DemoScenario {
    static let thermometer = PeripheralSpec(
        address: "C0:FF:EE:00:00:01", name: "Thermometer", rssi: -52, rssiJitter: 3,
        manufacturerData: [0x004C: Data([0x02, 0x15])], serviceUUIDs: ["181a"],
        services: [ServiceSpec(uuid: "181a", characteristics: [
            CharacteristicSpec(uuid: "2a6e", flags: ["read", "notify"], value: Data([0x34, 0x08])),
            CharacteristicSpec(uuid: "2a6f", flags: ["read", "write"], value: Data([0x32])),
        ])],
        rules: [BehaviourRule(.write(characteristic: "00002a6f-0000-1000-8000-00805f9b34fb", prefix: nil),
                              [.notify(characteristic: "00002a6e-0000-1000-8000-00805f9b34fb", value: Data([0x35, 0x08]), packets: nil)])])
}

@BleLoop
enum DemoClient {
    static func run(address: String) async throws {
        let connection = try await Connection.open(.address(address))
        defer { connection.close() }
        let adapter: ObjectPath = "/org/bluez/hci0"
        let devicePath: ObjectPath = "/org/bluez/hci0/dev_C0_FF_EE_00_00_01"
        let found = AsyncStream<Void>.makeStream()
        let added = try connection.signals.subscribe(SignalMatch(sender: "org.bluez", interface: "org.freedesktop.DBus.ObjectManager",
                                                                  member: "InterfacesAdded")) { message in
            if message.body.first == .objectPath(devicePath) { found.continuation.yield() }
        }
        defer { added.cancel() }
        _ = try await connection.call(destination: "org.bluez", path: adapter, interface: "org.bluez.Adapter1", member: "StartDiscovery")
        for await _ in found.stream { break }
        print("found Thermometer at C0:FF:EE:00:00:01")
        _ = try await connection.call(destination: "org.bluez", path: adapter, interface: "org.bluez.Adapter1", member: "StopDiscovery")
        _ = try await connection.call(destination: "org.bluez", path: devicePath, interface: "org.bluez.Device1", member: "Connect")
        print("connected")
        let characteristic = try ObjectPath(devicePath.rawValue + "/service000c/char000d")
        let value = try await connection.call(destination: "org.bluez", path: characteristic, interface: "org.bluez.GattCharacteristic1",
                                              member: "ReadValue", arguments: [BlueZShapes.propertyDictionary([])])
        if case .bytes(let data)? = value.first, data.count == 2 {
            print(String(format: "temperature: %.2f °C", Double(UInt16(data[0]) | UInt16(data[1]) << 8) / 100))
        }
        _ = try await connection.call(destination: "org.bluez", path: devicePath, interface: "org.bluez.Device1", member: "Disconnect")
        print("disconnected")
    }
}
