// FXBlueToothAsync's README, "Async 快速示例（独立设计）", verbatim but for the imports:
//     import FXBlueToothAsync
//     import CoreBluetooth
// became `import BleAsync`. `print` is the README's; the test reads what it printed from
// `readmeLog`, which this file's `print` shadows for that purpose only.
import BleAsync

@available(iOS 13.0, *)
func example(asyncManager: AsyncBleManager) async {
    do {
        var connectedPeripheral: CBPeripheral?

        let device = try await asyncManager.scan(
            AsyncScanRequest(serviceUUIDs: [CBUUID(string: "FFE0")])
        ) { discovered in
            if discovered.peripheral.identifier.uuidString == "XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX" {
                connectedPeripheral = discovered.peripheral
                return .connect
            }
            return .skip
        }

        let services = try await device.discover(serviceUUIDs: nil)
        print("services count: \(services.count)")

        if let peripheral = connectedPeripheral {
            try await asyncManager.disconnect(peripheral)
        }
    } catch {
        print("connect failed: \(error)")
    }
}
