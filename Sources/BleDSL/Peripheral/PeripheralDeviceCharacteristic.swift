import BleRuntime
import Foundation
import Synchronization

extension PeripheralDevice {
    // Unchecked: an open class (FXBlueTooth's users subclass it) cannot be checked Sendable, and
    // dropping Sendable or `open` would break their code; its mutable state is behind `state`.
    /// Finds a write and a read characteristic by UUID, optionally within one service.
    ///
    /// The same UUID may serve for both (FXBlueTooth's `else if` made that impossible), and a
    /// match in another service never overwrites one in the wanted service.
    open class Characteristic: DiscoverCharacteristic, @unchecked Sendable {
        /// Commands are written here.
        public let writeUUID: BluetoothUUID
        /// Responses arrive here.
        public let readUUID: BluetoothUUID
        /// Only characteristics of this service count (nil: any service, first match wins).
        public let serviceUUID: BluetoothUUID?

        private struct State {
            var write: BleCore.Characteristic?
            var read: BleCore.Characteristic?
            var observers: [(BleCore.Characteristic?, BleCore.Characteristic?) -> Void] = []
            var missingObservers: [(MissingAttribute?) -> Void] = []
            var lastError: Error?
        }

        /// Calls `observer` with what the last discovery did not find (nil once found again).
        public func observeMissing(_ observer: @escaping (MissingAttribute?) -> Void) {
            state.withLock { $0.missingObservers.append(observer) }
        }

        /// The write or the read characteristic, if discovery finished without it.
        open func discoveryDidFinish() -> MissingAttribute? {
            let (write, read) = state.withLock { ($0.write, $0.read) }
            if write == nil { return .characteristic(writeUUID, service: serviceUUID) }
            if read == nil { return .characteristic(readUUID, service: serviceUUID) }
            return nil
        }

        private let state = LoopLock(State())

        /// Looks for `writeUUID` and `readUUID` (in `serviceUUID` when given).
        public init(writeUUID: BluetoothUUID, readUUID: BluetoothUUID, serviceUUID: BluetoothUUID? = nil) {
            self.writeUUID = writeUUID
            self.readUUID = readUUID
            self.serviceUUID = serviceUUID
        }

        /// The write characteristic once found.
        public var writeCharacteristic: BleCore.Characteristic? { state.withLock { $0.write } }
        /// The read characteristic once found.
        public var readCharacteristic: BleCore.Characteristic? { state.withLock { $0.read } }
        /// The last discovery error, if any.
        public var discoveryError: Error? { state.withLock { $0.lastError } }

        /// Calls `observer` with (write, read) whenever either changes (what FXBlueTooth did with KVO).
        public func observe(_ observer: @escaping (BleCore.Characteristic?, BleCore.Characteristic?) -> Void) {
            state.withLock { $0.observers.append(observer) }
        }

        /// Picks the matching characteristics of `service`.
        open func didDiscoverCharacteristicsFor(service: Service) {
            if let serviceUUID, service.uuid != serviceUUID { return }
            let characteristics = service.characteristics ?? []
            let write = characteristics.first { $0.uuid == writeUUID }
            let read = characteristics.first { $0.uuid == readUUID }
            let (changed, observers, current) = state.withLock { state -> (Bool, [(BleCore.Characteristic?, BleCore.Characteristic?) -> Void], (BleCore.Characteristic?, BleCore.Characteristic?)) in
                var changed = false
                // A fresh discovery (after a reconnect) replaces stale objects of the same UUID.
                if let write, state.write !== write { state.write = write; changed = true }
                if let read, state.read !== read { state.read = read; changed = true }
                return (changed, state.observers, (state.write, state.read))
            }
            guard changed else { return }
            if current.0 != nil, current.1 != nil {
                let missing = state.withLock { state -> [(MissingAttribute?) -> Void] in
                    state.lastError = nil
                    return state.missingObservers
                }
                for observer in missing { observer(nil) }
            }
            for observer in observers { observer(current.0, current.1) }
        }

        /// Forgets the characteristics (observers see nil, so an adapter stops being ready);
        /// the next discovery finds them again.
        open func peripheralDidDisconnect() {
            let observers = state.withLock { state -> [(BleCore.Characteristic?, BleCore.Characteristic?) -> Void] in
                state.write = nil
                state.read = nil
                return state.observers
            }
            for observer in observers { observer(nil, nil) }
        }

        /// Remembers the error; a missing attribute also goes to the `observeMissing` observers.
        open func didFailToDiscover(error: Error) {
            let observers = state.withLock { state -> [(MissingAttribute?) -> Void] in
                state.lastError = error
                return state.missingObservers
            }
            if let missing = error as? MissingAttribute { for observer in observers { observer(missing) } }
        }
    }
}
