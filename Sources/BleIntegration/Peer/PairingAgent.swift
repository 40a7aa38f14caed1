import BleDBus
import Foundation

/// A BlueZ `Agent1` with the NoInputNoOutput capability: it accepts every request and records
/// which ones bluetoothd made, for which adapter's device.
@BleLoop
final class PairingAgent {
    static let path: ObjectPath = "/org/blekit/agent"
    private let connection: Connection
    /// `RequestAuthorization hci0`, … in the order bluetoothd called.
    private(set) var calls: [String] = []

    init(connection: Connection) {
        self.connection = connection
        let device = ArgumentDescription("device", .objectPath)
        func accept(_ name: String, in arguments: [ArgumentDescription], out: [ArgumentDescription] = [],
                    answer: [DBusValue] = []) -> ExportedMethod {
            ExportedMethod(name, in: arguments, out: out) { [weak self] call in
                self?.record(name, call)
                call.reply(answer)
            }
        }
        connection.objects.register(Self.path, interfaces: [ExportedInterface("org.bluez.Agent1", methods: [
            accept("Release", in: []),
            accept("RequestPinCode", in: [device], out: [ArgumentDescription("pincode", .string)], answer: [.string("0000")]),
            accept("DisplayPinCode", in: [device, ArgumentDescription("pincode", .string)]),
            accept("RequestPasskey", in: [device], out: [ArgumentDescription("passkey", .uint32)], answer: [.uint32(0)]),
            accept("DisplayPasskey", in: [device, ArgumentDescription("passkey", .uint32), ArgumentDescription("entered", .uint16)]),
            accept("RequestConfirmation", in: [device, ArgumentDescription("passkey", .uint32)]),
            accept("RequestAuthorization", in: [device]),
            accept("AuthorizeService", in: [device, ArgumentDescription("uuid", .string)]),
            accept("Cancel", in: []),
        ])])
    }

    /// Registers with the agent manager and becomes the default agent.
    func register() async throws {
        _ = try await connection.call(destination: "org.bluez", path: "/org/bluez", interface: "org.bluez.AgentManager1",
                                      member: "RegisterAgent", arguments: [.objectPath(Self.path), .string("NoInputNoOutput")])
        _ = try await connection.call(destination: "org.bluez", path: "/org/bluez", interface: "org.bluez.AgentManager1",
                                      member: "RequestDefaultAgent", arguments: [.objectPath(Self.path)])
    }

    /// Unregisters; a daemon that forgot the agent already is fine.
    func unregister() async {
        _ = try? await connection.call(destination: "org.bluez", path: "/org/bluez", interface: "org.bluez.AgentManager1",
                                       member: "UnregisterAgent", arguments: [.objectPath(Self.path)])
        connection.objects.unregister(Self.path)
    }

    private func record(_ name: String, _ call: IncomingCall) {
        guard case .objectPath(let device)? = call.arguments.first else { return calls.append(name) }
        let adapter = device.rawValue.split(separator: "/").dropFirst(2).first.map(String.init) ?? "?"
        calls.append("\(name) \(adapter)")
    }
}
