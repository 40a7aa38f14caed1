// Seed 001's peripheral (../shared/seeds/001_20ae1b5e85ec638f.txt, "外设端配置服务和广播的基础代码示例"),
// exactly as the seed has it but for its import: `import CoreBluetooth` became `import BleCore`.
import BleCore

class PeripheralManager: NSObject, CBPeripheralManagerDelegate {
    private var peripheralManager: CBPeripheralManager!
    // 聊天服务的UUID，可自定义生成
    private let chatServiceUUID = CBUUID(string: "12345678-1234-1234-1234-1234567890AB")
    // 接收消息特征的UUID，支持写入
    private let receiveCharacteristicUUID = CBUUID(string: "12345678-1234-1234-1234-1234567890AC")
    // 发送消息特征的UUID，支持通知
    private let sendCharacteristicUUID = CBUUID(string: "12345678-1234-1234-1234-1234567890AD")
    private var sendCharacteristic: CBMutableCharacteristic?
    
    override init() {
        super.init()
        peripheralManager = CBPeripheralManager(delegate: self, queue: nil)
    }
    
    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        if peripheral.state == .poweredOn {
            // 蓝牙开启，配置服务和特征
            let service = CBMutableService(type: chatServiceUUID, primary: true)
            let receiveChar = CBMutableCharacteristic(type: receiveCharacteristicUUID, properties: [.write, .writeWithoutResponse], value: nil, permissions: [.writeable])
            sendCharacteristic = CBMutableCharacteristic(type: sendCharacteristicUUID, properties: [.notify], value: nil, permissions: [.readable])
            service.characteristics = [receiveChar, sendCharacteristic!]
            peripheralManager.add(service)
        }
    }
    
    func peripheralManager(_ peripheral: CBPeripheralManager, didAdd service: CBService, error: Error?) {
        if error == nil {
            // 服务添加成功，开始广播
            peripheralManager.startAdvertising([CBAdvertisementDataServiceUUIDsKey: [chatServiceUUID]])
        }
    }
    
    // 接收中央设备写入的消息
    func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveWrite requests: [CBATTRequest]) {
        for request in requests {
            if let value = request.value, let message = String(data: value, encoding: .utf8) {
                print("收到消息：\(message)")
            }
            peripheralManager.respond(to: request, withResult: .success)
        }
    }
    
    // 向中央设备发送消息
    func sendMessage(_ message: String) {
        guard let data = message.data(using: .utf8), let characteristic = sendCharacteristic else { return }
        peripheralManager.updateValue(data, for: characteristic, onSubscribedCentrals: nil)
    }
}
