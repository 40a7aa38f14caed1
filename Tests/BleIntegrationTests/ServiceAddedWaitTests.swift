import BleDBus
import BleCore
@testable import BleIntegration
import BleTestSupport
import Foundation
import Testing
import BlueZVocabulary

/// The UUID in an InterfacesAdded from bluetoothd is outside data: a bad one is not the service
/// awaited, never a crash (issue 25; it went to `BluetoothUUID(string:)`, which traps).
@Suite struct ServiceAddedWaitTests {
    @BleLoop
    @Test func aServiceWithABadUUIDIsSkippedAndTheGoodOneEndsTheWait() async throws {
        let bus = try await PrivateBus.start()
        defer { bus.stop() }
        let daemon = try await Connection.open(.address(bus.address))
        defer { daemon.close() }
        let claimed = try await daemon.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                                            member: "RequestName", arguments: [.string("org.bluez"), .uint32(4)])
        #expect(claimed == [.uint32(1)])
        let central = try await Connection.open(.address(bus.address))
        defer { central.close() }
        let wanted = try BluetoothUUID(parsing: "6e400001-b5a3-f393-e0a9-e50e24dcca9e")
        let wait = try ServiceAddedWait(connection: central, uuid: wanted)
        func added(_ uuid: String) throws {
            let properties = BlueZShapes.propertyDictionary([("UUID", .string(uuid))])
            let interfaces = DBusValue.dictionary(key: .string, value: .dictionary(key: .string, value: .variant),
                                                  [DBusDictionaryEntry(key: .string("org.bluez.GattService1"), value: properties)])
            try daemon.emitSignal(path: "/", interface: "org.freedesktop.DBus.ObjectManager", member: "InterfacesAdded",
                                  body: [.objectPath("/org/bluez/hci0/dev_C0_FF_EE_00_00_01/service0001"), interfaces])
        }
        try added("not a uuid")
        try added(wanted.uuidString128)
        try await wait.wait(deadline: .seconds(5))
    }
}
