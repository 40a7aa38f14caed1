import BleDBus
import BlueZVocabulary
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
        connection.objects.register(Self.path, interfaces: [ExportedInterface(BlueZ.Agent1.interface, methods: [
            accept(BlueZ.Agent1.Method.release, in: []),
            accept(BlueZ.Agent1.Method.requestPinCode, in: [device], out: [ArgumentDescription("pincode", .string)], answer: [.string("0000")]),
            accept(BlueZ.Agent1.Method.displayPinCode, in: [device, ArgumentDescription("pincode", .string)]),
            accept(BlueZ.Agent1.Method.requestPasskey, in: [device], out: [ArgumentDescription("passkey", .uint32)], answer: [.uint32(0)]),
            accept(BlueZ.Agent1.Method.displayPasskey, in: [device, ArgumentDescription("passkey", .uint32), ArgumentDescription("entered", .uint16)]),
            accept(BlueZ.Agent1.Method.requestConfirmation, in: [device, ArgumentDescription("passkey", .uint32)]),
            accept(BlueZ.Agent1.Method.requestAuthorization, in: [device]),
            accept(BlueZ.Agent1.Method.authorizeService, in: [device, ArgumentDescription("uuid", .string)]),
            accept(BlueZ.Agent1.Method.cancel, in: []),
        ])])
    }

    /// Registers with the agent manager and becomes the default agent.
    func register() async throws {
        _ = try await connection.call(destination: BlueZ.busName, path: BlueZ.rootPath, interface: BlueZ.AgentManager1.interface,
                                      member: BlueZ.AgentManager1.Method.registerAgent, arguments: [.objectPath(Self.path), .string(BlueZ.AgentManager1.Capability.noInputNoOutput)])
        _ = try await connection.call(destination: BlueZ.busName, path: BlueZ.rootPath, interface: BlueZ.AgentManager1.interface,
                                      member: BlueZ.AgentManager1.Method.requestDefaultAgent, arguments: [.objectPath(Self.path)])
    }

    /// Unregisters; a daemon that forgot the agent already is fine.
    func unregister() async {
        _ = try? await connection.call(destination: BlueZ.busName, path: BlueZ.rootPath, interface: BlueZ.AgentManager1.interface,
                                       member: BlueZ.AgentManager1.Method.unregisterAgent, arguments: [.objectPath(Self.path)])
        connection.objects.unregister(Self.path)
    }

    private func record(_ name: String, _ call: IncomingCall) {
        guard case .objectPath(let device)? = call.arguments.first else { return calls.append(name) }
        let adapter = device.rawValue.split(separator: "/").dropFirst(2).first.map(String.init) ?? "?"
        calls.append("\(name) \(adapter)")
    }
}
