import BleDBus

/// BlueZ's bus name and interface names.
enum BlueZ {
    static let service = "org.bluez"
    static let adapter = "org.bluez.Adapter1"
    static let device = "org.bluez.Device1"
    static let gattService = "org.bluez.GattService1"
    static let gattCharacteristic = "org.bluez.GattCharacteristic1"
    static let gattDescriptor = "org.bluez.GattDescriptor1"
    static let properties = "org.freedesktop.DBus.Properties"
    static let objectManager = "org.freedesktop.DBus.ObjectManager"
}

extension PropertyMap {
    func string(_ key: String) -> String? { self[key]?.as(String.self) }
    func bool(_ key: String) -> Bool? { self[key]?.as(Bool.self) }
    func strings(_ key: String) -> [String]? { self[key]?.as([String].self) }
    func path(_ key: String) -> ObjectPath? { self[key]?.as(ObjectPath.self) }
    func bytes(_ key: String) -> [UInt8]? { self[key]?.as(Data.self).map { Array($0) } }
}

import Foundation

extension BlueZ {
    /// The interfaces of a device's GATT objects, whose events go to that device's peripheral.
    static func isGattInterface(_ name: String) -> Bool {
        name == gattService || name == gattCharacteristic || name == gattDescriptor
    }
}
