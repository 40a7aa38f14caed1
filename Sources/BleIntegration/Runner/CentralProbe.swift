import BleCore
import BleDBus
import BleTestSupport
import Foundation

/// What a BleCore delegate reported, in the order it was reported.
enum ProbeEvent: CustomStringConvertible {
    case state(ManagerState)
    case discovered(Peripheral, AdvertisementData)
    case connected(Peripheral)
    case failedToConnect(Peripheral, BleError?)
    case disconnected(Peripheral, BleError?)
    case services(BleError?)
    case characteristics(Service, BleError?)
    case includedServices(Service, BleError?)
    case descriptors(Characteristic, BleError?)
    case value(Characteristic, Data?, BleError?)
    case wrote(Characteristic, BleError?)
    case notifyState(Characteristic, Bool, BleError?)
    case descriptorValue(Descriptor, Data?, BleError?)
    case servicesModified([BluetoothUUID])
    case readyToWrite

    var description: String {
        switch self {
        case .state(let state): return "state \(state)"
        case .discovered(let peripheral, let advertisement):
            return "discovered \(peripheral.address) name=\(advertisement.localName ?? "-")"
        case .connected(let peripheral): return "connected \(peripheral.address)"
        case .failedToConnect(let peripheral, let error): return "failedToConnect \(peripheral.address) \(Self.describe(error))"
        case .disconnected(let peripheral, let error): return "disconnected \(peripheral.address) \(Self.describe(error))"
        case .services(let error): return "services \(Self.describe(error))"
        case .characteristics(let service, let error): return "characteristics \(service.uuid.uuidString) \(Self.describe(error))"
        case .includedServices(let service, let error): return "includedServices \(service.uuid.uuidString) \(Self.describe(error))"
        case .descriptors(let characteristic, let error): return "descriptors \(characteristic.uuid.uuidString) \(Self.describe(error))"
        case .value(let characteristic, let data, let error):
            return "value \(characteristic.uuid.uuidString) \(data.map(Self.hex) ?? "-") \(Self.describe(error))"
        case .wrote(let characteristic, let error): return "wrote \(characteristic.uuid.uuidString) \(Self.describe(error))"
        case .notifyState(let characteristic, let on, let error): return "notifying \(characteristic.uuid.uuidString) \(on) \(Self.describe(error))"
        case .descriptorValue(let descriptor, let data, let error):
            return "descriptorValue \(descriptor.uuid.uuidString) \(data.map(Self.hex) ?? "-") \(Self.describe(error))"
        case .servicesModified(let uuids): return "servicesModified \(uuids.map(\.uuidString))"
        case .readyToWrite: return "readyToWrite"
        }
    }

    /// `ok`, or the error as a caller sees it (its case and BlueZ's name and message).
    static func describe(_ error: BleError?) -> String {
        guard let error else { return "ok" }
        return "error(\(String(reflecting: error)))"
    }

    static func hex(_ data: Data) -> String { data.isEmpty ? "<empty>" : data.map { String(format: "%02x", $0) }.joined() }
}

/// The delegate of a scenario's central and peripherals: records every event and lets the
/// scenario wait for one with a deadline (never a sleep), through BleTestSupport's recorder.
@BleLoop
final class CentralProbe {
    /// A wait that ended without its event.
    typealias Timeout = EventRecorder<ProbeEvent>.Timeout

    private let recorder = EventRecorder<ProbeEvent>()

    var events: [ProbeEvent] { recorder.events }

    /// The index for "events from now on".
    var mark: Int { recorder.events.count }

    func record(_ event: ProbeEvent) {
        recorder.append(event)
    }

    /// The first event since `index` that satisfies `predicate`, waiting at most `timeout`.
    @discardableResult
    func wait(since index: Int, timeout: Duration = .seconds(30), _ what: String,
              where predicate: @escaping (ProbeEvent) -> Bool) async throws -> ProbeEvent {
        try await recorder.first(since: index, timeout: timeout, what, where: predicate)
    }
}

extension CentralProbe: @preconcurrency CentralManagerDelegate {
    func centralManagerDidUpdateState(_ central: CentralManager) { record(.state(central.state)) }
    func centralManager(_ central: CentralManager, willRestoreState dict: [String: Any]) {}
    func centralManager(_ central: CentralManager, didDiscover peripheral: Peripheral, advertisementData: AdvertisementData, rssi RSSI: Int) {
        record(.discovered(peripheral, advertisementData))
    }
    func centralManager(_ central: CentralManager, didConnect peripheral: Peripheral) { record(.connected(peripheral)) }
    func centralManager(_ central: CentralManager, didFailToConnect peripheral: Peripheral, error: Error?) {
        record(.failedToConnect(peripheral, error as? BleError))
    }
    func centralManager(_ central: CentralManager, didDisconnectPeripheral peripheral: Peripheral, error: Error?) {
        record(.disconnected(peripheral, error as? BleError))
    }
}

extension CentralProbe: @preconcurrency PeripheralDelegate {
    func peripheralDidUpdateName(_ peripheral: Peripheral) {}
    func peripheral(_ peripheral: Peripheral, didModifyServices invalidatedServices: [Service]) {
        record(.servicesModified(invalidatedServices.map(\.uuid)))
    }
    func peripheral(_ peripheral: Peripheral, didReadRSSI RSSI: Int, error: Error?) {}
    func peripheral(_ peripheral: Peripheral, didDiscoverServices error: Error?) { record(.services(error as? BleError)) }
    func peripheral(_ peripheral: Peripheral, didDiscoverCharacteristicsFor service: Service, error: Error?) {
        record(.characteristics(service, error as? BleError))
    }
    func peripheral(_ peripheral: Peripheral, didDiscoverIncludedServicesFor service: Service, error: Error?) {
        record(.includedServices(service, error as? BleError))
    }
    func peripheral(_ peripheral: Peripheral, didDiscoverDescriptorsFor characteristic: Characteristic, error: Error?) {
        record(.descriptors(characteristic, error as? BleError))
    }
    func peripheral(_ peripheral: Peripheral, didUpdateValueFor characteristic: Characteristic, error: Error?) {
        record(.value(characteristic, characteristic.value, error as? BleError))
    }
    func peripheral(_ peripheral: Peripheral, didWriteValueFor characteristic: Characteristic, error: Error?) {
        record(.wrote(characteristic, error as? BleError))
    }
    func peripheral(_ peripheral: Peripheral, didUpdateNotificationStateFor characteristic: Characteristic, error: Error?) {
        record(.notifyState(characteristic, characteristic.isNotifying, error as? BleError))
    }
    func peripheral(_ peripheral: Peripheral, didUpdateValueFor descriptor: Descriptor, error: Error?) {
        record(.descriptorValue(descriptor, descriptor.value, error as? BleError))
    }
    func peripheral(_ peripheral: Peripheral, didWriteValueFor descriptor: Descriptor, error: Error?) {}
    func peripheralIsReady(toSendWriteWithoutResponse peripheral: Peripheral) { record(.readyToWrite) }
}
