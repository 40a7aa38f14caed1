import BleCore
import Foundation

/// The peripheral side of the conformance flow: serves a service that includes another, with a
/// dynamic characteristic (read, write, notify) and a writable user description; answers reads
/// and writes, notifies subscribers until the queue is full, and stays serving across a
/// bluetoothd restart (with a restore identifier, so `willRestoreState` is due).
final class PeripheralFlow: ConformanceSink {
    private var manager: CBPeripheralManager!
    private var delegate: ConformancePeripheralManagerDelegate!
    private let included = CBMutableService(type: ConformanceGATT.included, primary: false)
    private let main = CBMutableService(type: ConformanceGATT.main, primary: true)
    private let characteristic = CBMutableCharacteristic(type: ConformanceGATT.value, properties: [.read, .write, .notify],
                                                         value: nil, permissions: [.readable, .writeable])
    private var restored = false
    private var added = false

    func start() {
        delegate = ConformancePeripheralManagerDelegate(sink: self)
        EventLine.note("authorization class \(CBManager.authorization)")
        manager = CBPeripheralManager(delegate: delegate, queue: nil,
                                      options: [CBPeripheralManagerOptionRestoreIdentifierKey: "blekit-conformance"])
    }

    func fired(_ event: String, _ arguments: [Any?]) {
        switch event {
        case "peripheralManagerDidUpdateState(_:)":
            EventLine.print(event, "\(manager.state) authorization \(manager.authorization)")
            guard manager.state == .poweredOn, !added else { return }
            added = true
            if restored { return }
            included.characteristics = [CBMutableCharacteristic(type: ConformanceGATT.includedValue, properties: [.read],
                                                                value: Data([0x11]), permissions: [.readable])]
            characteristic.descriptors = [CBMutableDescriptor(type: CBUUID(string: CBUUIDCharacteristicUserDescriptionString), value: "conformance")]
            main.characteristics = [characteristic]
            main.includedServices = [included]
            manager.add(included)
        case "peripheralManager(_:willRestoreState:)":
            let state = arguments[1] as? [String: Any] ?? [:]
            let services = state[CBPeripheralManagerRestoredStateServicesKey] as? [CBMutableService] ?? []
            let advertisement = state[CBPeripheralManagerRestoredStateAdvertisementDataKey] as? [String: Any] ?? [:]
            restored = true
            added = false
            EventLine.print(event, "services \(services.map { $0.uuid.uuidString }.sorted()) name \(advertisement[CBAdvertisementDataLocalNameKey] as? String ?? "-")")
        case "peripheralManager(_:didAdd:error:)":
            let service = arguments[1] as! CBService
            EventLine.print(event, "\(service.uuid.uuidString) \(arguments[2].map { "\($0)" } ?? "ok")")
            if arguments[2] != nil { EventLine.fail("add failed") }
            if service === included {
                manager.add(main)
            } else {
                manager.startAdvertising([CBAdvertisementDataLocalNameKey: ConformanceGATT.name, CBAdvertisementDataServiceUUIDsKey: [ConformanceGATT.main]])
            }
        case "peripheralManagerDidStartAdvertising(_:error:)":
            EventLine.print(event, arguments[1].map { "\($0)" } ?? "ok")
        case "peripheralManager(_:didReceiveRead:)":
            let request = arguments[1] as! CBATTRequest
            request.value = Data([0x2A])
            manager.respond(to: request, withResult: .success)
            EventLine.print(event, request.characteristic.uuid.uuidString)
        case "peripheralManager(_:didReceiveWrite:)":
            let requests = arguments[1] as! [CBATTRequest]
            manager.respond(to: requests[0], withResult: .success)
            EventLine.print(event, requests.map { String(decoding: $0.value ?? Data(), as: UTF8.self) }.joined(separator: ","))
        case "peripheralManager(_:central:didSubscribeTo:)":
            let characteristic = arguments[2] as! CBCharacteristic
            EventLine.print(event, "\(characteristic.uuid.uuidString) is the served one: \(characteristic === self.characteristic)")
            // Until the queue is full: `peripheralManagerIsReady(toUpdateSubscribers:)` is due after it.
            var sent = 0
            while manager.updateValue(Data("hello \(sent)".utf8), for: self.characteristic, onSubscribedCentrals: nil) {
                sent += 1
                if sent > 64 { EventLine.fail("updateValue never reported a full queue") }
            }
            EventLine.note("queue full after \(sent) update(s)")
        case "peripheralManager(_:central:didUnsubscribeFrom:)":
            EventLine.print(event, (arguments[2] as! CBCharacteristic).uuid.uuidString)
        default:
            EventLine.print(event)
        }
    }
}
