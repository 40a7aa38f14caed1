import BleDBus
import Foundation

/// Bonds on the central's adapter: which devices are paired, and forgetting them.
extension CentralManager {
    /// The adapter's paired (bonded) devices, as `Peripheral`s (made on first sight).
    public func bondedPeripherals() -> [Peripheral] {
        LoopBridge.sync { self.pairedDevices() }
    }

    /// Forgets the device: `Adapter1.RemoveDevice` disconnects it, deletes its bond and removes
    /// its object (a new `pair()` needs a new discovery). `completion` follows with nil or the
    /// error. The peer may keep its own bond, and then refuses the next pairing
    /// (`.authenticationFailed`) until it is removed there too.
    public func removeBond(_ peripheral: Peripheral, completion: (@Sendable (BleError?) -> Void)? = nil) {
        LoopBridge.async { self.removeDevice(peripheral, completion) }
    }

    // MARK: - Loop side

    @BleLoop func pairedDevices() -> [Peripheral] {
        guard let cache, let adapterPath else { return [] }
        var result: [Peripheral] = []
        for path in cache.children(of: adapterPath, with: BlueZ.device) where path.parent == adapterPath {
            guard let properties = cache.properties(path, BlueZ.device),
                  properties[BlueZ.Device1.bonded] ?? properties[BlueZ.Device1.paired] ?? false else { continue }
            if let peripheral = deviceAppeared(path) ?? peripheral(at: path) { result.append(peripheral) }
        }
        return result.sorted { $0.address < $1.address }
    }

    @BleLoop func removeDevice(_ peripheral: Peripheral, _ completion: (@Sendable (BleError?) -> Void)?) {
        guard let adapterPath else {
            if let completion { callbacks.deliver { completion(.poweredOff) } }
            return
        }
        let path = peripheral.devicePath
        callBlueZ(adapterPath, BlueZ.adapter, BlueZ.Adapter1.Method.removeDevice, [.objectPath(path)],
                  address: peripheral.address) { [weak self] result in
            guard let self else { return }
            let error: BleError? = if case .failure(let failure) = result { failure } else { nil }
            let finish: @BleLoop () -> Void = { [weak self] in
                if let completion, let self { self.callbacks.deliver { completion(error) } }
            }
            // Done when the object is gone, so `bondedPeripherals()` no longer lists it.
            if error == nil, self.cache?.properties(path, BlueZ.device) != nil {
                self.removalWaiters[path, default: []].append(finish)
            } else {
                finish()
            }
        }
    }

    @BleLoop func deviceObjectRemoved(_ path: ObjectPath) {
        guard let waiting = removalWaiters.removeValue(forKey: path) else { return }
        for body in waiting { body() }
    }

    /// A device object kept its path but changed its address (identity resolved): the
    /// peripheral answers to both, so lookups and `removed` events by either address find it.
    @BleLoop func peripheralAddressChanged(_ peripheral: Peripheral, to newAddress: String) {
        peripheralsByAddress[newAddress] = peripheral
    }
}
