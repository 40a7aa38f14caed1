import BleDSL
import Foundation

/// The LED demo's peripheral (seed 000) with the server-side DSL: a central writes 01 (on) or
/// 00 (off) and the LED notifies its new state; anything else is answered with EE.
final class LEDPeripheral {
    static let service = BluetoothUUID(string: "FFE0")
    static let control = BluetoothUUID(string: "FFE1")
    static let status = BluetoothUUID(string: "FFE2")
    let server: PeripheralServer
    private(set) var isOn = false

    init(options: PeripheralManagerOptions) {
        server = PeripheralServer(options: options)
        server.execute(commandItems: [
            .service(Self.service),
            .commandCharacteristic(Self.control),
            .responseCharacteristic(Self.status),
            .commands([ServerCommand { [weak self] request, _ in
                guard let self, request.count == 1, let state = request.first, state <= 1 else { return Data([0xEE]) }
                self.isOn = state == 1
                return Data([state])
            }]),
            .advertise(Advertisement(localName: "LED", serviceUUIDs: [Self.service])),
        ])
    }
}
