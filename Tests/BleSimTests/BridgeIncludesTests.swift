import BleDBus
import BleSim
import BleTestSupport
import Foundation
import Testing
import BlueZVocabulary

/// What bluetoothd 5.66 makes of a registered application's `Includes` (src/gatt-database.c,
/// `parse_includes` / `include_services`), as BleSim's bridge mirrors it to the other adapter.
@BleLoop
@Suite struct BridgeIncludesTests {
    static let root: ObjectPath = "/com/example/incl"
    static func uuid(_ n: Int) -> String { "b1e4000\(n)-0000-4000-8000-00805f9b34fb" }

    /// service0 (no characteristics), service1 including service0, a path that is no service
    /// of the app and service2 (later: not in bluetoothd's database yet), then service2.
    static func export(on connection: Connection, includes: DBusValue? = nil) {
        let objects = connection.objects
        objects.addObjectManager(at: root)
        for index in 0..<3 {
            var properties = [
                ExportedProperty("UUID", .string) { .string(uuid(index)) },
                ExportedProperty("Primary", .boolean) { .boolean(true) },
            ]
            if index == 1 {
                let value = includes ?? .array(element: .objectPath, [
                    .objectPath(try! ObjectPath(root.rawValue + "/service0")), .objectPath("/com/example/nowhere"),
                    .objectPath(try! ObjectPath(root.rawValue + "/service2")),
                ])
                properties.append(ExportedProperty("Includes", value.type) { value })
            }
            objects.register(try! ObjectPath(root.rawValue + "/service\(index)"), interfaces: [ExportedInterface("org.bluez.GattService1", properties: properties)])
        }
        objects.register(advertisement, interfaces: [ExportedInterface("org.bluez.LEAdvertisement1", methods: [
            ExportedMethod("Release", in: [], out: []) { $0.reply() },
        ], properties: [
            ExportedProperty("Type", .string) { .string("peripheral") },
            ExportedProperty("LocalName", .string) { .string("incl-app") },
        ])])
    }

    static let advertisement: ObjectPath = "/com/example/incl_advert"

    static func register(_ connection: Connection) async throws {
        _ = try await connection.call(destination: "org.bluez", path: "/org/bluez/hci0", interface: "org.bluez.GattManager1",
                                      member: "RegisterApplication", arguments: [.objectPath(root), BlueZShapes.propertyDictionary([])])
    }

    static func advertise(_ connection: Connection) async throws {
        _ = try await connection.call(destination: "org.bluez", path: "/org/bluez/hci0", interface: "org.bluez.LEAdvertisingManager1",
                                      member: "RegisterAdvertisement", arguments: [.objectPath(advertisement), BlueZShapes.propertyDictionary([])])
    }

    @Test func onlyAnEarlierServiceOfTheAppIsIncludedAndEveryEntryTakesAHandle() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        let app = try await Connection.open(fixture.bus.busAddress)
        defer { app.close() }
        Self.export(on: app)
        try await Self.register(app)
        try await Self.advertise(app)
        let device: ObjectPath = "/org/bluez/hci1/dev_00_AA_01_00_00_00"
        try await fixture.call("/org/bluez/hci1", "org.bluez.Adapter1", "StartDiscovery")
        try await fixture.waitForSignal { $0.addedObject == device }
        try await fixture.call("/org/bluez/hci1", "org.bluez.Adapter1", "StopDiscovery")
        try await fixture.call(device, "org.bluez.Device1", "Connect")
        try await fixture.waitForProperty(device, "ServicesResolved", .boolean(true))
        // The app from 0x0015: service0 one handle; service1 its declaration, the one Include it
        // made (0x0017) and two handles reserved for the two it could not; service2 after them.
        let service0 = try ObjectPath(device.rawValue + "/service0015")
        let service1 = try ObjectPath(device.rawValue + "/service0016")
        let service2 = try ObjectPath(device.rawValue + "/service001a")
        #expect(try await fixture.property(service1, "org.bluez.GattService1", "UUID") == .string(Self.uuid(1)))
        #expect(try await fixture.property(service2, "org.bluez.GattService1", "UUID") == .string(Self.uuid(2)))
        #expect(try await fixture.property(service1, "org.bluez.GattService1", "Includes") == .array(element: .objectPath, [.objectPath(service0)]))
        #expect(try await fixture.property(service0, "org.bluez.GattService1", "Includes") == .array(element: .objectPath, []))
    }

    @Test func includesThatAreNotObjectPathsFailTheRegistration() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        let app = try await Connection.open(fixture.bus.busAddress)
        defer { app.close() }
        Self.export(on: app, includes: .array(element: .string, [.string("service0")]))
        await #expect(throws: DBusError.self) { try await Self.register(app) }
    }
}
