import BleDBus
import BlueZVocabulary

/// `org.bluez.AgentManager1`: pairing agents by owner, as bluetoothd keeps them.
@BleLoop
final class AgentRegistry {
    struct Agent: Equatable {
        var owner: String
        var path: ObjectPath
        var capability: String
    }

    static let capabilities: Set<String> = Set([""] + BlueZ.AgentManager1.Capability.all)

    private(set) var agents: [Agent] = []
    private(set) var defaultAgent: Agent?

    var hasAgents: Bool { !agents.isEmpty }

    func removeAll(owner: String) {
        agents.removeAll { $0.owner == owner }
        if defaultAgent?.owner == owner { defaultAgent = nil }
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
                call.reply()
                // The first agent makes every adapter pairable, as observed with bluetoothd.
                if wasEmpty { for adapter in simulator.adapters { adapter.setPairable(true) } }
            },
            ExportedMethod(BlueZ.AgentManager1.Method.unregisterAgent, in: [ArgumentDescription("agent", .objectPath)]) { [weak self, weak simulator] call in
                guard let self, let simulator, case .objectPath(let path) = call.arguments[0] else { return }
                guard let index = self.agents.firstIndex(where: { $0.owner == call.sender && $0.path == path }) else {
                    return BlueZError.doesNotExist(call)
                }
                let removed = self.agents.remove(at: index)
                if self.defaultAgent == removed { self.defaultAgent = nil }
                call.reply()
                if self.agents.isEmpty { for adapter in simulator.adapters { adapter.setPairable(false) } }
            },
            ExportedMethod(BlueZ.AgentManager1.Method.requestDefaultAgent, in: [ArgumentDescription("agent", .objectPath)]) { [weak self] call in
                guard let self, case .objectPath(let path) = call.arguments[0] else { return }
                guard let agent = self.agents.first(where: { $0.owner == call.sender && $0.path == path }) else {
                    return BlueZError.doesNotExist(call)
                }
                self.defaultAgent = agent
                call.reply()
            },
        ])
    }
}
