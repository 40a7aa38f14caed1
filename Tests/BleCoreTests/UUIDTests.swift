@testable import BleCore
import Foundation
import Testing

@Test func shortAndLongFormsOfAUUIDAreEqual() throws {
    #expect(BluetoothUUID("180d") == BluetoothUUID("0000180D-0000-1000-8000-00805F9B34FB"))
    #expect(BluetoothUUID(UInt16(0x180d)) == BluetoothUUID("0000180d"))
    #expect(BluetoothUUID(string: "180d").uuidString == "180D")
    #expect(BluetoothUUID(string: "0000180d-0000-1000-8000-00805f9b34fb").uuidString128 == "0000180d-0000-1000-8000-00805f9b34fb")
}

@Test func invalidUUIDStringsAreRejectedWithAnError() {
    for text in ["", "18", "xyz1", "0000180d-0000-1000-8000-00805f9b34f", "0000180d00001000800000805f9b34fbaa"] {
        #expect(throws: BluetoothUUID.ParseError.self) { try BluetoothUUID(parsing: text) }
    }
}

@Test func sha1MatchesTheStandardTestVector() {
    let digest = SHA1.hash(Array("abc".utf8)).map { String(format: "%02x", $0) }.joined()
    #expect(digest == "a9993e364706816aba3e25717850c26c9cd0d89d")
}

@Test func identifierIsStablePerAdapterAndDevice() {
    let a = PeripheralIdentifier.make(adapterAddress: "00:AA:01:00:00:00", deviceAddress: "c0:ff:ee:00:00:01")
    let b = PeripheralIdentifier.make(adapterAddress: "00:aa:01:00:00:00", deviceAddress: "C0:FF:EE:00:00:01")
    let c = PeripheralIdentifier.make(adapterAddress: "00:AA:01:00:00:01", deviceAddress: "C0:FF:EE:00:00:01")
    #expect(a == b)
    #expect(a != c)
    #expect(a.uuidString.dropFirst(14).first == "5")
}

@Test func attErrorIsParsedFromBlueZText() {  // pain point #21
    #expect(BleError.fromRemote(name: "org.bluez.Error.Failed", message: "Operation failed with ATT error: 0x0e") == .att(.unlikelyError))
    #expect(BleError.fromRemote(name: "org.bluez.Error.Failed", message: "Operation failed with ATT error: 0x85") == .att(.application(0x85)))
    #expect(BleError.fromRemote(name: "org.bluez.Error.Failed", message: "le-connection-abort-by-local") == .connectionFailed(.abortByLocal))
    #expect(BleError.fromRemote(name: "org.bluez.Error.InProgress", message: "In Progress") == .inProgress)
    #expect(BleError.fromRemote(name: "org.freedesktop.DBus.Error.UnknownObject", message: "Method \"Connect\" doesn't exist\n",
                                address: "AA") == .deviceGone(address: "AA"))
    #expect(BleError.accessDenied("x").description.contains("bluetooth"))
}
