import BleCore
import Foundation

// @unchecked: it only forwards into the inbox, which is thread-safe.
/// The delegate of the CLI's central and peripherals: every callback becomes a `CentralEvent`.
final class CentralEventRelay: CentralManagerDelegate, PeripheralDelegate, @unchecked Sendable {
    let inbox: EventInbox<CentralEvent>
    /// Names BlueZ gave connected devices (the GAP Device Name it reads on connecting), kept
    /// here rather than in the inbox: they change while no command waits, and bluetoothd takes
    /// a complete advertised name back at the device's next advertisement, so one that is not
    /// caught as it changes is never seen again.
    private let renamed = NSLock()
    private var names: [(address: String, name: String)] = []

    init(inbox: EventInbox<CentralEvent>) { self.inbox = inbox }

    /// The names seen change since the last call, oldest first.
    func takeNames() -> [(address: String, name: String)] {
        renamed.lock()
        defer { renamed.unlock() }
        let taken = names
        names.removeAll()
        return taken
    }

    func peripheralDidUpdateName(_ peripheral: Peripheral) {
        guard let name = peripheral.name else { return }
        renamed.lock()
        names.append((peripheral.address, name))
        renamed.unlock()
    }

    func centralManagerDidUpdateState(_ central: CentralManager) { inbox.post(.state(central.state)) }
    func centralManager(_ central: CentralManager, didDiscover peripheral: Peripheral, advertisementData: AdvertisementData, rssi RSSI: Int) {
        inbox.post(.discovered(peripheral, advertisementData, rssi: RSSI))
    }
    func centralManager(_ central: CentralManager, didConnect peripheral: Peripheral) { inbox.post(.connected(peripheral)) }
    func centralManager(_ central: CentralManager, didFailToConnect peripheral: Peripheral, error: Error?) { inbox.post(.failedToConnect(peripheral, error)) }
    func centralManager(_ central: CentralManager, didDisconnectPeripheral peripheral: Peripheral, error: Error?) { inbox.post(.disconnected(peripheral, error)) }
    func centralManager(_ central: CentralManager, didFailToScan error: Error) { inbox.post(.scanFailed(error)) }

    func peripheral(_ peripheral: Peripheral, didDiscoverServices error: Error?) { inbox.post(.servicesDiscovered(peripheral, error)) }
    func peripheral(_ peripheral: Peripheral, didDiscoverCharacteristicsFor service: Service, error: Error?) { inbox.post(.characteristicsDiscovered(service, error)) }
    func peripheral(_ peripheral: Peripheral, didDiscoverDescriptorsFor characteristic: Characteristic, error: Error?) { inbox.post(.descriptorsDiscovered(characteristic, error)) }
    func peripheral(_ peripheral: Peripheral, didUpdateValueFor characteristic: Characteristic, error: Error?) {
        inbox.post(.valueUpdated(characteristic, characteristic.value, error))
    }
    func peripheral(_ peripheral: Peripheral, didWriteValueFor characteristic: Characteristic, error: Error?) { inbox.post(.valueWritten(characteristic, error)) }
    func peripheral(_ peripheral: Peripheral, didUpdateNotificationStateFor characteristic: Characteristic, error: Error?) { inbox.post(.notificationState(characteristic, error)) }
    func peripheral(_ peripheral: Peripheral, didUpdateValueFor descriptor: Descriptor, error: Error?) { inbox.post(.descriptorValueUpdated(descriptor, error)) }
    func peripheral(_ peripheral: Peripheral, didReadRSSI RSSI: Int, error: Error?) { inbox.post(.rssiRead(peripheral, RSSI, error)) }
    func peripheralIsReady(toSendWriteWithoutResponse peripheral: Peripheral) { inbox.post(.readyToWriteWithoutResponse(peripheral)) }
}
