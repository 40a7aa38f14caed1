import BleDBus
import BleSim
import BleTestSupport
import Foundation
import Testing
import BlueZVocabulary

/// A GATT application with one service: a read/write characteristic and a notify one, served by
/// a second connection the way a BlueZ peripheral app does.
@BleLoop
final class FakeGattApplication {
    let connection: Connection
    var value = Data([0x01, 0x02])
    var writes: [(Data, PropertyMap)] = []
    var readOptions: [PropertyMap] = []
    var notifyCalls: [String] = []
    static let root: ObjectPath = "/com/example/app"
    static let service: ObjectPath = "/com/example/app/service0"
    static let valueCharacteristic: ObjectPath = "/com/example/app/service0/char0"
    static let notifyCharacteristic: ObjectPath = "/com/example/app/service0/char1"
    static let advertisement: ObjectPath = "/com/example/advert0"

    init(connection: Connection) {
        self.connection = connection
        let objects = connection.objects
        objects.addObjectManager(at: FakeGattApplication.root)
        objects.register(FakeGattApplication.service, interfaces: [ExportedInterface("org.bluez.GattService1", properties: [
            ExportedProperty("UUID", .string) { .string("12345678-1234-5678-1234-56789abcdef0") },
            ExportedProperty("Primary", .boolean) { .boolean(true) },
        ])])
        let options = ArgumentDescription("options", .dictionary(key: .string, value: .variant))
        objects.register(FakeGattApplication.valueCharacteristic, interfaces: [ExportedInterface("org.bluez.GattCharacteristic1", methods: [
            ExportedMethod("ReadValue", in: [options], out: [ArgumentDescription("value", .array(.byte))]) { [weak self] call in
                guard let self else { return }
                self.readOptions.append((try? BlueZShapes.propertyMap(call.arguments[0])) ?? [:])
                call.reply([.bytes(self.value)])
            },
            ExportedMethod("WriteValue", in: [ArgumentDescription("value", .array(.byte)), options]) { [weak self] call in
                guard let self, case .bytes(let data) = call.arguments[0] else { return }
                self.value = data
                self.writes.append((data, (try? BlueZShapes.propertyMap(call.arguments[1])) ?? [:]))
                call.reply()
            },
        ], properties: [
            ExportedProperty("UUID", .string) { .string("12345678-1234-5678-1234-56789abcdef1") },
            ExportedProperty("Service", .objectPath) { .objectPath(FakeGattApplication.service) },
            ExportedProperty("Flags", .array(.string)) { .array(element: .string, [.string("read"), .string("write")]) },
        ])])
        objects.register(FakeGattApplication.notifyCharacteristic, interfaces: [ExportedInterface("org.bluez.GattCharacteristic1", methods: [
            ExportedMethod("StartNotify") { [weak self] call in
                self?.notifyCalls.append("StartNotify")
                call.reply()
            },
            ExportedMethod("StopNotify") { [weak self] call in
                self?.notifyCalls.append("StopNotify")
                call.reply()
            },
        ], properties: [
            ExportedProperty("UUID", .string) { .string("12345678-1234-5678-1234-56789abcdef2") },
            ExportedProperty("Service", .objectPath) { .objectPath(FakeGattApplication.service) },
            ExportedProperty("Flags", .array(.string)) { .array(element: .string, [.string("notify")]) },
            ExportedProperty("Value", .array(.byte)) { .bytes(Data()) },
        ])])
        objects.register(FakeGattApplication.advertisement, interfaces: [ExportedInterface("org.bluez.LEAdvertisement1", methods: [
            ExportedMethod("Release") { call in call.reply() },
        ], properties: [
            ExportedProperty("Type", .string) { .string("peripheral") },
            ExportedProperty("ServiceUUIDs", .array(.string)) { .array(element: .string, [.string("12345678-1234-5678-1234-56789abcdef0")]) },
            ExportedProperty("LocalName", .string) { .string("app-periph") },
        ])])
    }

    func register(on adapter: ObjectPath) async throws {
        _ = try await connection.call(destination: "org.bluez", path: adapter, interface: "org.bluez.GattManager1",
                                      member: "RegisterApplication",
                                      arguments: [.objectPath(FakeGattApplication.root), BlueZShapes.propertyDictionary([])])
        _ = try await connection.call(destination: "org.bluez", path: adapter, interface: "org.bluez.LEAdvertisingManager1",
                                      member: "RegisterAdvertisement",
                                      arguments: [.objectPath(FakeGattApplication.advertisement), BlueZShapes.propertyDictionary([])])
    }

    func notify(_ data: Data) {
        connection.objects.emitPropertiesChanged(path: FakeGattApplication.notifyCharacteristic, interface: "org.bluez.GattCharacteristic1",
                                                 changed: [DBusDictionaryEntry(key: .string("Value"), value: .variant(.bytes(data)))],
                                                 invalidated: [])
    }
}

@BleLoop
@Test func appRegisteredOnOneAdapterIsDiscoveredConnectedAndUsedFromTheOther() async throws {
    let fixture = try await SimulatorFixture.start()
    defer { fixture.tearDown() }
    let appConnection = try await Connection.open(fixture.bus.busAddress)
    defer { appConnection.close() }
    let app = FakeGattApplication(connection: appConnection)
    try await app.register(on: "/org/bluez/hci0")
    #expect(try await fixture.property("/org/bluez/hci0", "org.bluez.LEAdvertisingManager1", "ActiveInstances") == .byte(1))

    let device: ObjectPath = "/org/bluez/hci1/dev_00_AA_01_00_00_00"
    try await fixture.call("/org/bluez/hci1", "org.bluez.Adapter1", "StartDiscovery")
    try await fixture.waitForSignal { $0.member == "InterfacesAdded" && $0.body.first == .objectPath(device) }
    #expect(try await fixture.property(device, "org.bluez.Device1", "Name") == .string("app-periph"))
    try await fixture.call(device, "org.bluez.Device1", "Connect")
    try await fixture.waitForProperty(device, "ServicesResolved", .boolean(true))

    // As on bluetoothd: its own GATT (0x0008) and Device Information (0x0012) services, then the app at 0x0015.
    let valuePath = try ObjectPath(device.rawValue + "/service0015/char0016")
    let notifyPath = try ObjectPath(device.rawValue + "/service0015/char0018")
    let read = try await fixture.call(valuePath, "org.bluez.GattCharacteristic1", "ReadValue", [BlueZShapes.propertyDictionary([])])
    #expect(read == [.bytes(Data([0x01, 0x02]))])
    #expect(app.readOptions.first?["device"] == .objectPath("/org/bluez/hci0/dev_00_AA_01_00_00_01"))
    #expect(app.readOptions.first?["link"] == .string("LE"))
    #expect(app.readOptions.first?["mtu"] == .uint16(517))

    try await fixture.call(valuePath, "org.bluez.GattCharacteristic1", "WriteValue", [.bytes(Data([0x09])), BlueZShapes.propertyDictionary([])])
    #expect(app.writes.map(\.0) == [Data([0x09])])
    #expect(app.writes.first?.1["type"] == nil, "5.66 passes no type option to the application")

    let mark = fixture.mark
    try await fixture.call(notifyPath, "org.bluez.GattCharacteristic1", "StartNotify")
    app.notify(Data([0xAB, 0xCD]))
    let notification = try await fixture.waitForSignal(since: mark) {
        $0.path == notifyPath && $0.member == "PropertiesChanged" && SimulatorFixture.changedValue($0, "Value") != nil
    }
    #expect(SimulatorFixture.changedValue(notification, "Value") == .bytes(Data([0xAB, 0xCD])))
    // bluetoothd forwards the subscription to the app asynchronously; a round trip to the app
    // after it orders the check.
    _ = try await appConnection.call(destination: appConnection.uniqueName, path: "/", interface: "org.freedesktop.DBus.Peer", member: "Ping")
    _ = try await fixture.client.call(destination: "org.bluez", path: "/", interface: "org.freedesktop.DBus.Peer", member: "Ping")
    #expect(app.notifyCalls == ["StartNotify"])
}

@BleLoop
@Test func anAppsServiceUUIDsComeBeforeTheDaemonsOwnInAdapterUUIDs() async throws {
    let fixture = try await SimulatorFixture.start()
    defer { fixture.tearDown() }
    let appConnection = try await Connection.open(fixture.bus.busAddress)
    defer { appConnection.close() }
    let app = FakeGattApplication(connection: appConnection)
    try await app.register(on: "/org/bluez/hci0")
    let expected = ["12345678-1234-5678-1234-56789abcdef0"] + AdapterTests.daemonUUIDs
    #expect(try await fixture.property("/org/bluez/hci0", "org.bluez.Adapter1", "UUIDs")
        == .array(element: .string, expected.map { .string($0) }))
    #expect(try await fixture.property("/org/bluez/hci1", "org.bluez.Adapter1", "UUIDs")
        == .array(element: .string, AdapterTests.daemonUUIDs.map { .string($0) }))
}

/// A central on hci1 connected to `app` (registered on hci0), notifying on its notify characteristic.
@BleLoop
private func connectCentral(_ fixture: SimulatorFixture) async throws -> ObjectPath {
    let device: ObjectPath = "/org/bluez/hci1/dev_00_AA_01_00_00_00"
    try await fixture.call("/org/bluez/hci1", "org.bluez.Adapter1", "StartDiscovery")
    try await fixture.waitForSignal { $0.addedObject == device }
    try await fixture.call("/org/bluez/hci1", "org.bluez.Adapter1", "StopDiscovery")
    try await fixture.call(device, "org.bluez.Device1", "Connect")
    try await fixture.waitForProperty(device, "ServicesResolved", .boolean(true))
    try await fixture.call(try ObjectPath(device.rawValue + "/service0015/char0018"), "org.bluez.GattCharacteristic1", "StartNotify")
    return device
}

/// What the central saw after `since` when the app's services went while its link stayed (as
/// bluetoothd 5.66 did in the VM, see the README's "Observed in the VM").
@BleLoop
private func expectAppServicesGoneLinkKept(_ fixture: SimulatorFixture, _ device: ObjectPath, since: Int,
                                           sourceLocation: SourceLocation = #_sourceLocation) async throws {
    let service = try ObjectPath(device.rawValue + "/service0015")
    try await fixture.waitForSignal(since: since, "InterfacesRemoved of \(service)") { $0.removedObject == service }
    let uuids = try await fixture.waitForSignal(since: since, "the device's UUIDs") { $0.changes(device, "UUIDs") }
    #expect(uuids.changed("UUIDs") == .array(element: .string, ["00001800", "00001801", "0000180a"]
        .map { .string($0 + "-0000-1000-8000-00805f9b34fb") }), sourceLocation: sourceLocation)
    let removed = fixture.signals(since: since) { $0.removedObject?.isDescendant(of: device, orEqual: true) == true }
        .compactMap(\.removedObject).map { String($0.rawValue.dropFirst(device.rawValue.count + 1)) }
    #expect(removed == ["service0015/char0016", "service0015/char0018/desc001a", "service0015/char0018", "service0015"],
            sourceLocation: sourceLocation)
    #expect(fixture.signals(since: since) { $0.changes(device, "Connected") || $0.changes(device, "ServicesResolved") }.isEmpty,
            sourceLocation: sourceLocation)
    #expect(try await fixture.property(device, "org.bluez.Device1", "Connected") == .boolean(true), sourceLocation: sourceLocation)
    #expect(try await fixture.property("/org/bluez/hci0/dev_00_AA_01_00_00_01", "org.bluez.Device1", "Connected") == .boolean(true),
            sourceLocation: sourceLocation)
    #expect(try await fixture.property("/org/bluez/hci0", "org.bluez.Adapter1", "UUIDs")
        == .array(element: .string, AdapterTests.daemonUUIDs.map { .string($0) }), sourceLocation: sourceLocation)
    // The link still carries bluetoothd's own services: the PnP ID of Device Information.
    let pnp = try await fixture.call(try ObjectPath(device.rawValue + "/service0012/char0013"), "org.bluez.GattCharacteristic1",
                                     "ReadValue", [BlueZShapes.propertyDictionary([])])
    #expect(pnp.first?.type == .array(.byte), sourceLocation: sourceLocation)
}

/// Seen in the VM (bluetoothd 5.66, the app SIGTERMed and, in a second round, SIGKILLed): the
/// link stays up; hci0's `UUIDs` and advertising counts change, and the central loses the app's
/// objects (descriptors before their characteristic, characteristics before their service), then
/// gets `{UUIDs}` without the app's service, while `Connected` and `ServicesResolved` stay true.
@BleLoop
@Test func whenABridgedAppLeavesTheBusTheCentralsLinkStaysAndLosesTheAppsServices() async throws {
    let fixture = try await SimulatorFixture.start()
    defer { fixture.tearDown() }
    let appConnection = try await Connection.open(fixture.bus.busAddress)
    defer { appConnection.close() }
    let app = FakeGattApplication(connection: appConnection)
    try await app.register(on: "/org/bluez/hci0")
    let device = try await connectCentral(fixture)
    let since = fixture.mark
    appConnection.close()
    try await expectAppServicesGoneLinkKept(fixture, device, since: since)
    #expect(try await fixture.property("/org/bluez/hci0", "org.bluez.LEAdvertisingManager1", "ActiveInstances") == .byte(0))
}

/// Seen in the VM: UnregisterApplication with a central connected: hci0's `{UUIDs}`, the reply,
/// then the same as when the app leaves the bus; the advertisement stays active.
@BleLoop
@Test func unregisterApplicationWithACentralConnectedKeepsTheLinkAndRemovesTheAppsServices() async throws {
    let fixture = try await SimulatorFixture.start()
    defer { fixture.tearDown() }
    let appConnection = try await Connection.open(fixture.bus.busAddress)
    defer { appConnection.close() }
    let app = FakeGattApplication(connection: appConnection)
    try await app.register(on: "/org/bluez/hci0")
    let device = try await connectCentral(fixture)
    let since = fixture.mark
    _ = try await appConnection.call(destination: "org.bluez", path: "/org/bluez/hci0", interface: "org.bluez.GattManager1",
                                     member: "UnregisterApplication", arguments: [.objectPath(FakeGattApplication.root)])
    try await expectAppServicesGoneLinkKept(fixture, device, since: since)
    let adapterUUIDs = try #require(fixture.index(since: since) { $0.changes("/org/bluez/hci0", "UUIDs") })
    let removal = try #require(fixture.index(since: since) { $0.removedObject != nil })
    #expect(adapterUUIDs < removal)
    #expect(try await fixture.property("/org/bluez/hci0", "org.bluez.LEAdvertisingManager1", "ActiveInstances") == .byte(1))
}
