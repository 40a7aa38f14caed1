import BleDBus
import BlueZVocabulary

/// `org.bluez.AgentManager1`: pairing agents by owner, as bluetoothd keeps them.
///
/// bluetoothd 5.66 keeps one agent per client and a queue of default agents: the first agent to
/// register joins it (observed: a lone agent, never made default, still got the responder's
/// request), `RequestDefaultAgent` puts an agent at its head, and an agent that goes leaves it.
/// A `Pair` uses its caller's agent, else the default one; requests for pairings the daemon did
/// not start (the responder side) go to the default agent.
@BleLoop
final class AgentRegistry {
    struct Agent: Equatable {
        var owner: String
        var path: ObjectPath
        var capability: String
    }

    static let capabilities: Set<String> = Set([""] + BlueZ.AgentManager1.Capability.all)

    private(set) var agents: [Agent] = []
    /// Owners, most recent default first.
    private var defaultOwners: [String] = []

    var hasAgents: Bool { !agents.isEmpty }

    /// The agent pairing requests without a caller go to.
    var defaultAgent: Agent? {
        for owner in defaultOwners { if let agent = agents.first(where: { $0.owner == owner }) { return agent } }
        return nil
    }

    /// The agent a `Pair` from `caller` uses: its own, else the default.
    func agent(forCaller caller: String) -> Agent? {
        agents.first { $0.owner == caller } ?? defaultAgent
    }

    func removeAll(owner: String) {
        agents.removeAll { $0.owner == owner }
        defaultOwners.removeAll { $0 == owner }
    }

    /// The daemon stops: every agent is forgotten. A clean stop tells each with `Release`, as
    /// bluetoothd's exit does for agents still registered.
    func releaseAll(on connection: Connection?, notify: Bool) {
        if notify, let connection {
            for agent in agents {
                var message = DBusMessage.methodCall(destination: agent.owner, path: agent.path, interface: BlueZ.Agent1.interface,
                                                     member: BlueZ.Agent1.Method.release)
                message.noReplyExpected = true
                _ = try? connection.send(message)
            }
        }
        agents.removeAll()
        defaultOwners.removeAll()
    }

    func interface(simulator: Simulator) -> ExportedInterface {
        ExportedInterface(BlueZ.AgentManager1.interface, methods: [
            ExportedMethod(BlueZ.AgentManager1.Method.registerAgent, in: [ArgumentDescription("agent", .objectPath), ArgumentDescription("capability", .string)]) {
                [weak self, weak simulator] call in
                guard let self, let simulator, case .objectPath(let path) = call.arguments[0],
                      case .string(let capability) = call.arguments[1] else { return }
                guard AgentRegistry.capabilities.contains(capability) else { return BlueZError.invalidArguments(call) }
                guard !self.agents.contains(where: { $0.owner == call.sender }) else { return BlueZError.alreadyExists(call) }
                let wasEmpty = self.agents.isEmpty
                self.agents.append(Agent(owner: call.sender, path: path, capability: capability.isEmpty ? BlueZ.AgentManager1.Capability.keyboardDisplay : capability))
                if self.defaultAgent == nil { self.defaultOwners.append(call.sender) }
                call.reply()
                // The first agent makes every adapter pairable, as observed with bluetoothd.
                if wasEmpty { for adapter in simulator.adapters { adapter.setPairable(true) } }
            },
            ExportedMethod(BlueZ.AgentManager1.Method.unregisterAgent, in: [ArgumentDescription("agent", .objectPath)]) { [weak self, weak simulator] call in
                guard let self, let simulator, case .objectPath(let path) = call.arguments[0] else { return }
                guard self.agents.contains(where: { $0.owner == call.sender && $0.path == path }) else {
                    return BlueZError.doesNotExist(call)
                }
                self.removeAll(owner: call.sender)
                call.reply()
                if self.agents.isEmpty { for adapter in simulator.adapters { adapter.setPairable(false) } }
            },
            ExportedMethod(BlueZ.AgentManager1.Method.requestDefaultAgent, in: [ArgumentDescription("agent", .objectPath)]) { [weak self] call in
                guard let self, case .objectPath(let path) = call.arguments[0] else { return }
                guard self.agents.contains(where: { $0.owner == call.sender && $0.path == path }) else {
                    return BlueZError.doesNotExist(call)
                }
                self.defaultOwners.removeAll { $0 == call.sender }
                self.defaultOwners.insert(call.sender, at: 0)
                call.reply()
            },
        ])
    }
}
