import BleDBus
import Foundation

/// Retrieval of known and connected peripherals, and connect/cancel on the loop.
extension CentralManager {
    // MARK: Retrieval

    @BleLoop func connectedPeripherals(_ services: [BluetoothUUID]) -> [Peripheral] {
        guard let cache, let adapterPath else { return [] }
        return cache.children(of: adapterPath, with: BlueZ.device).compactMap { path -> Peripheral? in
            guard let properties = cache.properties(path, BlueZ.device), properties[BlueZ.Device1.connected] == true else { return nil }
            if !services.isEmpty {
                let offered = Set((properties[BlueZ.Device1.uuids] ?? []).compactMap(BluetoothUUID.init))
                guard services.contains(where: offered.contains) else { return nil }
            }
            return deviceAppeared(path)
        }
    }

    @BleLoop func knownPeripherals(_ identifiers: [UUID]) -> [Peripheral] {
        if let cache, let adapterPath {
            for path in cache.children(of: adapterPath, with: BlueZ.device) { deviceAppeared(path) }
        }
        return identifiers.compactMap { id in peripheralsByAddress.values.first { $0.identifier == id } }
    }

    // MARK: Connect on the loop

    @BleLoop func startConnect(_ peripheral: Peripheral) {
        guard currentState == .poweredOn else {
            return emit { $0.centralManager(self, didFailToConnect: peripheral, error: BleError.poweredOff) }
        }
        peripheral.beginConnect()
    }

    @BleLoop func cancelConnection(_ peripheral: Peripheral) {
        peripheral.cancelConnection()
    }
}
