// Seed 000's LED peripheral (WHBLEDemo's peripheral app, ../shared/seeds/000_1ae6029aaaf68bd9.txt):
// the seed describes it without printing its code, so this is that app as an iOS developer writes
// it, with Apple's delegate signatures. Only what Linux lacks differs: `import UIKit` and
// `import CoreBluetooth` became `import BleCore`, the view controller is an NSObject (no UIKit),
// and the label is a print.
import BleCore

class LEDPeripheralViewController: NSObject, CBPeripheralManagerDelegate {
    private var peripheralManager: CBPeripheralManager!
    private let ledServiceUUID = CBUUID(string: "FFE0")
    private let ledCharacteristicUUID = CBUUID(string: "FFE1")
    private var ledCharacteristic: CBMutableCharacteristic!
    private var ledIsOn = false

    func viewDidLoad() {
        peripheralManager = CBPeripheralManager(delegate: self, queue: nil, options: nil)
    }

    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        switch peripheral.state {
        case .poweredOn:
            print("蓝牙已打开，开始配置 LED 服务")
            ledCharacteristic = CBMutableCharacteristic(type: ledCharacteristicUUID,
                                                        properties: [.read, .write, .notify],
                                                        value: nil,
                                                        permissions: [.readable, .writeable])
            let userDescription = CBMutableDescriptor(type: CBUUID(string: CBUUIDCharacteristicUserDescriptionString), value: "LED")
            ledCharacteristic.descriptors = [userDescription]
            let service = CBMutableService(type: ledServiceUUID, primary: true)
            service.characteristics = [ledCharacteristic]
            peripheralManager.add(service)
        case .unauthorized:
            print("未获授权")
        case .poweredOff:
            print("蓝牙已关闭")
        default:
            print("蓝牙状态：\(peripheral.state.rawValue)")
        }
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didAdd service: CBService, error: Error?) {
        if let error = error {
            print("添加服务失败：\(error.localizedDescription)")
            return
        }
        print("服务已添加：\(service.uuid)")
        peripheralManager.startAdvertising([CBAdvertisementDataLocalNameKey: "WHLED",
                                            CBAdvertisementDataServiceUUIDsKey: [ledServiceUUID]])
    }

    func peripheralManagerDidStartAdvertising(_ peripheral: CBPeripheralManager, error: Error?) {
        if let error = error {
            print("广播失败：\(error.localizedDescription)")
        } else {
            print("开始广播")
        }
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didSubscribeTo characteristic: CBCharacteristic) {
        print("中心设备已订阅：\(characteristic.uuid)")
        peripheralManager.updateValue(Data([ledIsOn ? 1 : 0]), for: ledCharacteristic, onSubscribedCentrals: nil)
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didUnsubscribeFrom characteristic: CBCharacteristic) {
        print("中心设备已取消订阅：\(characteristic.uuid)")
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveRead request: CBATTRequest) {
        if request.characteristic.uuid == ledCharacteristicUUID {
            request.value = Data([ledIsOn ? 1 : 0])
            peripheral.respond(to: request, withResult: .success)
        } else {
            peripheral.respond(to: request, withResult: .attributeNotFound)
        }
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveWrite requests: [CBATTRequest]) {
        for request in requests {
            guard let value = request.value, value.count == 1 else {
                peripheral.respond(to: request, withResult: .invalidAttributeValueLength)
                return
            }
            ledIsOn = value[0] == 1
            print(ledIsOn ? "LED 开" : "LED 关")
        }
        peripheral.respond(to: requests[0], withResult: .success)
        peripheralManager.updateValue(Data([ledIsOn ? 1 : 0]), for: ledCharacteristic, onSubscribedCentrals: nil)
    }
}
