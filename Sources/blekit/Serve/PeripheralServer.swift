import BleCore
import BleDBus
import BleSim
import BlueZVocabulary
import Foundation

/// Runs `blekit serve`: registers the services, advertises, answers requests, runs rules.
@MainActor
final class PeripheralServer {
    private let served: ServedPeripheral
    private let invocation: Invocation
    private let inbox = EventInbox<PeripheralEvent>()
    private var values: [String: Data]
    private var manager: PeripheralManager?
    private var timers: [DispatchSourceTimer] = []
    private let start = Date()
    private var agentDelegate: ServeAgent?

    /// `--agent`: the serving side's pairing agent and how it answers.
    private let agentSetup: (capability: IOCapability, acceptAll: Bool)?

    init(served: ServedPeripheral, invocation: Invocation, agent: (capability: IOCapability, acceptAll: Bool)? = nil) {
        self.served = served
        self.invocation = invocation
        agentSetup = agent
        values = served.initialValues
    }

    private func say(_ text: String) {
        invocation.out(String(format: "[%7.3f s] ", Date().timeIntervalSince(start)) + text)
    }

    func run(duration: Double?) async throws(CLIError) -> ExitCode {
        let inbox = self.inbox
        let relay = PeripheralEventRelay { inbox.post($0) }
        let manager = PeripheralManager(delegate: relay, queue: nil,
                                        options: PeripheralManagerOptions(bus: invocation.global.bus, adapter: invocation.global.adapter))
        self.manager = manager
        let signals = Termination.observe { inbox.post(.interrupted) }
        defer {
            signals.forEach { $0.cancel() }
            timers.forEach { $0.cancel() }
            manager.stopAdvertising()
            manager.removeAllServices()
            manager.close()
        }
        try await waitForPoweredOn(manager)
        for service in served.services {
            manager.add(service)
            try await expect("adding service \(Names.label(service.uuid, .service))") { event throws(CLIError) in
                guard case .added(let added, let error) = event, added === service else { return false }
                if let error { throw CLIError("bluetoothd refused service \(service.uuid): \(CentralSession.describe(error))") }
                return true
            }
        }
        let registration = manager.startAdvertising(served.advertisement)
        try await expect("advertising") { event throws(CLIError) in
            guard case .advertising(let error) = event else { return false }
            if let error { throw CLIError("advertising failed: \(CentralSession.describe(error)). Another app may hold every advertising slot (`btmgmt advinfo`).") }
            return true
        }
        _ = registration
        var agentText = ""
        var agent: PairingAgent?
        if let agentSetup {
            let delegate = ServeAgent(prompt: PairingPrompt(invocation: invocation, passkey: nil, acceptAll: agentSetup.acceptAll)) { inbox.post($0) }
            let made = PairingAgent(peripheralManager: manager, capability: agentSetup.capability, delegate: delegate, makeDefault: true)
            made.start()
            agent = made
            try await expect("registering the pairing agent") { event throws(CLIError) in
                guard case .agentRegistered(let error) = event else { return false }
                if let error { throw CLIError("bluetoothd refused the pairing agent: \(error)") }
                return true
            }
            agentText = "; pairing agent \(agentSetup.capability.rawValue) (default agent)"
            // The agent holds its delegate weakly.
            agentDelegate = delegate
        }
        defer { agent?.stop() }
        let adapterAddress = await Self.address(ofAdapter: manager.adapterName, of: manager)
        say("serving \(served.spec.name ?? "a peripheral") on \(manager.adapterName ?? "the adapter"): \(served.services.map { Names.label($0.uuid, .service) }.joined(separator: ", ")); advertising\(agentText). Ctrl-C to stop.")
        say("centrals reach it at \(manager.adapterName ?? "the adapter")'s address \(adapterAddress ?? "(unknown: `bluetoothctl list` shows it)")\(served.advertisement.localName.map { ", advertised as \($0)" } ?? "")")
        for service in served.services {
            let characteristics = (service.characteristics ?? []).map { "\(Names.label($0.uuid, .characteristic)) [\(Names.flags($0.properties).joined(separator: ", "))]" }
            say("  service \(Names.label(service.uuid, .service)): \(characteristics.joined(separator: "; "))")
        }
        startPeriodicRules()
        let end = duration.map { Date().addingTimeInterval($0) } ?? .distantFuture
        while true {
            guard let event = await inbox.next(before: end) else {
                say("stopped after \(CentralSession.format(duration ?? 0)) s")
                return .success
            }
            switch event {
            case .interrupted:
                say("stopped (interrupted)")
                return .success
            case .state(let state) where state != .poweredOn:
                invocation.fail("the adapter went \(state); serving stopped. Power it on and serve again.")
                return state == .poweredOff ? .poweredOff : .unavailable
            case .connected(let central): say("central \(central.address) connected")
            case .disconnected(let central): say("central \(central.address) disconnected")
            case .subscribed(let central, let characteristic):
                say("central \(central.address) subscribed to \(Names.label(characteristic.uuid, .characteristic))")
                runRules { if case .subscribe(let uuid) = $0 { return self.same(uuid, characteristic) } else { return false } }
            case .unsubscribed(let central, let characteristic):
                say("central \(central.address) unsubscribed from \(Names.label(characteristic.uuid, .characteristic))")
            case .read(let request): answerRead(request)
            case .write(let requests): answerWrites(requests)
            case .tick(let index): runResponses(served.spec.rules[index].responses, written: nil)
            case .agentRegistered(let error?): say("pairing agent: \(error)")
            case .agentCanceled(let address): say("pairing with \(address ?? "the central") cancelled by bluetoothd")
            default: continue
            }
        }
    }

    /// The adapter's address (Adapter1 `Address`), which centrals connect to. BlueZ may advertise
    /// with a random address when the adapter is privacy-enabled; this is the identity address.
    @BleLoop private static func address(ofAdapter name: String?, of manager: PeripheralManager) async -> String? {
        guard let name, let path = try? ObjectPath("/org/bluez/\(name)"), let connection = manager.dbusConnection else { return nil }
        guard let reply = try? await connection.call(destination: BlueZ.busName, path: path, interface: FreedesktopDBus.Properties.interface,
                                                     member: FreedesktopDBus.Properties.get,
                                                     arguments: [.string(BlueZ.Adapter1.interface), .string(BlueZ.Adapter1.address.name)]),
              case .variant(.string(let address))? = reply.first else { return nil }
        return address
    }

    private func waitForPoweredOn(_ manager: PeripheralManager) async throws(CLIError) {
        let deadline = Date().addingTimeInterval(5)
        while manager.state != .poweredOn {
            switch manager.state {
            case .poweredOff: throw CLIError("the adapter is powered off. Power it on: `bluetoothctl power on`.", .poweredOff)
            case .unauthorized: throw CLIError(manager.stateError?.description ?? "the D-Bus policy refuses access to bluetoothd", .permissionDenied)
            case .unsupported: throw CLIError(manager.stateError?.description ?? "there is no Bluetooth adapter (`bluetoothctl list`)", .unavailable)
            default: break
            }
            guard let event = await inbox.next(before: deadline) else {
                throw CLIError("bluetoothd did not answer within 5 s. Is it running? `systemctl status bluetooth`.", .unavailable)
            }
            if case .interrupted = event { throw CLIError("interrupted") }
        }
    }

    private func expect(_ what: String, _ match: (PeripheralEvent) throws(CLIError) -> Bool) async throws(CLIError) {
        let deadline = Date().addingTimeInterval(10)
        while true {
            guard let event = await inbox.next(before: deadline) else { throw CLIError("no answer from bluetoothd to \(what) within 10 s", .timeout) }
            if case .interrupted = event { throw CLIError("interrupted during \(what)") }
            if try match(event) { return }
        }
    }

    private func same(_ text: String, _ characteristic: Characteristic) -> Bool {
        BluetoothUUID(text) == characteristic.uuid
    }

    private func answerRead(_ request: ATTRequest) {
        let uuid = request.characteristic.uuid
        for rule in served.spec.rules {
            if case .read(let target) = rule.trigger, same(target, request.characteristic) {
                for response in rule.responses {
                    if case .attError(let code) = response {
                        manager?.respond(to: request, withResult: .failure(AttError(code: code)))
                        say("read \(Names.label(uuid, .characteristic)) by \(request.central.address) → ATT error 0x\(String(code, radix: 16)) (rule)")
                        return
                    }
                    if case .reply(let value) = response { values[uuid.uuidString128] = value }
                }
            }
        }
        let value = values[uuid.uuidString128] ?? Data()
        guard request.offset <= value.count else {
            manager?.respond(to: request, withResult: .invalidOffset)
            return
        }
        request.value = value.subdata(in: request.offset..<value.count)
        manager?.respond(to: request, withResult: .success)
        say("read \(Names.label(uuid, .characteristic)) by \(request.central.address) → \(Hex.spaced(value))")
    }

    private func answerWrites(_ requests: [ATTRequest]) {
        for request in requests {
            let characteristic = request.characteristic
            let data = request.value ?? Data()
            let refusal = served.spec.rules.lazy.compactMap { rule -> UInt8? in
                guard case .write(let target, let prefix) = rule.trigger, self.same(target, characteristic),
                      prefix.map({ data.starts(with: $0) }) ?? true else { return nil }
                for response in rule.responses { if case .attError(let code) = response { return code } }
                return nil
            }.first
            if let refusal {
                if request.needsResponse {
                    manager?.respond(to: request, withResult: .failure(AttError(code: refusal)))
                    say("write \(Names.label(characteristic.uuid, .characteristic)) by \(request.central.address) ← \(Hex.spaced(data)) → ATT error 0x\(String(refusal, radix: 16)) (rule)")
                } else {
                    say("write \(Names.label(characteristic.uuid, .characteristic)) by \(request.central.address) ← \(Hex.spaced(data)) (without response) → dropped (rule: ATT error 0x\(String(refusal, radix: 16)); a write without response has no answer to carry it)")
                }
                continue
            }
            var stored = values[characteristic.uuid.uuidString128] ?? Data()
            if request.offset == 0 { stored = data } else if request.offset <= stored.count { stored = stored.prefix(request.offset) + data }
            values[characteristic.uuid.uuidString128] = stored
            if request.needsResponse { manager?.respond(to: request, withResult: .success) }
            say("write \(Names.label(characteristic.uuid, .characteristic)) by \(request.central.address) ← \(Hex.spaced(data))\(request.needsResponse ? "" : " (without response)")")
            for rule in served.spec.rules {
                if case .write(let target, let prefix) = rule.trigger, same(target, characteristic), prefix.map({ data.starts(with: $0) }) ?? true {
                    runResponses(rule.responses, written: data)
                }
            }
        }
    }

    private func runRules(_ matches: (BehaviourRule.Trigger) -> Bool) {
        for rule in served.spec.rules where matches(rule.trigger) { runResponses(rule.responses, written: nil) }
    }

    private func runResponses(_ responses: [BehaviourRule.Response], written: Data?) {
        for response in responses {
            switch response {
            case .notify(let target, let value, let packets):
                guard let characteristic = served.characteristic(target) else { continue }
                let count = max(1, packets ?? 1)
                let size = (value.count + count - 1) / count
                var offset = 0
                while offset < value.count || (offset == 0 && value.isEmpty) {
                    let chunk = value.isEmpty ? Data() : value.subdata(in: offset..<min(value.count, offset + size))
                    notify(chunk, characteristic)
                    offset += max(size, 1)
                }
            case .echo(let target):
                guard let characteristic = served.characteristic(target), let written else { continue }
                notify(written, characteristic)
            case .setValue(let target, let value):
                guard let characteristic = served.characteristic(target) else { continue }
                values[characteristic.uuid.uuidString128] = value
            case .reply, .attError:
                continue
            case .disconnect:
                say("(rule: disconnect — a peripheral served by bluetoothd cannot drop the link itself; ignored)")
            }
        }
    }

    private func notify(_ value: Data, _ characteristic: MutableCharacteristic) {
        values[characteristic.uuid.uuidString128] = value
        guard characteristic.subscribedCentrals?.isEmpty == false else { return }
        let sent = manager?.updateValue(value, for: characteristic, onSubscribedCentrals: nil) ?? false
        say("notify \(Names.label(characteristic.uuid, .characteristic)) → \(Hex.spaced(value))\(sent ? "" : " (queue full, dropped)")")
    }

    private func startPeriodicRules() {
        for (index, rule) in served.spec.rules.enumerated() {
            guard case .periodic(let milliseconds) = rule.trigger, milliseconds >= 10 else { continue }
            let timer = DispatchSource.makeTimerSource(queue: .main)
            let inbox = self.inbox
            timer.schedule(deadline: .now() + .milliseconds(Int(milliseconds)), repeating: .milliseconds(Int(milliseconds)))
            timer.setEventHandler { inbox.post(.tick(index)) }
            timer.resume()
            timers.append(timer)
        }
    }
}
