import BleDSL
import Foundation

/// The chat's peripheral (seed 001) with the server-side DSL: messages written by the central
/// arrive in `onMessage`; `send` notifies one, in as many packets as the link needs.
final class ChatPeripheral {
    static let service = BluetoothUUID(string: "12345678-1234-1234-1234-1234567890AB")
    static let receive = BluetoothUUID(string: "12345678-1234-1234-1234-1234567890AC")
    static let send = BluetoothUUID(string: "12345678-1234-1234-1234-1234567890AD")
    let server: PeripheralServer
    var onMessage: ((String) -> Void)?
    private let packetLength: Int?

    init(options: PeripheralManagerOptions, packetLength: Int? = nil) {
        server = PeripheralServer(options: options)
        self.packetLength = packetLength
        server.execute(commandItems: [
            .service(Self.service),
            .commandCharacteristic(Self.receive),
            .responseCharacteristic(Self.send),
            .onWrite { [weak self] data, _ in self?.onMessage?(String(decoding: data, as: UTF8.self)) },
            .advertise(Advertisement(localName: "Chat", serviceUUIDs: [Self.service])),
        ])
    }

    func send(_ message: String) {
        server.send(Data(message.utf8), length: packetLength.map { DefaultPeripheralCommandLength(length: $0) })
    }
}
