import Foundation

/// One item of a server declaration, as `BleManagerCommandItem` is for the central.
public enum PeripheralServerItem {
    /// The service to serve.
    case service(BluetoothUUID, primary: Bool = true)
    /// Where centrals write commands (write, and write without response by default).
    case commandCharacteristic(BluetoothUUID, properties: CharacteristicProperties = [.write, .writeWithoutResponse],
                               permissions: AttributePermissions = [.writeable])
    /// Where responses and `send` go, as notifications (or indications with `[.indicate]`).
    case responseCharacteristic(BluetoothUUID, properties: CharacteristicProperties = [.notify],
                                permissions: AttributePermissions = [.readable])
    /// A read-only characteristic with a fixed value, served without a callback.
    case staticValue(BluetoothUUID, Data)
    /// A readable characteristic whose value is asked for at each read.
    case readable(BluetoothUUID, (Central) -> Data)
    /// The commands answered, tried in order for each written packet.
    case commands([PeripheralServerCommand])
    /// What to advertise once the service is registered.
    case advertise(Advertisement)
    /// Written packets no command claims (the chat's messages); called with the packet and the writer.
    case onWrite((Data, Central) -> Void)
    /// Centrals subscribing (true) and unsubscribing (false) to the response characteristic.
    case onSubscription((Central, Bool) -> Void)
}
