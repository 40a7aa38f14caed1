import BleCore
import BleDBus
import BleSim
import BlueZVocabulary
import BleTestSupport
import Foundation
import Testing

/// A served `MutableService` that includes others, read by BleKit's central on the other
/// adapter through BleSim's bridge (bluetoothd's server and client in one).
@Suite(.timeLimit(.minutes(TestTime.minutes(1))))
@BleLoop
struct IncludedServicesTests {
    static let outer = BluetoothUUID(string: "b1e40020-0000-4000-8000-00805f9b34fb")
    static let primary = BluetoothUUID(string: "b1e40021-0000-4000-8000-00805f9b34fb")
    static let secondary = BluetoothUUID(string: "b1e40022-0000-4000-8000-00805f9b34fb")

    /// BleCore's central delegate, as text.
    @BleLoop
    final class Central: @preconcurrency CentralManagerDelegate, @preconcurrency PeripheralDelegate {
        let events: EventRecorder<String>
        var found: Peripheral?
        init() { events = EventRecorder<String>() }
        private func record(_ text: String) { events.append(text) }
        func centralManagerDidUpdateState(_ central: CentralManager) { record("state \(central.state)") }
        func centralManager(_ central: CentralManager, didDiscover peripheral: Peripheral, advertisementData: AdvertisementData, rssi RSSI: Int) {
            guard advertisementData.localName == "incl-periph", found == nil else { return }
            found = peripheral
            record("discovered")
        }
        func centralManager(_ central: CentralManager, didConnect peripheral: Peripheral) { record("connected") }
        func peripheral(_ peripheral: Peripheral, didDiscoverServices error: Error?) { record("services \(error.map { "\($0)" } ?? "ok")") }
        func peripheral(_ peripheral: Peripheral, didDiscoverCharacteristicsFor service: Service, error: Error?) {
            record("characteristics \(service.uuid) \(error.map { "\($0)" } ?? "ok")")
        }
        func peripheral(_ peripheral: Peripheral, didDiscoverIncludedServicesFor service: Service, error: Error?) {
            record("included \(service.uuid) \(error.map { "\($0)" } ?? "ok") \((service.includedServices ?? []).map(\.uuid))")
        }
    }

    static func service(_ uuid: BluetoothUUID, primary: Bool = true, value: UInt8) -> MutableService {
        let service = MutableService(type: uuid, primary: primary)
        service.characteristics = [MutableCharacteristic(type: BluetoothUUID(string: "2a19"), properties: [.read], value: Data([value]), permissions: [.readable])]
        return service
    }

    /// Advertises the served services as `incl-periph`, and connects BleKit's central on hci1
    /// to them with their services discovered.
    static func advertiseAndConnect(_ harness: PeripheralHarness, advertising uuid: BluetoothUUID) async throws
        -> (AdvertisementRegistration, Central, CentralManager, Peripheral) {
        let registration = harness.manager.startAdvertising(Advertisement(localName: "incl-periph", serviceUUIDs: [uuid]))
        try await harness.recorder.events.wait("advertising", timeout: .seconds(10)) { $0.contains { $0.hasPrefix("advertising") } }
        let delegate = Central()
        let central = CentralManager(delegate: delegate, queue: nil, options: CentralManagerOptions(bus: .address(harness.fixture.bus.address), adapter: "hci1"))
        try await delegate.events.wait("poweredOn", timeout: .seconds(10)) { $0.contains("state poweredOn") }
        central.scanForPeripherals(withServices: nil)
        try await delegate.events.wait("discovered", timeout: .seconds(10)) { $0.contains("discovered") }
        central.stopScan()
        let peripheral = try #require(delegate.found)
        peripheral.delegate = delegate
        central.connect(peripheral)
        try await delegate.events.wait("connected", timeout: .seconds(10)) { $0.contains("connected") }
        peripheral.discoverServices(nil)
        try await delegate.events.wait("services", timeout: .seconds(10)) { $0.contains("services ok") }
        return (registration, delegate, central, peripheral)
    }

    @Test func aServedServicesIncludesReachTheCentralInTheirOrder() async throws {
        let harness = try await PeripheralHarness.start()
        defer { harness.tearDown() }
        let primary = Self.service(Self.primary, value: 1)
        let secondary = Self.service(Self.secondary, primary: false, value: 2)
        let outer = Self.service(Self.outer, value: 3)
        outer.includedServices = [secondary, primary]
        try await harness.add(primary)
        try await harness.add(secondary)
        try await harness.add(outer)
        let (registration, delegate, central, peripheral) = try await Self.advertiseAndConnect(harness, advertising: Self.outer)
        defer { registration.cancel(); central.close() }
        let services = peripheral.services ?? []
        let remoteOuter = try #require(services.first { $0.uuid == Self.outer })
        peripheral.discoverIncludedServices(nil, for: remoteOuter)
        try await delegate.events.wait("included", timeout: .seconds(10)) { $0.contains { $0.hasPrefix("included \(Self.outer)") } }
        let included = try #require(remoteOuter.includedServices)
        #expect(included.map(\.uuid) == [Self.secondary, Self.primary])
        #expect(included.map(\.isPrimary) == [false, true])
        #expect(included.allSatisfy { found in services.contains { $0 === found } }, "the services' own objects")

        // BlueZ's objects underneath: Includes holds the remote service paths of the two.
        let reply = try await harness.fixture.call("/", FreedesktopDBus.ObjectManager.interface, FreedesktopDBus.ObjectManager.getManagedObjects)
        let objects = try BlueZShapes.managedObjects(try #require(reply.first))
        let device: ObjectPath = "/org/bluez/hci1/dev_00_AA_01_00_00_00"
        func servicePath(_ uuid: BluetoothUUID) -> ObjectPath? {
            objects.first { path, interfaces in
                path.isDescendant(of: device) && interfaces[BlueZ.GattService1.interface]?[BlueZ.GattService1.uuid] == uuid.uuidString128
            }?.key
        }
        let outerPath = try #require(servicePath(Self.outer))
        let includes = objects[outerPath]?[BlueZ.GattService1.interface]?[BlueZ.GattService1.includes]
        #expect(includes == [try #require(servicePath(Self.secondary)), try #require(servicePath(Self.primary))])
    }

    @Test func aServiceIncludingOneNotAddedFirstIsRefused() async throws {
        let harness = try await PeripheralHarness.start()
        defer { harness.tearDown() }
        let primary = Self.service(Self.primary, value: 1)
        let outer = Self.service(Self.outer, value: 3)
        outer.includedServices = [primary]
        harness.manager.add(outer)
        try await harness.recorder.events.wait("refused", timeout: .seconds(10)) { $0.contains { $0.hasPrefix("added \(Self.outer)") } }
        let event = try #require(harness.recorder.events.events.first { $0.hasPrefix("added \(Self.outer)") })
        #expect(event.contains("includedServices[0] (\(Self.primary)) was not added to this peripheral manager before the service that includes it"))
        #expect(harness.manager.dbusConnection?.objects.registeredPaths.contains { $0.rawValue.hasSuffix("/service0000") } == false)
        // Added afterwards, in the right order, both are served.
        try await harness.add(primary)
        harness.manager.add(outer)
        try await harness.recorder.events.wait("accepted", timeout: .seconds(10)) { $0.contains("added \(Self.outer) ok") }
    }
}

extension IncludedServicesTests {
    /// bluetoothd builds its database in the order of the application's objects by path, so
    /// `service10` before `service2` would put an eleventh service (and an eleventh
    /// characteristic) out of place and drop an include of a later service (seen in the VM).
    @Test func elevenServicesAndTwelveCharacteristicsKeepTheirOrderAndIncludes() async throws {
        let harness = try await PeripheralHarness.start()
        defer { harness.tearDown() }
        let uuids = (0..<11).map { BluetoothUUID(string: String(format: "b1e400%02x-0000-4000-8000-00805f9b34fb", 0x40 + $0)) }
        var served: [MutableService] = []
        for (index, uuid) in uuids.enumerated() {
            let service = MutableService(type: uuid, primary: true)
            let count = index == 0 ? 12 : 1
            service.characteristics = (0..<count).map {
                MutableCharacteristic(type: BluetoothUUID(string: String(format: "b1e401%02x-0000-4000-8000-00805f9b34fb", $0)), properties: [.read],
                                      value: Data([UInt8($0)]), permissions: [.readable])
            }
            if index == 10 { service.includedServices = [served[2]] }
            served.append(service)
            try await harness.add(service)
        }
        let (registration, delegate, central, peripheral) = try await Self.advertiseAndConnect(harness, advertising: uuids[0])
        defer { registration.cancel(); central.close() }
        let remote = (peripheral.services ?? []).filter { uuids.contains($0.uuid) }
        #expect(remote.map(\.uuid) == uuids, "the services in the order they were added")
        let last = try #require(remote.last)
        peripheral.discoverIncludedServices(nil, for: last)
        try await delegate.events.wait("included", timeout: .seconds(10)) { $0.contains { $0.hasPrefix("included \(uuids[10])") } }
        #expect(last.includedServices?.map(\.uuid) == [uuids[2]])
        let first = try #require(remote.first)
        peripheral.discoverCharacteristics(nil, for: first)
        try await delegate.events.wait("characteristics", timeout: .seconds(10)) { $0.contains("characteristics \(uuids[0]) ok") }
        let characteristics = first.characteristics ?? []
        #expect(characteristics.map(\.uuid) == (0..<12).map { BluetoothUUID(string: String(format: "b1e401%02x-0000-4000-8000-00805f9b34fb", $0)) },
                "the characteristics in the order they were set")
    }
}
