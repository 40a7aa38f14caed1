import BleDBus
import BlueZVocabulary

/// bluetoothd's names come from the vocabulary BleSim also speaks, so client and simulator
/// cannot drift apart; the short names below are the ones BleCore's files were written with.
typealias BlueZ = BlueZVocabulary.BlueZ

extension BlueZ {
    static var service: String { busName }
    static var adapter: String { Adapter1.interface }
    static var device: String { Device1.interface }
    static var gattService: String { GattService1.interface }
    static var gattCharacteristic: String { GattCharacteristic1.interface }
    static var gattDescriptor: String { GattDescriptor1.interface }
    static var properties: String { FreedesktopDBus.Properties.interface }
    static var objectManager: String { FreedesktopDBus.ObjectManager.interface }
}
