import BleCore
import BleDBus
import BlueZVocabulary
import Foundation

/// Pairing the central with the peer through an agent (LE Secure Connections, Just Works).
enum PairingScenarios {
    static let all: [IntegrationScenario] = [justWorks, bothAgents]

    static let justWorks = IntegrationScenario(
        "pairing.justWorks", "A NoInputNoOutput agent, Pair over an LE link, Paired and Bonded, a second Pair refused, and the bond removed."
    ) { context in
        _ = try await context.peer()
        let connection = try await context.dbus()
        let agent = PairingAgent(connection: connection)
        try await agent.register()
        context.onCleanup { await agent.unregister() }
        context.step("agent registered")
        let central = try await context.central()
        let peripheral = try await context.discoverPeer(central)
        try context.expect(try await context.connect(central, peripheral) == nil, "connect failed")
        let device = try ObjectPath("/org/bluez/\(context.backend.centralAdapter)/dev_\(peripheral.address.replacingOccurrences(of: ":", with: "_"))")
        let paired = try await context.call("Pair", device, BlueZ.Device1.interface, BlueZ.Device1.Method.pair, timeout: .seconds(60))
        try context.expect((try? paired.get()) != nil, "Pair failed")
        for name in ["Paired", "Bonded", "Trusted"] {
            let value = try await connection.call(destination: BlueZ.busName, path: device, interface: FreedesktopDBus.Properties.interface,
                                                  member: FreedesktopDBus.Properties.get, arguments: [.string(BlueZ.Device1.interface), .string(name)])
            context.step("\(name) = \(value.first.map(CentralScenarios.render) ?? "absent")")
        }
        context.step("agent calls \(agent.calls)")
        try await context.call("Pair again", device, BlueZ.Device1.interface, BlueZ.Device1.Method.pair, timeout: .seconds(30))
        // 5.66 may drop the link after refusing the second Pair (it tries BR/EDR for an LE
        // bond), sooner or later: end it ourselves so both outcomes converge.
        let down = PropertyWait(connection: connection, path: device, interface: BlueZ.Device1.interface, name: BlueZ.Device1.connected.name, value: .boolean(false))
        try down.arm()
        _ = try? await connection.call(destination: BlueZ.busName, path: device, interface: BlueZ.Device1.interface, member: BlueZ.Device1.Method.disconnect)
        try await down.wait(deadline: context.eventDeadline)
        context.step("disconnected")
        _ = central
        let adapter = try BlueZ.rootPath.appending(context.backend.centralAdapter)
        try await context.call("RemoveDevice", adapter, BlueZ.Adapter1.interface, BlueZ.Adapter1.Method.removeDevice, [.objectPath(device)])
    }
}
