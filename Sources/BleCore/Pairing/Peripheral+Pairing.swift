import BleDBus
import BlueZVocabulary
import Foundation

/// Pairing and the bond's flags (`Device1.Pair`, `CancelPairing`, `Paired`, `Bonded`,
/// `Trusted`, `Blocked`). CoreBluetooth has no counterpart: on iOS pairing is system UI that
/// appears when a characteristic needs encryption.
extension Peripheral {
    /// True when BlueZ says the device is paired (keys exchanged on this or an earlier link).
    public var isPaired: Bool { LoopBridge.sync { self.deviceProperties?[BlueZ.Device1.paired] == true } }
    /// True when the keys are stored (a bond that survives a restart; 5.65+ reports it apart).
    public var isBonded: Bool {
        LoopBridge.sync {
            guard let properties = self.deviceProperties else { return false }
            return properties[BlueZ.Device1.bonded] ?? (properties[BlueZ.Device1.paired] == true)
        }
    }
    /// True when the device is trusted (may connect and use services without asking the agent).
    public var isTrusted: Bool { LoopBridge.sync { self.deviceProperties?[BlueZ.Device1.trusted] == true } }
    /// True when the device is blocked (every connection from or to it is refused).
    public var isBlocked: Bool { LoopBridge.sync { self.deviceProperties?[BlueZ.Device1.blocked] == true } }

    /// The address BlueZ reports now. After pairing with a peer that advertised a resolvable
    /// private address, this is its identity address; `address` keeps the one it was found with,
    /// and `identifier` stays the same.
    public var currentAddress: String {
        LoopBridge.sync { self.deviceProperties?[BlueZ.Device1.address] ?? self.address }
    }

    /// Pairs (and bonds) with the peripheral through bluetoothd, connecting first if needed; the
    /// agent registered on this central's connection (`PairingAgent(central:)`), else the
    /// default agent, answers bluetoothd's questions. `completion` (on the callback queue) and
    /// `peripheral(_:didCompletePairing:)` follow with nil or a typed error:
    /// `.authenticationFailed` (refused, wrong passkey, no agent, or the peer still holds an old
    /// bond), `.authenticationCanceled` (`cancelPairing`), `.authenticationRejected`,
    /// `.authenticationTimeout`, `.connectionAttemptFailed`, `.alreadyExists`, `.inProgress`,
    /// `.timeout` (no answer within `timeout`; BleKit then cancels the pairing).
    ///
    /// A pairing started while disconnected leaves the link to bluetoothd: call `connect` to use
    /// the peripheral's services afterwards.
    public func pair(timeout: Duration = .seconds(60), completion: (@Sendable (BleError?) -> Void)? = nil) {
        LoopBridge.async { self.performPair(timeout: timeout, completion: completion) }
    }

    /// Cancels a running `pair()`, which then ends with `.authenticationCanceled`.
    public func cancelPairing() {
        LoopBridge.async {
            self.session.call(self.devicePath, BlueZ.device, BlueZ.Device1.Method.cancelPairing, address: self.address) { result in
                if case .failure(let error) = result { BleLog.debug("CancelPairing \(self.address): \(error)") }
            }
        }
    }

    /// Sets `Trusted`; `completion` follows with nil or the error.
    public func setTrusted(_ trusted: Bool, completion: (@Sendable (BleError?) -> Void)? = nil) {
        LoopBridge.async { self.setDeviceFlag(BlueZ.Device1.trusted, trusted, completion) }
    }

    /// Sets `Blocked` (blocking drops a link at once); `completion` follows with nil or the error.
    public func setBlocked(_ blocked: Bool, completion: (@Sendable (BleError?) -> Void)? = nil) {
        LoopBridge.async { self.setDeviceFlag(BlueZ.Device1.blocked, blocked, completion) }
    }

    // MARK: - Loop side

    @BleLoop func performPair(timeout: Duration, completion: (@Sendable (BleError?) -> Void)?) {
        BleLog.info("pairing with \(address)")
        session.call(devicePath, BlueZ.device, BlueZ.Device1.Method.pair, timeout: timeout, address: address) { [weak self] result in
            guard let self else { return }
            let error: BleError? = if case .failure(let failure) = result { failure } else { nil }
            if case .timeout? = error {
                // bluetoothd may still be pairing: stop it, so a late success does not surprise.
                self.session.call(self.devicePath, BlueZ.device, BlueZ.Device1.Method.cancelPairing) { _ in }
            }
            BleLog.info("pairing with \(self.address): \(error.map { "\($0)" } ?? "done")")
            self.emitPairing(error, completion)
        }
    }

    @BleLoop func emitPairing(_ error: BleError?, _ completion: (@Sendable (BleError?) -> Void)?) {
        if let completion { session.callbacks.deliver { completion(error) } }
        emit { $0.peripheral(self, didCompletePairing: error) }
    }

    @BleLoop func setDeviceFlag(_ key: PropertyKey<Bool>, _ value: Bool, _ completion: (@Sendable (BleError?) -> Void)?) {
        session.call(devicePath, BlueZ.properties, FreedesktopDBus.Properties.set, [.string(BlueZ.device), .string(key.name), .variant(key.encode(value))],
                     address: address) { [weak self] result in
            guard let self else { return }
            let error: BleError? = if case .failure(let failure) = result { failure } else { nil }
            if let completion { self.session.callbacks.deliver { completion(error) } }
        }
    }

    /// Device1's `Address` changed on the same object: the identity address pairing revealed.
    @BleLoop func addressChanged(to newAddress: String) {
        BleLog.info("\(address) now reports its identity address \(newAddress)")
        session.central?.peripheralAddressChanged(self, to: newAddress)
    }
}
