import BleRuntime
import Foundation
import Synchronization

/// The peripheral-side coordinator of FXBlueTooth: discovers services and characteristics and
/// forwards characteristic events to its listeners.
///
/// Unlike FXBlueTooth, discovery starts by itself as soon as both a peripheral and a command are
/// set (in either order), again after every reconnection, and discovery errors are reported to
/// the `DiscoverCharacteristic` listeners instead of being ignored.
open class PeripheralDevice: PeripheralHandler, PeripheralDelegate, @unchecked Sendable {
    private struct State {
        var peripheral: Peripheral?
        var command: PeripheralCommand?
    }

    private let state = LoopLock(State())

    /// An idle device.
    public init() {}

    /// The connected peripheral; setting it attaches this device to its multicast delegate and
    /// starts discovery when a command is set.
    open var peripheral: Peripheral? {
        get { state.withLock { $0.peripheral } }
        set {
            let old = state.withLock { state -> Peripheral? in
                let old = state.peripheral
                state.peripheral = newValue
                return old
            }
            if let old, old !== newValue { old.multiDelegate.removeDelegate(self) }
            guard let newValue else { return }
            newValue.multiDelegate.addDelegate(self)
            attachEngines(to: newValue)
            startDiscovery()
        }
    }

    /// Stores `commandItems` and starts discovery if the peripheral is attached.
    open func executable(commandItems: [PeripheralCommandItem]? = nil) {
        executable(command: PeripheralCommand(commandItems))
    }

    /// Stores `command` and starts discovery if the peripheral is attached.
    open func executable(command: PeripheralCommand? = nil) {
        state.withLock { $0.command = command ?? PeripheralCommand() }
        if let peripheral { attachEngines(to: peripheral) }
        startDiscovery()
    }

    private var command: PeripheralCommand? { state.withLock { $0.command } }

    /// Engines registered without a peripheral get this one (FXBlueTooth left it to the app).
    private func attachEngines(to peripheral: Peripheral) {
        for value in command?.characteristicValues ?? [] {
            if let engine = value as? DeviceCharacteristicValue, engine.peripheral == nil { engine.peripheral = peripheral }
        }
    }

    private func startDiscovery() {
        guard let peripheral, let command else { return }
        let services = command.discoverServices.flatMap { $0.isEmpty ? nil : $0 }
        peripheral.discoverServices(services)
    }

    /// Forwarded by `BleManager` when the link drops: engines fail their commands at once.
    open func peripheralDidDisconnect(error: Error?) {
        for value in command?.characteristicValues ?? [] { value.peripheralDidDisconnect(error: error) }
        for listener in command?.discoverCharacteristics ?? [] { listener.peripheralDidDisconnect() }
    }

    // MARK: PeripheralDelegate

    /// Discovers the characteristics of every discovered service, or reports the error.
    open func peripheral(_ peripheral: Peripheral, didDiscoverServices error: Error?) {
        if let error {
            for listener in command?.discoverCharacteristics ?? [] { listener.didFailToDiscover(error: error) }
            return
        }
        let wanted = Set(command?.discoverServices ?? [])
        for service in peripheral.services ?? [] where wanted.isEmpty || wanted.contains(service.uuid) {
            peripheral.discoverCharacteristics(nil, for: service)
        }
    }

    /// Forwards to the `DiscoverCharacteristic` listeners, or reports the error.
    open func peripheral(_ peripheral: Peripheral, didDiscoverCharacteristicsFor service: Service, error: Error?) {
        for listener in command?.discoverCharacteristics ?? [] {
            if let error { listener.didFailToDiscover(error: error) } else { listener.didDiscoverCharacteristicsFor(service: service) }
        }
    }

    /// Forwards to the `CharacteristicValue` listeners.
    open func peripheral(_ peripheral: Peripheral, didWriteValueFor characteristic: BleCore.Characteristic, error: Error?) {
        for value in command?.characteristicValues ?? [] { value.peripheral(peripheral, didWriteValueFor: characteristic, error: error) }
    }

    /// Forwards to the `CharacteristicValue` listeners.
    open func peripheral(_ peripheral: Peripheral, didUpdateValueFor characteristic: BleCore.Characteristic, error: Error?) {
        for value in command?.characteristicValues ?? [] { value.peripheral(peripheral, didUpdateValueFor: characteristic, error: error) }
    }

    /// Forwards to the `CharacteristicValue` listeners.
    open func peripheral(_ peripheral: Peripheral, didUpdateNotificationStateFor characteristic: BleCore.Characteristic, error: Error?) {
        for value in command?.characteristicValues ?? [] {
            value.peripheral(peripheral, didUpdateNotificationStateFor: characteristic, error: error)
        }
    }

    /// The services changed: discover again.
    open func peripheral(_ peripheral: Peripheral, didModifyServices invalidatedServices: [Service]) {
        startDiscovery()
    }
}
