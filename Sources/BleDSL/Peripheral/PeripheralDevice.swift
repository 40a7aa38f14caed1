import BleRuntime
import Foundation
import Synchronization

// Unchecked: an open class (FXBlueTooth's users subclass it) cannot be checked Sendable, and
// dropping Sendable or `open` would break their code; its mutable state is behind `state`.
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
        /// Services whose characteristics are still being discovered.
        var pendingServices: [ObjectIdentifier] = []
        var onMissingAttribute: ((MissingAttribute) -> Void)?
    }

    /// Told when discovery finished without a service or characteristic the command needs
    /// (`BleManager` routes it to the handler of the command that connected this device).
    public var onMissingAttribute: ((MissingAttribute) -> Void)? {
        get { state.withLock { $0.onMissingAttribute } }
        set { state.withLock { $0.onMissingAttribute = newValue } }
    }

    private func reportMissing(_ missing: MissingAttribute) {
        for listener in command?.discoverCharacteristics ?? [] { listener.didFailToDiscover(error: missing) }
        onMissingAttribute?(missing)
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
            // A wanted service that is not there is named, to the listeners and to the handler.
            if case .serviceNotFound(let uuid)? = error as? BleError { return reportMissing(.service(uuid)) }
            for listener in command?.discoverCharacteristics ?? [] { listener.didFailToDiscover(error: error) }
            return
        }
        let wanted = command?.discoverServices ?? []
        let services = peripheral.services ?? []
        for uuid in wanted where !services.contains(where: { $0.uuid == uuid }) { reportMissing(.service(uuid)) }
        let chosen = services.filter { wanted.isEmpty || wanted.contains($0.uuid) }
        state.withLock { $0.pendingServices = chosen.map(ObjectIdentifier.init) }
        if chosen.isEmpty { return discoveryFinished() }
        for service in chosen { peripheral.discoverCharacteristics(nil, for: service) }
    }

    private func discoveryFinished() {
        for listener in command?.discoverCharacteristics ?? [] {
            if let missing = listener.discoveryDidFinish() { reportMissing(missing) }
        }
    }

    /// Forwards to the `DiscoverCharacteristic` listeners, or reports the error.
    open func peripheral(_ peripheral: Peripheral, didDiscoverCharacteristicsFor service: Service, error: Error?) {
        for listener in command?.discoverCharacteristics ?? [] {
            if let error { listener.didFailToDiscover(error: error) } else { listener.didDiscoverCharacteristicsFor(service: service) }
        }
        let finished = state.withLock { state -> Bool in
            guard let index = state.pendingServices.firstIndex(of: ObjectIdentifier(service)) else { return false }
            state.pendingServices.remove(at: index)
            return state.pendingServices.isEmpty
        }
        if finished { discoveryFinished() }
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
