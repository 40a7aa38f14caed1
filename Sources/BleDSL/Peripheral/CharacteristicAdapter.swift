import BleRuntime
import Foundation
import Synchronization

/// Joins a `PeripheralDevice.Characteristic` to a `DeviceCharacteristicValue` and runs closures
/// once both characteristics are known: `readyForCommand { engine in engine.executable(…) }`.
///
/// Each closure runs exactly once (FXBlueTooth re-ran all of them on every ready event), and
/// readiness resets by itself when the link drops (the characteristic finder is told by its
/// `PeripheralDevice`), so closures queued meanwhile wait for the next discovery.
public final class CharacteristicAdapter: Sendable {
    /// Typo kept from FXBlueTooth for source compatibility.
    public typealias ReadyClousre = (PeripheralDevice.DeviceCharacteristicValue) -> Void

    /// The characteristic finder.
    public let characteristic: PeripheralDevice.Characteristic
    /// The engine.
    public let characteristicValue: PeripheralDevice.DeviceCharacteristicValue

    private struct State {
        var ready = false
        var pending: [ReadyClousre] = []
    }

    private let state = LoopLock(State())

    /// Watches `characteristic` and fills `characteristicValue` as characteristics appear.
    public init(characteristic: PeripheralDevice.Characteristic, characteristicValue: PeripheralDevice.DeviceCharacteristicValue) {
        self.characteristic = characteristic
        self.characteristicValue = characteristicValue
        characteristic.observe { [weak self] write, read in self?.update(write: write, read: read) }
        characteristic.observeMissing { [weak characteristicValue] missing in characteristicValue?.missingAttribute = missing }
        update(write: characteristic.writeCharacteristic, read: characteristic.readCharacteristic)
    }

    /// Whether both characteristics are known.
    public var isReady: Bool { state.withLock { $0.ready } }

    /// Runs `closure` now if ready, else once when ready.
    public func readyForCommand(_ closure: @escaping ReadyClousre) {
        let runNow = state.withLock { state -> Bool in
            if state.ready { return true }
            state.pending.append(closure)
            return false
        }
        if runNow { closure(characteristicValue) }
    }

    /// The link dropped: wait for the next discovery before running closures again.
    public func reset() {
        state.withLock { $0.ready = false }
    }

    private func update(write: Characteristic?, read: Characteristic?) {
        characteristicValue.writeCharacteristic = write
        characteristicValue.readCharacteristic = read
        if let read, let peripheral = characteristicValue.peripheral ?? read.service?.peripheral {
            if characteristicValue.peripheral == nil { characteristicValue.peripheral = peripheral }
            if !read.isNotifying { peripheral.setNotifyValue(true, for: read) }
        }
        let toRun = state.withLock { state -> [ReadyClousre] in
            state.ready = write != nil && read != nil
            guard state.ready else { return [] }
            let pending = state.pending
            state.pending.removeAll()
            return pending
        }
        for closure in toRun { closure(characteristicValue) }
    }
}
