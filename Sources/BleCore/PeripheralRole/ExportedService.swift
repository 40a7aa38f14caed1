import BleDBus
import Foundation

/// Where the GATT application is with bluetoothd.
struct ApplicationRegistration {
    /// bluetoothd has the application.
    var registered = false
    /// A Register or Unregister call is on its way.
    var inFlight = false
    /// The services changed while a call was on its way: register again after it.
    var dirty = false
    /// Services whose `didAdd` is still due.
    var pendingAdds: [MutableService] = []
}

/// A service as exported on the bus: its object path and its characteristics' records.
@BleLoop
final class ExportedService {
    let service: MutableService
    let path: ObjectPath
    var characteristics: [ExportedCharacteristic] = []
    var descriptors: [(descriptor: MutableDescriptor, path: ObjectPath, characteristic: ObjectPath)] = []

    init(service: MutableService, path: ObjectPath) {
        self.service = service
        self.path = path
    }

    func closeSockets() {
        for characteristic in characteristics { characteristic.closeSockets() }
    }

    func daemonGone() {
        for characteristic in characteristics {
            characteristic.closeSockets()
            characteristic.notifying = false
            characteristic.subscribers = []
            characteristic.awaitingConfirmation = false
        }
    }
}

/// A characteristic as exported: its path and what bluetoothd has set up for it.
@BleLoop
final class ExportedCharacteristic {
    let characteristic: MutableCharacteristic
    let path: ObjectPath
    /// bluetoothd asked for notifications (StartNotify or AcquireNotify).
    var notifying = false
    var subscribers: [Central] = [] {
        didSet { characteristic.setSubscribers(subscribers) }
    }
    /// The last value sent (the `Value` property).
    var lastValue = Data()
    /// Our end of an `AcquireNotify` socket.
    var notifySocket: SeqPacketSocket?
    /// Our end of an `AcquireWrite` socket.
    var writeSocket: SeqPacketSocket?
    /// An indication went out and its `Confirm` has not come back.
    var awaitingConfirmation = false
    var confirmationDeadline: LoopTimer?

    init(characteristic: MutableCharacteristic, path: ObjectPath) {
        self.characteristic = characteristic
        self.path = path
        lastValue = characteristic.value ?? Data()
    }

    /// Indicates rather than notifies: bluetoothd indicates when only `indicate` is set.
    var indicates: Bool {
        characteristic.properties.contains(.indicate) && !characteristic.properties.contains(.notify)
    }

    func closeSockets() {
        notifySocket?.close()
        notifySocket = nil
        writeSocket?.close()
        writeSocket = nil
    }
}
