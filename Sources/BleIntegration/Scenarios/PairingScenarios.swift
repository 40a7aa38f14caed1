import BleCore
import BleDBus
import Foundation

/// Pairing the central with the peer through an agent (LE Secure Connections, Just Works).
enum PairingScenarios {
    static let all: [IntegrationScenario] = [justWorks]

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
        let paired = try await context.call("Pair", device, "org.bluez.Device1", "Pair", timeout: .seconds(60))
        try context.expect((try? paired.get()) != nil, "Pair failed")
        for name in ["Paired", "Bonded", "Trusted"] {
            let value = try await connection.call(destination: "org.bluez", path: device, interface: "org.freedesktop.DBus.Properties",
                                                  member: "Get", arguments: [.string("org.bluez.Device1"), .string(name)])
            context.step("\(name) = \(value.first.map(CentralScenarios.render) ?? "absent")")
        }
        context.step("agent calls \(agent.calls)")
        try await context.call("Pair again", device, "org.bluez.Device1", "Pair", timeout: .seconds(30))
        // 5.66 may drop the link after refusing the second Pair (it tries BR/EDR for an LE
        // bond), sooner or later: end it ourselves so both outcomes converge.
        let down = PropertyWait(connection: connection, path: device, interface: "org.bluez.Device1", name: "Connected", value: .boolean(false))
        try down.arm()
        _ = try? await connection.call(destination: "org.bluez", path: device, interface: "org.bluez.Device1", member: "Disconnect")
        try await down.wait(deadline: context.eventDeadline)
        context.step("disconnected")
        _ = central
        let adapter = try ObjectPath("/org/bluez/\(context.backend.centralAdapter)")
        try await context.call("RemoveDevice", adapter, "org.bluez.Adapter1", "RemoveDevice", [.objectPath(device)])
    }
}
