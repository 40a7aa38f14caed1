import Foundation

/// A GATT attribute a command needs that the connected device does not have, by UUID.
public enum MissingAttribute: Error, Equatable, Sendable, CustomStringConvertible, LocalizedError {
    /// The service is not in the device's GATT tree.
    case service(BluetoothUUID)
    /// The characteristic is not in `service` (or in any service, when nil).
    case characteristic(BluetoothUUID, service: BluetoothUUID?)
    /// The descriptor is not on the characteristic.
    case descriptor(BluetoothUUID, characteristic: BluetoothUUID)

    /// Names the attribute and what to check.
    public var description: String {
        switch self {
        case .service(let uuid):
            return "The device has no service \(uuid); check the UUID (blekit gatt lists the device's tree)."
        case .characteristic(let uuid, let service):
            let place = service.map { "service \($0)" } ?? "any service"
            return "The device has no characteristic \(uuid) in \(place); check the UUID (blekit gatt lists the device's tree)."
        case .descriptor(let uuid, let characteristic):
            return "The characteristic \(characteristic) has no descriptor \(uuid)."
        }
    }

    /// `description`, so `localizedDescription` says the same.
    public var errorDescription: String? { description }
}
