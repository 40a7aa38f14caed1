import BleDBus
import BlueZVocabulary
import Foundation
import Testing

/// The vocabulary's readers and path scheme against the shapes bluetoothd 5.66 sends
/// (../shared/reference/bluez-introspection/).
struct BlueZVocabularyTests {
    @Test func typedKeysReadTheirTypeAndRejectOthers() {
        let properties: PropertyMap = [
            "Connected": .boolean(true), "RSSI": .int16(-60), "Name": .uint32(3),
            "ManufacturerData": BlueZShapes.manufacturerDataValue([0x004c: Data([1, 2])]),
        ]
        #expect(properties[BlueZ.Device1.connected] == true)
        #expect(BlueZ.Device1.rssi.read(from: properties) == -60)
        #expect(properties[BlueZ.Device1.name] == nil, "a wrongly typed value reads as absent")
        #expect(properties[BlueZ.Device1.servicesResolved] == nil)
        #expect(properties[BlueZ.Device1.manufacturerData] == [0x004c: Data([1, 2])])
        #expect(BlueZ.GattCharacteristic1.value.decode(getReply: .variant(.bytes(Data([7])))) == Data([7]), "Get replies are variants")
        #expect(BlueZ.GattCharacteristic1.value.decode(.variant(.bytes(Data([7])))) == nil, "a nested variant is another type")
        #expect(BlueZ.Device1.manufacturerData.type.signature == "a{qv}")
        #expect(BlueZ.GattCharacteristic1.flags.type.signature == "as")
    }

    @Test func devicePathsRoundTripAddresses() throws {
        let adapter = BlueZ.Paths.adapter(index: 1)
        #expect(adapter.rawValue == "/org/bluez/hci1")
        let device = try #require(BlueZ.Paths.device(adapter: adapter, address: "c0:ff:ee:00:00:03"))
        #expect(device.rawValue == "/org/bluez/hci1/dev_C0_FF_EE_00_00_03")
        #expect(BlueZ.Paths.address(fromDeviceElement: "dev_C0_FF_EE_00_00_03") == "C0:FF:EE:00:00:03")
        #expect(BlueZ.Paths.address(fromDeviceElement: "dev_C0_FF") == nil)
        #expect(BlueZ.Paths.device(adapter: adapter, address: "not an address") == nil)
    }

    @Test func gattPathsParseBackToTheirHandles() throws {
        let device = try #require(BlueZ.Paths.device(adapter: BlueZ.Paths.adapter(index: 0), address: "00:AA:01:00:00:00"))
        let service = BlueZ.Paths.service(device: device, handle: 0x15)
        let characteristic = BlueZ.Paths.characteristic(service: service, handle: 0x16)
        let descriptor = BlueZ.Paths.descriptor(characteristic: characteristic, handle: 0x18)
        #expect(descriptor.rawValue == "/org/bluez/hci0/dev_00_AA_01_00_00_00/service0015/char0016/desc0018")
        #expect(BlueZ.Paths.kind(of: descriptor) == .descriptor(adapter: "hci0", address: "00:AA:01:00:00:00",
                                                                  service: 0x15, characteristic: 0x16, descriptor: 0x18))
        #expect(BlueZ.Paths.kind(of: characteristic) == .characteristic(adapter: "hci0", address: "00:AA:01:00:00:00",
                                                                          service: 0x15, characteristic: 0x16))
        #expect(BlueZ.Paths.devicePath(containing: descriptor) == device)
        #expect(BlueZ.Paths.kind(of: "/org/bluez/hci0") == .adapter(name: "hci0"))
        for other: ObjectPath in ["/", "/org/bluez", "/org/bluez/hci0/dev_00_AA", "/org/bluez/hci0/dev_00_AA_01_00_00_00/service15",
                                  "/org/blekit/peer/service0/char0", "/org/bluez/hci0/dev_00_AA_01_00_00_00/service0015/x"] {
            #expect(BlueZ.Paths.kind(of: other) == nil, "\(other)")
        }
    }

    @Test func attErrorMessagesUseTwoHexDigits() {
        #expect(BlueZ.ErrorMessage.attError(0x0e) == "Operation failed with ATT error: 0x0e")
        #expect(BlueZ.ErrorMessage.attError(0x80) == "Operation failed with ATT error: 0x80")
    }
}

@Test func bluezsOwnPnPIDReadsAsBlueZInEitherSourceAndOthersDoNot() {
    #expect(BlueZ.PnPID.modalias(source: 2, vendor: 0x1d6b, product: 0x0246, version: 0x0542) == "usb:v1D6Bp0246d0542")
    #expect(BlueZ.PnPID.modalias(source: 1, vendor: 0x004c, product: 0x0001, version: 0x0100) == "bluetooth:v004Cp0001d0100")
    #expect(BlueZ.PnPID.modalias(source: 3, vendor: 1, product: 1, version: 1) == nil)
    #expect(BlueZ.PnPID.isBlueZ(modalias: "usb:v1D6Bp0246d0542"))
    #expect(BlueZ.PnPID.isBlueZ(modalias: "bluetooth:v1d6bp0246d0500"))
    #expect(!BlueZ.PnPID.isBlueZ(modalias: "usb:v1D6Bp0247d0542"))
    #expect(!BlueZ.PnPID.isBlueZ(modalias: "bluetooth:v004Cp0001d0100"))
}
