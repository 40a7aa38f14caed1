import BleDBus
import Foundation
import Testing

/// The benchmark lane's shortcuts on hot paths must give the answers of the general code they
/// bypass: `PropertiesChanged` bodies decoded along their known shape, and `isChild(of:)`
/// against building the parent path.
@Suite struct HotPathEquivalenceTests {
    private static func roundTrip(_ body: [DBusValue]) throws -> [DBusValue] {
        var message = DBusMessage.signal(path: "/org/bluez/hci0/dev_C0_FF_EE_00_00_10/service0010/char0011",
                                         interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged", body: body)
        message.serial = 7  // libdbus refuses to parse a message that was never given one
        return try DBusMessage(wireBytes: message.wireBytes()).body
    }

    private static func properties(_ entries: [(String, DBusValue)]) -> DBusValue {
        .dictionary(key: .string, value: .variant, entries.map { DBusDictionaryEntry(key: .string($0.0), value: .variant($0.1)) })
    }

    @Test(arguments: [
        [DBusValue.string("org.bluez.GattCharacteristic1"), properties([("Value", .bytes(Data([1, 2, 3, 4])))]), .array(element: .string, [])],
        [.string("org.bluez.GattCharacteristic1"), properties([("Value", .bytes(Data()))]), .array(element: .string, [])],
        [.string("org.bluez.Device1"), properties([("RSSI", .int16(-60)), ("Connected", .boolean(true)),
                                                   ("ManufacturerData", .dictionary(key: .uint16, value: .variant,
                                                                                    [DBusDictionaryEntry(key: .uint16(0xffff), value: .variant(.bytes(Data([7]))))])),
                                                   ("UUIDs", .array(element: .string, [.string("0000ff00-0000-1000-8000-00805f9b34fb")]))]),
         .array(element: .string, [.string("RSSI"), .string("TxPower")])],
        [.string("org.bluez.Adapter1"), properties([]), .array(element: .string, [.string("Discovering")])],
    ])
    func propertiesChangedDecodesToTheValuesItWasBuiltFrom(_ body: [DBusValue]) throws {
        #expect(try Self.roundTrip(body) == body)
    }

    @Test func otherSignaturesStillDecodeAsBefore() throws {
        let body: [DBusValue] = [.string("org.bluez.GattCharacteristic1"), Self.properties([("Value", .bytes(Data([9])))])]
        #expect(try Self.roundTrip(body) == body)
    }

    @Test(arguments: ["/", "/org", "/org/bluez", "/org/bluez/hci0", "/org/bluez/hci0/dev_C0_FF_EE_00_00_10",
                      "/org/bluez/hci0/dev_C0_FF_EE_00_00_10/service0010", "/org/bluez/hci01/dev_X", "/org/bluez/hci/dev_X"])
    func isChildAgreesWithParent(_ text: String) throws {
        let path = try ObjectPath(text)
        for candidate in ["/", "/org", "/org/bluez", "/org/bluez/hci0", "/org/bluez/hci", "/org/bluez/hci0/dev_C0_FF_EE_00_00_10"] {
            let parent = try ObjectPath(candidate)
            #expect(path.isChild(of: parent) == (path.parent == parent), "\(text) under \(candidate)")
        }
    }
}
