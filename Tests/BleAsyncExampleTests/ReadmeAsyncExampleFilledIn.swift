// The second README example with its placeholder identifier replaced by a parameter — the one
// edit its reader makes; everything else as in ReadmeAsyncExample.swift.
import BleAsync

func filledInExample(asyncManager: AsyncBleManager, identifier: String) async {
    do {
        var connectedPeripheral: CBPeripheral?

        let device = try await asyncManager.scan(
            AsyncScanRequest(serviceUUIDs: [CBUUID(string: "FFE0")])
        ) { discovered in
            if discovered.peripheral.identifier.uuidString == identifier {
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
