import BleDBus
import BleSim
import BleTestSupport
import Foundation
import Testing

/// bluez-observed.md § c. connect, and the Connect/Disconnect/RemoveDevice rows of the
/// cross-cutting ordering table; the GATT client objects and their properties.
struct DeviceConnectionTests {
    static let device = SimulatorFixture.devicePath(Golden.address)

    @BleLoop
    @Test func connectSignalsConnectedThenRepliesThenExportsGattThenResolvesThenRenames() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Golden.spec()])
        defer { fixture.tearDown() }
        let device = try await fixture.discover(Golden.address)
        let since = fixture.mark
        let (result, mark) = await fixture.callMarked(device, Interface.device, "Connect")
        _ = try result.get()
        try await fixture.waitForProperty(device, "Name", .string(Golden.gapName), since: since)
        let connected = try #require(fixture.index(since: since) { $0.changes(device, "Connected", to: .boolean(true)) })
        let gatt = fixture.signals.indices.dropFirst(since).filter { fixture.signals[$0].addedObject?.isDescendant(of: device, orEqual: false) == true }
        let resolved = try #require(fixture.index(since: since) { $0.changes(device, "ServicesResolved", to: .boolean(true)) })
        let renamed = try #require(fixture.index(since: since) { $0.changes(device, "Name") })
        #expect(connected < mark, "Connected=true before the reply")
        #expect(try #require(gatt.first) >= mark, "the GATT objects after the reply")
        #expect(try #require(gatt.last) < resolved, "ServicesResolved after the objects")
        #expect(fixture.signals[resolved].changedNames == ["UUIDs", "ServicesResolved"])
        #expect(resolved < renamed)
        #expect(fixture.signals[renamed].changedNames == ["Name", "Alias"])
        #expect(fixture.signals[renamed].changed("Alias") == .string(Golden.gapName))
    }

    @BleLoop
    @Test func gattObjectsAreAnnouncedInHandleOrderWithBluetoothdPaths() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let added = fixture.signals.compactMap(\.addedObject).filter { $0.isDescendant(of: device, orEqual: false) }
        let relative = added.map { String($0.rawValue.dropFirst(device.rawValue.count)) }
        #expect(relative == [
            "/service0008", "/service0008/char0009", "/service0008/char0009/desc000b",
            "/service000c", "/service000c/char000d", "/service000c/char000f", "/service000c/char0011",
            "/service000c/char0013", "/service000c/char0013/desc0015", "/service000c/char0016", "/service000c/char0016/desc0018",
            "/service000c/char0019", "/service000c/char0019/desc001b", "/service000c/char001c", "/service000c/char001c/desc001e",
        ])
    }

    @BleLoop
    @Test func theGapServiceIsNotExportedButTheGattServiceIs() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let services = try await fixture.managedObjects().filter { $0.key.isDescendant(of: device, orEqual: false) }
            .compactMap { $0.value[Interface.service]?["UUID"] }
        #expect(!services.contains(.string(uuid128("1800"))))
        #expect(services.contains(.string(uuid128("1801"))))
        #expect(services.contains(.string(Golden.service)))
    }

    @BleLoop
    @Test func serviceObjectsCarryUUIDDevicePrimaryAndIncludes() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let signal = try #require(fixture.signals.first { $0.addedObject?.rawValue == device.rawValue + "/service000c" })
        #expect(signal.interfaceNames == [Interface.introspectable, Interface.service, Interface.properties])
        let properties = signal.addedProperties(Interface.service)
        #expect(properties.map(\.0) == ["UUID", "Device", "Primary", "Includes"])
        let map = Dictionary(uniqueKeysWithValues: properties)
        #expect(map["UUID"] == .string(Golden.service))
        #expect(map["Device"] == .objectPath(device))
        #expect(map["Primary"] == .boolean(true))
        #expect(map["Includes"] == .array(element: .objectPath, []))
    }

    static let characteristicShapes: [(String, [String])] = [
        (Golden.rw, ["UUID", "Service", "Value", "Flags", "MTU"]),
        (Golden.readOnly, ["UUID", "Service", "Value", "Flags", "MTU"]),
        (Golden.writeWithoutResponse, ["UUID", "Service", "Value", "Flags", "WriteAcquired", "MTU"]),
        (Golden.notify, ["UUID", "Service", "Value", "Notifying", "Flags", "NotifyAcquired", "MTU"]),
        // NotifyAcquired only with notify, not on an indicate-only characteristic.
        (Golden.indicate, ["UUID", "Service", "Value", "Notifying", "Flags", "MTU"]),
        (Golden.combo, ["UUID", "Service", "Value", "Notifying", "Flags", "WriteAcquired", "NotifyAcquired", "MTU"]),
    ]

    @BleLoop
    @Test(arguments: DeviceConnectionTests.characteristicShapes)
    func characteristicPropertiesDependOnTheFlags(uuid: String, expected: [String]) async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, uuid)
        let signal = try #require(fixture.signals.first { $0.addedObject == path })
        #expect(signal.interfaceNames == [Interface.introspectable, Interface.characteristic, Interface.properties])
        let properties = signal.addedProperties(Interface.characteristic)
        #expect(properties.map(\.0) == expected)
        let map = Dictionary(uniqueKeysWithValues: properties)
        #expect(map["Value"] == .bytes(Data()), "the cached value is empty until read")
        #expect(map["MTU"] == .uint16(517))
        #expect(map["UUID"] == .string(uuid))
        if map["Notifying"] != nil { #expect(map["Notifying"] == .boolean(false)) }
    }

    @BleLoop
    @Test func descriptorsCarryUUIDCharacteristicAndValueButNoFlags() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let characteristic = try await fixture.gattObject(device, Golden.described)
        let descriptor = try await fixture.gattObject(device, Golden.userDescription, interface: Interface.descriptor)
        let signal = try #require(fixture.signals.first { $0.addedObject == descriptor })
        #expect(signal.interfaceNames == [Interface.introspectable, Interface.descriptor, Interface.properties])
        let properties = signal.addedProperties(Interface.descriptor)
        #expect(properties.map(\.0) == ["UUID", "Characteristic", "Value"])
        #expect(Dictionary(uniqueKeysWithValues: properties)["Characteristic"] == .objectPath(characteristic))
    }

    @BleLoop
    @Test func noGattObjectHasAHandleProperty() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        for (path, interfaces) in try await fixture.managedObjects() where path.isDescendant(of: device, orEqual: false) {
            for (name, properties) in interfaces { #expect(properties["Handle"] == nil, "\(path) \(name)") }
        }
    }

    @BleLoop
    @Test func resolvedUUIDsListEveryPrimaryServiceIncludingGAP() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let uuids = try await fixture.property(device, Interface.device, "UUIDs")
        #expect(uuids == .array(element: .string, [uuid128("1800"), uuid128("1801"), Golden.service].sorted().map { .string($0) }))
    }

    @BleLoop
    @Test func connectWhileConnectedSucceedsAtOnceWithoutSignals() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        try await fixture.barrier()
        let since = fixture.mark
        try await fixture.call(device, Interface.device, "Connect")
        try await fixture.barrier()
        let later = fixture.signals(since: since) { $0.path?.isDescendant(of: device) == true }
        #expect(later.isEmpty)
    }

    @BleLoop
    @Test func connectProfileOnLEFailsWithTheBREDRReason() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        await expectDBusError("org.bluez.Error.Failed", "br-connection-sdp-search") {
            try await fixture.call(device, Interface.device, "ConnectProfile", [.string(uuid128("1801"))])
        }
    }

    @BleLoop
    @Test func disconnectUnresolvesThenRepliesThenDisconnectsAndKeepsTheGattObjects() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let objectsBefore = try await fixture.managedObjects().keys.filter { $0.isDescendant(of: device, orEqual: false) }
        let since = fixture.mark
        let (result, mark) = await fixture.callMarked(device, Interface.device, "Disconnect")
        _ = try result.get()
        try await fixture.waitForProperty(device, "Connected", .boolean(false), since: since)
        let unresolved = try #require(fixture.index(since: since) { $0.changes(device, "ServicesResolved", to: .boolean(false)) })
        let disconnected = try #require(fixture.index(since: since) { $0.changes(device, "Connected", to: .boolean(false)) })
        #expect(unresolved < mark && mark <= disconnected)
        #expect(fixture.signals(since: since) { $0.removedObject != nil }.isEmpty)
        let objectsAfter = try await fixture.managedObjects().keys.filter { $0.isDescendant(of: device, orEqual: false) }
        #expect(Set(objectsAfter) == Set(objectsBefore))
        #expect(!objectsAfter.isEmpty)
    }

    @BleLoop
    @Test func disconnectTakesAboutTwoSecondsScaledBeforeItReplies() async throws {
        let (fixture, device) = try await SimulatorFixture.connected(configuration: .init(timing: TimingModel(scale: 0.05)))
        defer { fixture.tearDown() }
        let started = ContinuousClock.now
        try await fixture.call(device, Interface.device, "Disconnect")
        // 2000 ms × 0.05.
        #expect(ContinuousClock.now - started >= .milliseconds(95))
    }

    @BleLoop
    @Test func disconnectWhenDisconnectedSucceedsAtOnce() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Golden.spec()])
        defer { fixture.tearDown() }
        let device = try await fixture.discover(Golden.address)
        let since = fixture.mark
        try await fixture.call(device, Interface.device, "Disconnect")
        try await fixture.barrier()
        #expect(fixture.signals(since: since) { $0.path == device }.isEmpty)
    }

    @BleLoop
    @Test func reconnectingWithCachedGattEmitsOnlyConnectedReplyAndServicesResolved() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        try await fixture.disconnect(device)
        let since = fixture.mark
        let (result, mark) = await fixture.callMarked(device, Interface.device, "Connect")
        _ = try result.get()
        try await fixture.waitForProperty(device, "ServicesResolved", .boolean(true), since: since)
        try await fixture.barrier()
        let connected = try #require(fixture.index(since: since) { $0.changes(device, "Connected", to: .boolean(true)) })
        let resolved = try #require(fixture.index(since: since) { $0.changes(device, "ServicesResolved", to: .boolean(true)) })
        #expect(connected < mark && mark <= resolved)
        #expect(fixture.signals(since: since) { $0.addedObject != nil }.isEmpty, "no InterfacesAdded: the objects stayed")
        #expect(fixture.signals[resolved].changedNames == ["ServicesResolved"])
    }

    @BleLoop
    @Test func removeDeviceWhileConnectedUnresolvesRepliesDisconnectsThenRemovesDepthFirstInHandleOrder() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let since = fixture.mark
        let (result, mark) = await fixture.callMarked(SimulatorFixture.hci0, Interface.adapter, "RemoveDevice", [.objectPath(device)])
        _ = try result.get()
        try await fixture.waitForSignal(since: since) { $0.removedObject == device }
        let unresolved = try #require(fixture.index(since: since) { $0.changes(device, "ServicesResolved", to: .boolean(false)) })
        let disconnected = try #require(fixture.index(since: since) { $0.changes(device, "Connected", to: .boolean(false)) })
        let firstRemoval = try #require(fixture.index(since: since) { $0.removedObject != nil })
        #expect(unresolved < mark && mark <= disconnected && disconnected < firstRemoval)
        let removed = fixture.signals.dropFirst(since).compactMap(\.removedObject)
            .map { String($0.rawValue.dropFirst(device.rawValue.count)) }
        #expect(removed == [
            "/service0008/char0009/desc000b", "/service0008/char0009", "/service0008",
            "/service000c/char000d", "/service000c/char000f", "/service000c/char0011",
            "/service000c/char0013/desc0015", "/service000c/char0013", "/service000c/char0016/desc0018", "/service000c/char0016",
            "/service000c/char0019/desc001b", "/service000c/char0019", "/service000c/char001c/desc001e", "/service000c/char001c",
            "/service000c", "",
        ])
    }

    @BleLoop
    @Test func aDeviceConnectedOnceIsNoLongerTemporary() async throws {
        // Device1.Connect makes the device permanent (btd_device_set_temporary(dev, false)):
        // it is stored and outlives TemporaryTimeout, unlike a device only ever seen.
        let stranger = PeripheralSpec(address: "C0:FF:EE:00:00:0A", name: "stranger")
        let fixture = try await SimulatorFixture.start(peripherals: [Golden.spec(), stranger],
                                                       configuration: .init(temporaryTimeoutSeconds: 0.3))
        defer { fixture.tearDown() }
        let strangerPath = SimulatorFixture.devicePath(stranger.address)
        // A filter makes every report visible (an RSSI signal each), to pace the test.
        try await fixture.call(SimulatorFixture.hci0, Interface.adapter, "SetDiscoveryFilter", [options([("Transport", .string("le"))])])
        let device = try await fixture.discover(Golden.address, stop: false)
        try await fixture.waitForSignal { $0.addedObject == strangerPath }
        try await fixture.connect(device)
        try await fixture.disconnect(device)
        fixture.simulator.peripheral(Golden.address)?.stopAdvertising()
        // The stranger is heard once more after the golden device went quiet, then stops too:
        // it expires later than a temporary golden device would.
        let quiet = fixture.mark
        try await fixture.waitForSignal(since: quiet) { $0.changes(strangerPath, "RSSI") }
        fixture.simulator.peripheral(stranger.address)?.stopAdvertising()
        try await fixture.waitForSignal { $0.removedObject == strangerPath }
        #expect(try await fixture.managedObjects()[device] != nil)
    }

    @BleLoop
    @Test(arguments: ["Connect", "Disconnect"])
    func callsOnAnUnknownDeviceAreUnknownObject(method: String) async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        await expectDBusError("org.freedesktop.DBus.Error.UnknownObject",
                              "Method \"\(method)\" with signature \"\" on interface \"org.bluez.Device1\" doesn't exist\n") {
            try await fixture.call(DeviceConnectionTests.device, Interface.device, method)
        }
    }

    @BleLoop
    @Test func connectingToADeviceThatStoppedAdvertisingAbortsByLocalWithoutPropertyChanges() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Golden.spec()])
        defer { fixture.tearDown() }
        let device = try await fixture.discover(Golden.address)
        fixture.simulator.peripheral(Golden.address)?.stopAdvertising()
        try await fixture.barrier()
        let since = fixture.mark
        await expectDBusError("org.bluez.Error.Failed", "le-connection-abort-by-local") {
            try await fixture.call(device, Interface.device, "Connect")
        }
        try await fixture.barrier()
        #expect(fixture.signals(since: since) { $0.path == device }.isEmpty)
    }

    @BleLoop
    @Test func settingTrustedSignalsBeforeTheReply() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Golden.spec()])
        defer { fixture.tearDown() }
        let device = try await fixture.discover(Golden.address)
        let (result, mark) = await fixture.callMarked(device, Interface.properties, "Set",
                                                      [.string(Interface.device), .string("Trusted"), .variant(.boolean(true))])
        _ = try result.get()
        let trusted = try #require(fixture.index { $0.changes(device, "Trusted", to: .boolean(true)) })
        #expect(trusted < mark, "Device1: the signal comes first (the opposite of Adapter1)")
    }

    @BleLoop
    @Test func settingBlockedToItsCurrentValueGivesNoSignal() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Golden.spec()])
        defer { fixture.tearDown() }
        let device = try await fixture.discover(Golden.address)
        let since = fixture.mark
        try await fixture.setProperty(device, Interface.device, "Blocked", .boolean(false))
        try await fixture.barrier()
        #expect(fixture.signals(since: since) { $0.path == device }.isEmpty)
    }

    @BleLoop
    @Test func aNamelessDeviceIsAliasedByItsAddressWithDashes() async throws {
        let spec = PeripheralSpec(address: "C0:FF:EE:00:00:05")
        let fixture = try await SimulatorFixture.start(peripherals: [spec])
        defer { fixture.tearDown() }
        let device = try await fixture.discover(spec.address)
        #expect(try await fixture.property(device, Interface.device, "Alias") == .string("C0-FF-EE-00-00-05"))
        await expectDBusError("org.freedesktop.DBus.Error.InvalidArgs", "No such property 'Name'") {
            _ = try await fixture.property(device, Interface.device, "Name")
        }
    }

    @BleLoop
    @Test func connectAndDisconnectKeepTheirOrderUnderScaledDelays() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Golden.spec()],
                                                       configuration: .init(timing: TimingModel(scale: 0.05)))
        defer { fixture.tearDown() }
        let device = try await fixture.discover(Golden.address)
        let since = fixture.mark
        let (connectResult, connectMark) = await fixture.callMarked(device, Interface.device, "Connect")
        _ = try connectResult.get()
        try await fixture.waitForProperty(device, "ServicesResolved", .boolean(true), since: since)
        let (disconnectResult, disconnectMark) = await fixture.callMarked(device, Interface.device, "Disconnect")
        _ = try disconnectResult.get()
        try await fixture.waitForProperty(device, "Connected", .boolean(false), since: since)
        let order = fixture.signals.indices.dropFirst(since).compactMap { index -> String? in
            let signal = fixture.signals[index]
            if signal.path == device, signal.isPropertiesChanged { return signal.changedNames.joined(separator: "+") }
            if signal.addedObject != nil { return "added" }
            return nil
        }
        let firstAdded = try #require(order.firstIndex(of: "added"))
        #expect(Array(order[..<firstAdded]) == ["Connected"])
        #expect(order.suffix(2) == ["ServicesResolved", "Connected"])
        #expect(order.contains("UUIDs+ServicesResolved"))
        let connected = try #require(fixture.index(since: since) { $0.changes(device, "Connected", to: .boolean(true)) })
        let added = try #require(fixture.index(since: since) { $0.addedObject != nil })
        let unresolved = try #require(fixture.index(since: since) { $0.changes(device, "ServicesResolved", to: .boolean(false)) })
        let disconnected = try #require(fixture.index(since: since) { $0.changes(device, "Connected", to: .boolean(false)) })
        #expect(connected < connectMark && connectMark <= added)
        #expect(unresolved < disconnectMark && disconnectMark <= disconnected)
    }
}
