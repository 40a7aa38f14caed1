import BleCore
import Foundation

/// The central side of the conformance flow: scans for the conformance peripheral, connects,
/// walks its GATT tree (included services, characteristics, descriptors), reads, writes,
/// subscribes, reads the RSSI, unsubscribes, disconnects, and connects once more (the test makes
/// that connect fail).
final class CentralFlow: ConformanceSink {
    private var manager: CBCentralManager!
    private var centralDelegate: ConformanceCentralManagerDelegate!
    private var peripheralDelegate: ConformancePeripheralDelegate!
    private var target: CBPeripheral?
    private var characteristic: CBCharacteristic?
    private var notified = false
    private var disconnected = false

    func start() {
        centralDelegate = ConformanceCentralManagerDelegate(sink: self)
        peripheralDelegate = ConformancePeripheralDelegate(sink: self)
        EventLine.note("authorization class \(CBManager.authorization)")
        manager = CBCentralManager(delegate: centralDelegate, queue: nil)
    }

    func fired(_ event: String, _ arguments: [Any?]) {
        let error = arguments.last.flatMap { $0 as? Error }
        func ok() -> String { error.map { "error \($0)" } ?? "ok" }
        switch event {
        case "centralManagerDidUpdateState(_:)":
            EventLine.print(event, "\(manager.state) authorization \(manager.authorization)")
            if manager.state == .poweredOn, target == nil { manager.scanForPeripherals(withServices: [ConformanceGATT.main], options: nil) }
        case "centralManager(_:didDiscover:advertisementData:rssi:)":
            let peripheral = arguments[1] as! CBPeripheral
            let advertisement = arguments[2] as! [String: Any]
            guard target == nil else { return }
            EventLine.print(event, "\(advertisement[CBAdvertisementDataLocalNameKey] as? String ?? "-") rssi \(arguments[3]!)")
            // BleKit's own property (iOS hides addresses): the test aims BleSim's faults with it.
            EventLine.note("address \(peripheral.address)")
            target = peripheral
            manager.stopScan()
            manager.connect(peripheral, options: nil)
        case "centralManager(_:didConnect:)":
            EventLine.print(event)
            let peripheral = arguments[1] as! CBPeripheral
            peripheral.delegate = peripheralDelegate
            peripheral.discoverServices(nil)
        case "centralManager(_:didFailToConnect:error:)":
            EventLine.print(event, ok())
            print("FLOW DONE")
            fflush(stdout)
            exit(0)
        case "centralManager(_:didDisconnectPeripheral:timestamp:isReconnecting:error:)":
            let timestamp = arguments[2] as! CFAbsoluteTime
            let age = CFAbsoluteTimeGetCurrent() - timestamp
            EventLine.print(event, "isReconnecting \(arguments[3]!) fresh \(age >= 0 && age < 60) \(ok())")
            disconnected = true
            // The test makes this connect fail (BleSim's Connect fault), for didFailToConnect.
            print("READY FOR FAILING CONNECT")
            fflush(stdout)
            _ = readLine()
            manager.connect(target!, options: nil)
        case "peripheral(_:didDiscoverServices:)":
            let peripheral = arguments[0] as! CBPeripheral
            EventLine.print(event, "\(peripheral.services?.map { $0.uuid.uuidString }.sorted() ?? []) \(ok())")
            guard let main = peripheral.services?.first(where: { $0.uuid == ConformanceGATT.main }) else { EventLine.fail("no main service") }
            peripheral.discoverIncludedServices(nil, for: main)
        case "peripheral(_:didDiscoverIncludedServicesFor:error:)":
            let peripheral = arguments[0] as! CBPeripheral
            let service = arguments[1] as! CBService
            EventLine.print(event, "\(service.includedServices?.map { $0.uuid.uuidString } ?? []) \(ok())")
            peripheral.discoverCharacteristics(nil, for: service)
        case "peripheral(_:didDiscoverCharacteristicsFor:error:)":
            let peripheral = arguments[0] as! CBPeripheral
            let service = arguments[1] as! CBService
            EventLine.print(event, "\(service.characteristics?.map { $0.uuid.uuidString } ?? []) \(ok())")
            guard let found = service.characteristics?.first(where: { $0.uuid == ConformanceGATT.value }) else { EventLine.fail("no characteristic") }
            characteristic = found
            peripheral.discoverDescriptors(for: found)
        case "peripheral(_:didDiscoverDescriptorsFor:error:)":
            let peripheral = arguments[0] as! CBPeripheral
            EventLine.print(event, "\((arguments[1] as! CBCharacteristic).descriptors?.map { $0.uuid.uuidString } ?? []) \(ok())")
            peripheral.readValue(for: characteristic!)
        case "peripheral(_:didUpdateValueFor:error:) CBCharacteristic":
            let peripheral = arguments[0] as! CBPeripheral
            let value = (arguments[1] as! CBCharacteristic).value ?? Data()
            if !(characteristic!.isNotifying) {
                EventLine.print(event, "read \(value.map { String(format: "%02x", $0) }.joined()) \(ok())")
                peripheral.writeValue(Data("hi".utf8), for: characteristic!, type: .withResponse)
            } else if !notified {
                notified = true
                EventLine.print(event, "notified \(String(decoding: value, as: UTF8.self)) \(ok())")
                peripheral.readRSSI()
            }
        case "peripheral(_:didWriteValueFor:error:) CBCharacteristic":
            let peripheral = arguments[0] as! CBPeripheral
            EventLine.print(event, ok())
            guard let description = characteristic!.descriptors?.first(where: { $0.uuid == CBUUID(string: CBUUIDCharacteristicUserDescriptionString) }) else {
                EventLine.fail("no user description")
            }
            peripheral.readValue(for: description)
        case "peripheral(_:didUpdateValueFor:error:) CBDescriptor":
            let peripheral = arguments[0] as! CBPeripheral
            let descriptor = arguments[1] as! CBDescriptor
            EventLine.print(event, "\(String(decoding: descriptor.value ?? Data(), as: UTF8.self)) \(ok())")
            peripheral.writeValue(Data("renamed".utf8), for: descriptor)
        case "peripheral(_:didWriteValueFor:error:) CBDescriptor":
            let peripheral = arguments[0] as! CBPeripheral
            EventLine.print(event, error == nil ? "ok" : "refused")
            peripheral.setNotifyValue(true, for: characteristic!)
        case "peripheral(_:didUpdateNotificationStateFor:error:)":
            let peripheral = arguments[0] as! CBPeripheral
            let characteristic = arguments[1] as! CBCharacteristic
            EventLine.print(event, "notifying \(characteristic.isNotifying) \(ok())")
            if !characteristic.isNotifying, !disconnected { manager.cancelPeripheralConnection(peripheral) }
        case "peripheral(_:didReadRSSI:error:)":
            let peripheral = arguments[0] as! CBPeripheral
            EventLine.print(event, "\(arguments[1]!) \(ok())")
            peripheral.setNotifyValue(false, for: characteristic!)
        default:
            EventLine.print(event)
        }
    }
}
