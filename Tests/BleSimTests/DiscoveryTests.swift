import BleDBus
import BleSim
import BleTestSupport
import Foundation
import Testing
import BlueZVocabulary

/// bluez-observed.md § b. discovery: sessions per client, filters, the device objects and
/// their updates, TemporaryTimeout.
struct DiscoveryTests {
    static let device = SimulatorFixture.devicePath(Golden.address)

    @BleLoop
    @Test func startDiscoveryRepliesThenDiscoveringThenDevices() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Golden.spec()])
        defer { fixture.tearDown() }
        let (result, mark) = await fixture.callMarked(SimulatorFixture.hci0, Interface.adapter, "StartDiscovery")
        _ = try result.get()
        try await fixture.waitForSignal { $0.addedObject == DiscoveryTests.device }
        let discovering = try #require(fixture.index { $0.changes(SimulatorFixture.hci0, "Discovering", to: .boolean(true)) })
        let added = try #require(fixture.index { $0.addedObject == DiscoveryTests.device })
        #expect(mark <= discovering, "the reply comes first")
        #expect(discovering < added, "Discovering=true comes before the devices")
    }

    @BleLoop
    @Test func aFoundDeviceIsAnnouncedWithDevice1PropertiesInBluetoothdOrder() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Golden.spec()])
        defer { fixture.tearDown() }
        try await fixture.call(SimulatorFixture.hci0, Interface.adapter, "StartDiscovery")
        let added = try await fixture.waitForSignal { $0.addedObject == DiscoveryTests.device }
        #expect(added.interfaceNames == [Interface.introspectable, Interface.device, Interface.properties])
        let properties = added.addedProperties(Interface.device)
        #expect(properties.map(\.0) == ["Address", "AddressType", "Name", "Alias", "Paired", "Bonded", "Trusted", "Blocked",
                                        "LegacyPairing", "RSSI", "Connected", "UUIDs", "Adapter", "ManufacturerData",
                                        "ServiceData", "ServicesResolved"])
        let map = Dictionary(uniqueKeysWithValues: properties)
        #expect(map["Address"] == .string(Golden.address))
        #expect(map["AddressType"] == .string("public"))
        // The name from the scan response is there from the start.
        #expect(map["Name"] == .string(Golden.name))
        #expect(map["Alias"] == .string(Golden.name))
        #expect(map["RSSI"] == .int16(-50))
        #expect(map["Connected"] == .boolean(false))
        #expect(map["UUIDs"] == .array(element: .string, [.string(Golden.service)]))
        #expect(map["Adapter"] == .objectPath(SimulatorFixture.hci0))
        #expect(map["ManufacturerData"] == BlueZShapes.manufacturerDataValue([0xFFFF: Data([0x01, 0x02])]))
        // The 16-bit service-data UUID is exported in its 128-bit form.
        #expect(map["ServiceData"] == BlueZShapes.serviceDataValue([uuid128("1234"): Data([0x05])]))
        #expect(map["ServicesResolved"] == .boolean(false))
    }

    @BleLoop
    @Test func aSecondStartDiscoveryFromTheSameClientIsInProgress() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        try await fixture.call(SimulatorFixture.hci0, Interface.adapter, "StartDiscovery")
        await expectDBusError("org.bluez.Error.InProgress", "Operation already in progress") {
            try await fixture.call(SimulatorFixture.hci0, Interface.adapter, "StartDiscovery")
        }
    }

    @BleLoop
    @Test func stopDiscoveryWhenIdleFailsWithNoDiscoveryStarted() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        await expectDBusError("org.bluez.Error.Failed", "No discovery started") {
            try await fixture.call(SimulatorFixture.hci0, Interface.adapter, "StopDiscovery")
        }
    }

    @BleLoop
    @Test func stopDiscoveryRepliesThenInvalidatesRSSIThenDiscoveringFalse() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Golden.spec()])
        defer { fixture.tearDown() }
        try await fixture.discover(Golden.address, stop: false)
        let since = fixture.mark
        let (result, mark) = await fixture.callMarked(SimulatorFixture.hci0, Interface.adapter, "StopDiscovery")
        _ = try result.get()
        try await fixture.waitForProperty(SimulatorFixture.hci0, "Discovering", .boolean(false), since: since)
        let invalidated = try #require(fixture.index(since: since) { $0.path == DiscoveryTests.device && $0.isPropertiesChanged })
        let stopped = try #require(fixture.index(since: since) { $0.changes(SimulatorFixture.hci0, "Discovering") })
        let rssiSignal = fixture.signals[invalidated]
        #expect(rssiSignal.changedInterface == Interface.device)
        #expect(rssiSignal.changedNames.isEmpty)
        #expect(rssiSignal.invalidatedNames == ["RSSI"])
        #expect(mark <= invalidated && invalidated < stopped)
        // RSSI is gone from the object too.
        await expectDBusError("org.freedesktop.DBus.Error.InvalidArgs", "No such property 'RSSI'") {
            _ = try await fixture.property(DiscoveryTests.device, Interface.device, "RSSI")
        }
    }

    static let invalidFilters: [(String, DBusValue)] = [
        ("Transport foo", options([("Transport", .string("foo"))])),
        ("bad UUID", options([("UUIDs", .array(element: .string, [.string("not-a-uuid")]))])),
        ("RSSI and Pathloss", options([("RSSI", .int16(-60)), ("Pathloss", .uint16(20))])),
        ("unknown key", options([("Colour", .string("blue"))])),
        ("int32 Transport", options([("Transport", .int32(1))])),
        ("int32 RSSI", options([("RSSI", .int32(-60))])),
    ]

    @BleLoop
    @Test(arguments: DiscoveryTests.invalidFilters)
    func anInvalidDiscoveryFilterIsInvalidArguments(_ label: String, _ filter: DBusValue) async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        await expectDBusError("org.bluez.Error.InvalidArguments", "Invalid arguments in method call") {
            try await fixture.call(SimulatorFixture.hci0, Interface.adapter, "SetDiscoveryFilter", [filter])
        }
    }

    @BleLoop
    @Test func setDiscoveryFilterWhileDiscoveringSucceeds() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        try await fixture.call(SimulatorFixture.hci0, Interface.adapter, "StartDiscovery")
        try await fixture.call(SimulatorFixture.hci0, Interface.adapter, "SetDiscoveryFilter",
                               [options([("Transport", .string("le")), ("DuplicateData", .boolean(false))])])
        #expect(try await fixture.property(SimulatorFixture.hci0, Interface.adapter, "Discovering") == .boolean(true))
    }

    @BleLoop
    @Test func newAdvertisingDataWhileDiscoveringIsOneSignalWithRSSIAndTheData() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Golden.spec()])
        defer { fixture.tearDown() }
        // With a filter set, bluetoothd reports every RSSI (no 8 dBm threshold).
        try await fixture.call(SimulatorFixture.hci0, Interface.adapter, "SetDiscoveryFilter", [options([("Transport", .string("le"))])])
        try await fixture.discover(Golden.address, stop: false)
        let since = fixture.mark
        fixture.simulator.peripheral(Golden.address)?.updateAdvertisement {
            $0.manufacturerData = [0xFFFF: Data([0x09])]
            $0.serviceData = ["1234": Data([0x0a])]
        }
        let signal = try await fixture.waitForSignal(since: since) { $0.changes(DiscoveryTests.device, "ManufacturerData") }
        #expect(signal.changedNames == ["RSSI", "ManufacturerData", "ServiceData"])
        #expect(signal.changed("ManufacturerData") == BlueZShapes.manufacturerDataValue([0xFFFF: Data([0x09])]))
        #expect(signal.changed("ServiceData") == BlueZShapes.serviceDataValue([uuid128("1234"): Data([0x0a])]))
    }

    @BleLoop
    @Test func aReportWithUnchangedDataStillEmitsRSSIOnly() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Golden.spec()])
        defer { fixture.tearDown() }
        try await fixture.call(SimulatorFixture.hci0, Interface.adapter, "SetDiscoveryFilter", [options([("Transport", .string("le"))])])
        try await fixture.discover(Golden.address, stop: false)
        let signal = try await fixture.waitForSignal { $0.path == DiscoveryTests.device && $0.isPropertiesChanged }
        #expect(signal.changedNames == ["RSSI"])
        #expect(signal.changed("RSSI") == .int16(-50))
    }

    @BleLoop
    @Test func duplicateDataReannouncesUnchangedManufacturerAndServiceData() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Golden.spec()])
        defer { fixture.tearDown() }
        try await fixture.call(SimulatorFixture.hci0, Interface.adapter, "SetDiscoveryFilter", [options([("DuplicateData", .boolean(true))])])
        try await fixture.discover(Golden.address, stop: false)
        let signal = try await fixture.waitForSignal { $0.changes(DiscoveryTests.device, "ManufacturerData") }
        #expect(signal.changedNames == ["RSSI", "ManufacturerData", "ServiceData"])
    }

    @BleLoop
    @Test func withoutAFilterAReportWithinTheRSSIThresholdEmitsNothing() async throws {
        // A jittery advertiser on the same schedule paces the test: each of its RSSI changes
        // means another round of reports, the steady golden one's included.
        let pacer = PeripheralSpec(address: "C0:FF:EE:00:00:09", name: "pacer", rssi: -60, rssiJitter: 30)
        let fixture = try await SimulatorFixture.start(peripherals: [Golden.spec(), pacer])
        defer { fixture.tearDown() }
        try await fixture.discover(Golden.address, stop: false)
        let pacerPath = SimulatorFixture.devicePath(pacer.address)
        for _ in 0..<3 {
            try await fixture.waitForSignal(since: fixture.mark, "an RSSI change of the pacer") { $0.changes(pacerPath, "RSSI") }
        }
        #expect(fixture.signals(since: 0) { $0.path == DiscoveryTests.device && $0.isPropertiesChanged }.isEmpty)
    }

    @BleLoop
    @Test func discoveryFiltersOfTwoClientsAreORMerged() async throws {
        let byUUID = PeripheralSpec(address: "C0:FF:EE:00:00:01", name: "heart", serviceUUIDs: ["180d"])
        let byName = PeripheralSpec(address: "C0:FF:EE:00:00:02", name: "LED-kitchen")
        let neither = PeripheralSpec(address: "C0:FF:EE:00:00:03", name: "other")
        let fixture = try await SimulatorFixture.start(peripherals: [byUUID, byName, neither])
        defer { fixture.tearDown() }
        let second = try await fixture.secondClient()
        defer { second.close() }
        try await fixture.call(SimulatorFixture.hci0, Interface.adapter, "SetDiscoveryFilter",
                               [options([("UUIDs", .array(element: .string, [.string("180d")]))])])
        try await second.bluez(SimulatorFixture.hci0, Interface.adapter, "SetDiscoveryFilter", [options([("Pattern", .string("LED"))])])
        try await fixture.call(SimulatorFixture.hci0, Interface.adapter, "StartDiscovery")
        try await second.bluez(SimulatorFixture.hci0, Interface.adapter, "StartDiscovery")
        for spec in [byUUID, byName] {
            try await fixture.waitForSignal { $0.addedObject == SimulatorFixture.devicePath(spec.address) }
        }
        let objects = try await fixture.managedObjects()
        #expect(objects[SimulatorFixture.devicePath(neither.address)] == nil)
    }

    @BleLoop
    @Test func anUnfilteredSessionAdmitsEveryAdvertiserDespiteAnotherClientsFilter() async throws {
        let filtered = PeripheralSpec(address: "C0:FF:EE:00:00:01", name: "heart", serviceUUIDs: ["180d"])
        let plain = PeripheralSpec(address: "C0:FF:EE:00:00:02", name: "plain")
        let fixture = try await SimulatorFixture.start(peripherals: [filtered, plain])
        defer { fixture.tearDown() }
        let second = try await fixture.secondClient()
        defer { second.close() }
        try await second.bluez(SimulatorFixture.hci0, Interface.adapter, "SetDiscoveryFilter",
                               [options([("UUIDs", .array(element: .string, [.string("180d")]))])])
        try await second.bluez(SimulatorFixture.hci0, Interface.adapter, "StartDiscovery")
        try await fixture.call(SimulatorFixture.hci0, Interface.adapter, "StartDiscovery")
        try await fixture.waitForSignal { $0.addedObject == SimulatorFixture.devicePath(plain.address) }
    }

    @BleLoop
    @Test(arguments: [
        ("RSSI", options([("RSSI", .int16(-60))])),
        ("UUIDs", options([("UUIDs", .array(element: .string, [.string("0000180d-0000-1000-8000-00805f9b34fb")]))])),
        ("address Pattern", options([("Pattern", .string("C0:FF:EE:00:00:01"))])),
        ("name Pattern", options([("Pattern", .string("near"))])),
    ])
    func aFilterAdmitsOnlyMatchingAdvertisers(_ label: String, _ filter: DBusValue) async throws {
        let near = PeripheralSpec(address: "C0:FF:EE:00:00:01", name: "near-heart", rssi: -40, serviceUUIDs: ["180d"])
        let far = PeripheralSpec(address: "C0:FF:EE:00:00:02", name: "far-plain", rssi: -90)
        let fixture = try await SimulatorFixture.start(peripherals: [near, far])
        defer { fixture.tearDown() }
        try await fixture.call(SimulatorFixture.hci0, Interface.adapter, "SetDiscoveryFilter", [filter])
        try await fixture.discover(near.address, stop: false)
        #expect(try await fixture.managedObjects()[SimulatorFixture.devicePath(far.address)] == nil)
    }

    @BleLoop
    @Test func aBREDRTransportFilterHidesLEAdvertisers() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Golden.spec()])
        defer { fixture.tearDown() }
        try await fixture.call(SimulatorFixture.hci0, Interface.adapter, "SetDiscoveryFilter", [options([("Transport", .string("bredr"))])])
        try await fixture.call(SimulatorFixture.hci0, Interface.adapter, "StartDiscovery")
        try await fixture.waitForProperty(SimulatorFixture.hci0, "Discovering", .boolean(true))
        try await fixture.barrier()
        #expect(try await fixture.managedObjects()[DiscoveryTests.device] == nil)
    }

    @BleLoop
    @Test func anotherClientsStopLeavesTheFirstSessionRunningAndItsSecondStopFails() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        let second = try await fixture.secondClient()
        defer { second.close() }
        try await fixture.call(SimulatorFixture.hci0, Interface.adapter, "StartDiscovery")
        try await second.bluez(SimulatorFixture.hci0, Interface.adapter, "StartDiscovery")
        try await second.bluez(SimulatorFixture.hci0, Interface.adapter, "StopDiscovery")
        do {
            try await second.bluez(SimulatorFixture.hci0, Interface.adapter, "StopDiscovery")
            Issue.record("a second StopDiscovery succeeded")
        } catch {
            #expect(error == .remote(name: "org.bluez.Error.Failed", message: "No discovery started"))
        }
        try await fixture.barrier()
        #expect(try await fixture.property(SimulatorFixture.hci0, Interface.adapter, "Discovering") == .boolean(true))
        #expect(fixture.signals(since: 0) { $0.changes(SimulatorFixture.hci0, "Discovering", to: .boolean(false)) }.isEmpty)
    }

    @BleLoop
    @Test func aClientLeavingTheBusEndsItsDiscoverySession() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Golden.spec()])
        defer { fixture.tearDown() }
        let second = try await fixture.secondClient()
        try await second.bluez(SimulatorFixture.hci0, Interface.adapter, "StartDiscovery")
        try await fixture.waitForSignal { $0.addedObject == DiscoveryTests.device }
        let since = fixture.mark
        second.close()
        try await fixture.waitForProperty(SimulatorFixture.hci0, "Discovering", .boolean(false), since: since)
        let invalidated = try #require(fixture.index(since: since) { $0.path == DiscoveryTests.device && $0.invalidatedNames == ["RSSI"] })
        let stopped = try #require(fixture.index(since: since) { $0.changes(SimulatorFixture.hci0, "Discovering") })
        #expect(invalidated < stopped)
    }

    @BleLoop
    @Test func aTemporaryDeviceVanishesTemporaryTimeoutAfterItsLastReportEvenWhileDiscovering() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Golden.spec()],
                                                       configuration: .init(temporaryTimeoutSeconds: 0.3))
        defer { fixture.tearDown() }
        try await fixture.discover(Golden.address, stop: false)
        let stoppedAt = ContinuousClock.now
        fixture.simulator.peripheral(Golden.address)?.stopAdvertising()
        let removed = try await fixture.waitForSignal { $0.removedObject == DiscoveryTests.device }
        // The last report came at most one advertising interval (100 ms) before the stop.
        #expect(ContinuousClock.now - stoppedAt >= .milliseconds(195), "not before TemporaryTimeout after the last report")
        #expect(removed.interfaceNames == [Interface.properties, Interface.introspectable, Interface.device])
        #expect(try await fixture.property(SimulatorFixture.hci0, Interface.adapter, "Discovering") == .boolean(true))
    }

    @BleLoop
    @Test func aTemporaryDeviceVanishesAfterStopDiscovery() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Golden.spec()],
                                                       configuration: .init(temporaryTimeoutSeconds: 0.3))
        defer { fixture.tearDown() }
        try await fixture.discover(Golden.address, stop: true)
        try await fixture.waitForSignal { $0.removedObject == DiscoveryTests.device }
    }

    @BleLoop
    @Test func aRemovedDeviceAnswersUnknownObjectWithTrailingNewline() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Golden.spec()],
                                                       configuration: .init(temporaryTimeoutSeconds: 0.3))
        defer { fixture.tearDown() }
        try await fixture.discover(Golden.address)
        fixture.simulator.peripheral(Golden.address)?.stopAdvertising()
        try await fixture.waitForSignal { $0.removedObject == DiscoveryTests.device }
        await expectDBusError("org.freedesktop.DBus.Error.UnknownObject",
                              "Method \"Connect\" with signature \"\" on interface \"org.bluez.Device1\" doesn't exist\n") {
            try await fixture.call(DiscoveryTests.device, Interface.device, "Connect")
        }
        await expectDBusError("org.freedesktop.DBus.Error.UnknownObject",
                              "Method \"GetAll\" with signature \"s\" on interface \"org.freedesktop.DBus.Properties\" doesn't exist\n") {
            try await fixture.call(DiscoveryTests.device, Interface.properties, "GetAll", [.string(Interface.device)])
        }
    }

    @BleLoop
    @Test func removeDeviceWhileDiscoveringRemovesTheObjectBeforeTheReply() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Golden.spec()])
        defer { fixture.tearDown() }
        try await fixture.discover(Golden.address, stop: false)
        let (result, mark) = await fixture.callMarked(SimulatorFixture.hci0, Interface.adapter, "RemoveDevice",
                                                      [.objectPath(DiscoveryTests.device)])
        _ = try result.get()
        let removed = try #require(fixture.index { $0.removedObject == DiscoveryTests.device })
        #expect(removed < mark)
    }

    @BleLoop
    @Test func eachAdapterHasItsOwnDeviceObjectForTheSamePeripheral() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Golden.spec()])
        defer { fixture.tearDown() }
        try await fixture.discover(Golden.address, adapter: SimulatorFixture.hci0, stop: false)
        try await fixture.discover(Golden.address, adapter: SimulatorFixture.hci1, stop: false)
        let objects = try await fixture.managedObjects()
        #expect(objects[SimulatorFixture.devicePath(Golden.address, adapter: "hci1")]?[Interface.device]?["Adapter"]
            == .objectPath(SimulatorFixture.hci1))
    }
}
