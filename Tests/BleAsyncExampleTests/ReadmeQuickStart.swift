// FXBlueToothAsync's README, "FXBlueToothAsync（推荐用于新项目）": the example verbatim inside a
// function (it is top-level code in the README); it had no imports, `import BleAsync` supplies
// what CoreBluetooth and FXBlueToothAsync did.
import BleAsync

func readmeQuickStart() async throws {
    // 扫描 → 连接 → 发现 → 读写
    let manager = AsyncBleManager()
    var targetPeripheral: CBPeripheral?

    let connected = try await manager.scan { discovered in
        if discovered.peripheral.name == "MyDevice" {
            targetPeripheral = discovered.peripheral
            return .connect
        }
        return .skip
    }

    let services = try await connected.discover(serviceUUIDs: nil)
    let chars = try await connected.discover(characteristicUUIDs: nil, for: services[0])
    let data = try await connected.read(for: chars[0])

    if let peripheral = targetPeripheral {
        try await manager.disconnect(peripheral)
    }
    readmeLog.append("read \(Array(data))")
}
