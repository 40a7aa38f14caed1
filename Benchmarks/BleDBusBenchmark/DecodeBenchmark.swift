import BleDBus
import BlueZVocabulary
import Foundation

/// A `GetManagedObjects` reply the size of a busy scan: `devices` devices, each with
/// `gattObjectsPerDevice` GATT objects, with the properties bluetoothd really sends.
enum ManagedObjectsFixture {
    /// BlueZ lists these two, with no properties, on every object.
    private static let standardInterfaces: [DBusDictionaryEntry] = [
        DBusDictionaryEntry(key: .string("org.freedesktop.DBus.Introspectable"), value: BlueZShapes.propertyDictionary([])),
        DBusDictionaryEntry(key: .string("org.freedesktop.DBus.Properties"), value: BlueZShapes.propertyDictionary([])),
    ]

    private static let serviceUUIDs = [
        "0000180f-0000-1000-8000-00805f9b34fb", // Battery
        "0000180a-0000-1000-8000-00805f9b34fb", // Device Information
        "0000181a-0000-1000-8000-00805f9b34fb", // Environmental Sensing
        "6e400001-b5a3-f393-e0a9-e50e24dcca9e", // Nordic UART
    ]

    /// How many objects a fixture holds: the adapter, the devices and their GATT objects.
    static func objectCount(devices: Int, gattObjectsPerDevice: Int) -> Int {
        1 + devices * (1 + gattObjectsPerDevice)
    }

    /// The `a{oa{sa{sv}}}` value. GATT objects are laid out as bluetoothd numbers them:
    /// services, each followed by its characteristics, a CCC descriptor on the first one.
    static func value(devices: Int, gattObjectsPerDevice: Int) throws -> DBusValue {
        let adapter: ObjectPath = "/org/bluez/hci0"
        var objects: [DBusDictionaryEntry] = [entry(adapter, "org.bluez.Adapter1", [
            ("Address", .string("00:1A:7D:DA:71:13")), ("AddressType", .string("public")),
            ("Name", .string("blekit-bench")), ("Alias", .string("blekit-bench")), ("Class", .uint32(0x6c010c)),
            ("Powered", .boolean(true)), ("Discoverable", .boolean(false)), ("DiscoverableTimeout", .uint32(180)),
            ("Pairable", .boolean(true)), ("PairableTimeout", .uint32(0)), ("Discovering", .boolean(true)),
            ("UUIDs", strings(serviceUUIDs)), ("Modalias", .string("usb:v1D6Bp0246d0542")),
            ("Roles", strings(["central", "peripheral"])),
        ])]
        objects.reserveCapacity(objectCount(devices: devices, gattObjectsPerDevice: gattObjectsPerDevice))
        for index in 0..<devices {
            let address = String(format: "C4:7C:8D:%02X:%02X:%02X", (index >> 16) & 0xff, (index >> 8) & 0xff, index & 0xff)
            let device = try adapter.appending("dev_" + address.replacingOccurrences(of: ":", with: "_"))
            objects.append(entry(device, "org.bluez.Device1", [
                ("Address", .string(address)), ("AddressType", .string(index % 3 == 0 ? "public" : "random")),
                ("Name", .string("Sensor \(index)")), ("Alias", .string("Sensor \(index)")),
                ("Appearance", .uint16(0x0540)), ("Icon", .string("input-gaming")),
                ("Paired", .boolean(false)), ("Bonded", .boolean(false)), ("Trusted", .boolean(false)),
                ("Blocked", .boolean(false)), ("LegacyPairing", .boolean(false)),
                ("RSSI", .int16(Int16(-40 - index % 50))), ("TxPower", .int16(4)),
                ("Connected", .boolean(index % 10 == 0)), ("UUIDs", strings(serviceUUIDs)),
                ("Modalias", .string("bluetooth:v0059p0001d0001")), ("Adapter", .objectPath(adapter)),
                ("ManufacturerData", BlueZShapes.manufacturerDataValue([
                    0x0059: Data([0x01, 0x02, UInt8(index & 0xff), 0x04, 0x05, 0x06, 0x07, 0x08]),
                ])),
                ("ServiceData", BlueZShapes.serviceDataValue([
                    "0000feaa-0000-1000-8000-00805f9b34fb": Data([0x10, 0x00, 0x03, 0x62, 0x6c, 0x65, 0x6b, 0x69, 0x74, 0x07, 0x00, UInt8(index & 0xff)]),
                ])),
                ("ServicesResolved", .boolean(index % 10 == 0)), ("AdvertisingFlags", .bytes(Data([0x06]))),
            ]))
            objects.append(contentsOf: try gattObjects(under: device, count: gattObjectsPerDevice, seed: index))
        }
        return .dictionary(key: .objectPath, value: .dictionary(key: .string, value: .dictionary(key: .string, value: .variant)), objects)
    }

    private static func gattObjects(under device: ObjectPath, count: Int, seed: Int) throws -> [DBusDictionaryEntry] {
        var result: [DBusDictionaryEntry] = []
        var handle: UInt16 = 1
        var service: ObjectPath = device
        var characteristic: ObjectPath = device
        var characteristicsInService = 0
        var serviceIndex = 0
        while result.count < count {
            // Five objects per service: the service, three characteristics, one descriptor.
            switch result.count % 5 {
            case 0:
                service = try device.appending(String(format: "service%04x", handle))
                result.append(entry(service, "org.bluez.GattService1", [
                    ("UUID", .string(serviceUUIDs[serviceIndex % serviceUUIDs.count])), ("Device", .objectPath(device)),
                    ("Primary", .boolean(true)), ("Includes", .array(element: .objectPath, [])), ("Handle", .uint16(handle)),
                ]))
                serviceIndex += 1
                characteristicsInService = 0
            case 4:
                let descriptor = try characteristic.appending(String(format: "desc%04x", handle))
                result.append(entry(descriptor, "org.bluez.GattDescriptor1", [
                    ("UUID", .string("00002902-0000-1000-8000-00805f9b34fb")), ("Characteristic", .objectPath(characteristic)),
                    ("Value", .bytes(Data([0x00, 0x00]))), ("Flags", strings(["read", "write"])), ("Handle", .uint16(handle)),
                ]))
            default:
                characteristic = try service.appending(String(format: "char%04x", handle))
                let uuid = String(format: "00002a%02x-0000-1000-8000-00805f9b34fb", 0x19 + characteristicsInService)
                result.append(entry(characteristic, "org.bluez.GattCharacteristic1", [
                    ("UUID", .string(uuid)), ("Service", .objectPath(service)),
                    ("Value", .bytes(Data((0..<(4 + (seed + Int(handle)) % 17)).map { UInt8(truncatingIfNeeded: $0 &+ seed) }))),
                    ("Notifying", .boolean(false)), ("Flags", strings(["read", "notify"])),
                    ("MTU", .uint16(247)), ("Handle", .uint16(handle)),
                ]))
                characteristicsInService += 1
            }
            handle += 1
        }
        return result
    }

    private static func entry(_ path: ObjectPath, _ interface: String, _ properties: [(String, DBusValue)]) -> DBusDictionaryEntry {
        let interfaces = [DBusDictionaryEntry(key: .string(interface), value: BlueZShapes.propertyDictionary(properties))] + standardInterfaces
        return DBusDictionaryEntry(key: .objectPath(path), value: .dictionary(key: .string, value: .dictionary(key: .string, value: .variant), interfaces))
    }

    private static func strings(_ values: [String]) -> DBusValue {
        .array(element: .string, values.map { .string($0) })
    }
}

/// Times BleKit's decode of the fixture's wire bytes.
enum DecodeBenchmark {
    enum Failure: Error, CustomStringConvertible {
        case wrongCount(Int, expected: Int)
        var description: String {
            switch self {
            case .wrongCount(let count, let expected): return "decoded \(count) objects, expected \(expected)"
            }
        }
    }

    struct Sample {
        /// `DBusMessage(wireBytes:)`: libdbus demarshal plus the walk into `DBusValue`s.
        var messageMilliseconds: Double
        /// Plus `BlueZShapes.managedObjects`: the whole decode the BlueZ layer pays.
        var totalMilliseconds: Double
        /// Releasing the decoded message and dictionaries afterwards (not part of the decode).
        var releaseMilliseconds: Double
    }

    /// One decode, checked against the number of objects expected.
    static func measure(_ wireBytes: Data, expectedObjects: Int) throws -> Sample {
        let (start, decoded, shaped, count) = try decodeAndRelease(wireBytes)
        let released = ContinuousClock.now
        guard count == expectedObjects else { throw Failure.wrongCount(count, expected: expectedObjects) }
        return Sample(messageMilliseconds: (decoded - start).seconds * 1000, totalMilliseconds: (shaped - start).seconds * 1000,
                      releaseMilliseconds: (released - shaped).seconds * 1000)
    }

    /// Decodes, then lets everything go when it returns, so the caller's clock sees the release
    /// and the decode's clocks do not.
    @inline(never)
    private static func decodeAndRelease(_ wireBytes: Data) throws
        -> (ContinuousClock.Instant, ContinuousClock.Instant, ContinuousClock.Instant, Int) {
        let start = ContinuousClock.now
        let message = try DBusMessage(wireBytes: wireBytes)
        let decoded = ContinuousClock.now
        return try withExtendedLifetime(message) {
            let objects = try BlueZShapes.managedObjects(message.body[0])
            let shaped = ContinuousClock.now
            return withExtendedLifetime(objects) { (start, decoded, shaped, objects.count) }
        }
    }
}
