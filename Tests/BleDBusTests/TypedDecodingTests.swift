import BleDBus
import BlueZVocabulary
import Foundation
import Testing

/// Reading received values as Swift types: a value of another shape throws a
/// `DBusDecodingError` that says what was expected, what was found and where.
@Suite struct TypedDecodingTests {
    @Test func anArgumentOfTheRightTypeIsRead() throws {
        let body: [DBusValue] = [.string("hci0"), .uint32(5), .objectPath("/org/bluez")]
        #expect(try body.argument(0, as: String.self) == "hci0")
        #expect(try body.argument(1, as: UInt32.self) == 5)
        #expect(try body.argument(2, as: ObjectPath.self) == "/org/bluez")
    }

    @Test func anArgumentOfAnotherTypeThrowsADecodingErrorNamingBothTypes() {
        let body: [DBusValue] = [.uint32(5)]
        #expect(throws: DBusDecodingError(expected: "s", found: "u", context: "argument 0")) {
            try body.argument(0, as: String.self)
        }
    }

    @Test func theDecodingErrorDescriptionSaysWhereAndWhat() {
        do {
            _ = try [DBusValue.uint32(5)].argument(0, as: String.self)
            Issue.record("a uint32 was read as a String")
        } catch {
            #expect(error.description == "D-Bus value at argument 0 should be s but is u.")
        }
    }

    @Test func aMissingArgumentIsADecodingError() {
        #expect(throws: DBusDecodingError(expected: "b", found: "nothing", context: "argument 2")) {
            try [DBusValue.string("a")].argument(2, as: Bool.self)
        }
    }

    @Test func aWrongElementInAnArrayIsNamedByItsIndex() {
        let value = DBusValue.array(element: .variant, [.variant(.string("ok")), .variant(.int32(3))])
        #expect(throws: DBusDecodingError(expected: "s", found: "v", context: "argument 0[0]")) {
            try [value].argument(0, as: [String].self)
        }
        let unwrapped = DBusValue.array(element: .string, [.string("ok")])
        #expect(throws: DBusDecodingError(expected: "i", found: "s", context: "argument 0[0]")) {
            try [unwrapped].argument(0, as: [Int32].self)
        }
    }

    @Test func aWrongValueInADictionaryIsNamedByItsKey() throws {
        let value = DBusValue.dictionary(key: .string, value: .variant, [
            DBusDictionaryEntry(key: .string("Powered"), value: .variant(.boolean(true))),
        ])
        #expect(throws: DBusDecodingError(expected: "b", found: "v", context: "argument 0['Powered']")) {
            try [value].argument(0, as: [String: Bool].self)
        }
        #expect(try [value].argument(0, as: [String: DBusValue].self) == ["Powered": .boolean(true)])
    }

    @Test func bytesReadAsDataAndAsAByteArray() throws {
        let body: [DBusValue] = [.bytes(Data([1, 2, 3]))]
        #expect(try body.argument(0, as: Data.self) == Data([1, 2, 3]))
        #expect(try body.argument(0, as: [UInt8].self) == [1, 2, 3])
        #expect(throws: DBusDecodingError.self) { try body.argument(0, as: [String].self) }
    }

    @Test func optionalReadingGivesNilForAnotherType() {
        #expect(DBusValue.int16(-40).as(Int16.self) == -40)
        #expect(DBusValue.int16(-40).as(Int32.self) == nil)
    }

    @Test func aFileDescriptorIsReadAsTheSameOwner() throws {
        let owner = UnixFileDescriptor(adopting: -1)
        #expect(try UnixFileDescriptor.decode(.unixFD(owner)) === owner)
        #expect(throws: DBusDecodingError.self) { try UnixFileDescriptor.decode(.int32(3)) }
    }

    // MARK: BlueZ shapes

    static let adapterProperties = BlueZShapes.propertyDictionary([
        ("Address", .string("00:11:22:33:44:55")), ("Powered", .boolean(true)), ("Class", .uint32(0x10c)),
    ])

    @Test func propertyMapReadsAnASVIntoADictionary() throws {
        #expect(try BlueZShapes.propertyMap(Self.adapterProperties) == [
            "Address": .string("00:11:22:33:44:55"), "Powered": .boolean(true), "Class": .uint32(0x10c),
        ])
    }

    @Test(arguments: [
        DBusValue.dictionary(key: .string, value: .string, []),
        .array(element: .string, []),
        .string("a{sv}"),
        .variant(BlueZShapes.propertyDictionary([])),
    ])
    func propertyMapRefusesOtherShapes(value: DBusValue) {
        #expect(throws: DBusDecodingError(expected: "a{sv}", found: value.type.signature, context: "a{sv}")) {
            try BlueZShapes.propertyMap(value)
        }
    }

    static func managedObjectsValue(adapterInterfaces: DBusValue) -> DBusValue {
        .dictionary(key: .objectPath, value: .dictionary(key: .string, value: .dictionary(key: .string, value: .variant)), [
            DBusDictionaryEntry(key: .objectPath("/org/bluez/hci0"), value: adapterInterfaces),
        ])
    }

    @Test func managedObjectsReadsPathsInterfacesAndProperties() throws {
        let interfaces = DBusValue.dictionary(key: .string, value: .dictionary(key: .string, value: .variant), [
            DBusDictionaryEntry(key: .string("org.bluez.Adapter1"), value: Self.adapterProperties),
            DBusDictionaryEntry(key: .string("org.freedesktop.DBus.Introspectable"), value: BlueZShapes.propertyDictionary([])),
        ])
        let objects = try BlueZShapes.managedObjects(Self.managedObjectsValue(adapterInterfaces: interfaces))
        #expect(Array(objects.keys) == ["/org/bluez/hci0"])
        #expect(objects["/org/bluez/hci0"]?["org.bluez.Adapter1"]?["Powered"] == .boolean(true))
        #expect(objects["/org/bluez/hci0"]?["org.freedesktop.DBus.Introspectable"] == [:])
    }

    @Test func managedObjectsRefusesAPropertyMapInstead() {
        #expect(throws: DBusDecodingError(expected: "a{oa{sa{sv}}}", found: "a{sv}", context: "GetManagedObjects")) {
            try BlueZShapes.managedObjects(Self.adapterProperties)
        }
    }

    @Test func managedObjectsRefusesAnObjectKeyedByString() {
        let value = DBusValue.dictionary(key: .string, value: .dictionary(key: .string, value: .dictionary(key: .string, value: .variant)), [])
        #expect(throws: DBusDecodingError.self) { try BlueZShapes.managedObjects(value) }
    }

    @Test func manufacturerDataReadsCompanyIdentifiersAndBytes() throws {
        let data: [UInt16: Data] = [0x004C: Data([0x02, 0x15]), 0xFFFF: Data()]
        #expect(try BlueZShapes.manufacturerData(BlueZShapes.manufacturerDataValue(data)) == data)
    }

    @Test func manufacturerDataRefusesANonByteValue() {
        let value = DBusValue.dictionary(key: .uint16, value: .variant, [
            DBusDictionaryEntry(key: .uint16(76), value: .variant(.string("not bytes"))),
        ])
        #expect(throws: DBusDecodingError(expected: "ay", found: "s", context: "ManufacturerData[76]")) {
            try BlueZShapes.manufacturerData(value)
        }
    }

    @Test func manufacturerDataRefusesStringKeys() {
        #expect(throws: DBusDecodingError(expected: "a{qv}", found: "a{sv}", context: "ManufacturerData")) {
            try BlueZShapes.manufacturerData(BlueZShapes.serviceDataValue(["180d": Data([1])]))
        }
    }

    @Test func serviceDataReadsUUIDsAndBytes() throws {
        let data: [String: Data] = ["0000180d-0000-1000-8000-00805f9b34fb": Data([0x06, 0x40]), "180f": Data([99])]
        #expect(try BlueZShapes.serviceData(BlueZShapes.serviceDataValue(data)) == data)
    }

    @Test func serviceDataRefusesANonByteValue() {
        let value = BlueZShapes.propertyDictionary([("180f", .uint32(99))])
        #expect(throws: DBusDecodingError(expected: "ay", found: "u", context: "ServiceData['180f']")) {
            try BlueZShapes.serviceData(value)
        }
    }

    @Test func interfaceMapNamesTheInterfaceWhosePropertiesAreWrong() {
        let value = DBusValue.dictionary(key: .string, value: .dictionary(key: .string, value: .variant), [
            DBusDictionaryEntry(key: .string("org.bluez.Device1"), value: BlueZShapes.propertyDictionary([])),
        ])
        #expect(throws: Never.self) { try BlueZShapes.interfaceMap(value) }
        #expect(throws: DBusDecodingError.self) { try BlueZShapes.interfaceMap(Self.adapterProperties) }
    }
}
