import BleCore
import BleDBus
import BleDSL
import BleTestSupport
import BlueZVocabulary
import Foundation

/// Issue 12's whole flow against BleKit's `PeripheralManager`: with BleKit's DSL central and
/// both sides' pairing agents, with bleak (PyPI) as an outside central, and what the
/// advertisement carries (appearance, solicit UUIDs, `Data`) and what fits in 31 bytes.
enum PeripheralFlowScenarios {
    static let all: [IntegrationScenario] = [flowWithPairing, bleakCentral, advertisedFields]

    static let service = BluetoothUUID(string: "b1e40101-0000-4000-8000-00805f9b34fb")
    static let command = BluetoothUUID(string: "b1e40102-0000-4000-8000-00805f9b34fb")
    static let response = BluetoothUUID(string: "b1e40103-0000-4000-8000-00805f9b34fb")
    static let ticker = BluetoothUUID(string: "b1e40104-0000-4000-8000-00805f9b34fb")
    /// Command 01's answer: four packets of 16 bytes (fits the smallest ATT MTU).
    static let packets = (0..<4).map { index in Data((0..<16).map { UInt8(index * 16 + $0) }) }

    /// The served side: records the manager's events; answers command 01 with `packets`, and a
    /// subscription to the ticker with two notifications `be ef`.
    final class Server: PeripheralManagerDelegate, Sendable {
        let events: EventRecorder<String>
        let responseCharacteristic: MutableCharacteristic
        let tickerCharacteristic: MutableCharacteristic
        let service: MutableService

        @BleLoop init() {
            events = EventRecorder<String>()
            responseCharacteristic = MutableCharacteristic(type: PeripheralFlowScenarios.response, properties: [.notify], value: nil, permissions: [.readable])
            tickerCharacteristic = MutableCharacteristic(type: PeripheralFlowScenarios.ticker, properties: [.read, .notify], value: nil, permissions: [.readable])
            service = MutableService(type: PeripheralFlowScenarios.service, primary: true)
            service.characteristics = [
                MutableCharacteristic(type: PeripheralFlowScenarios.command, properties: [.write, .writeWithoutResponse], value: nil, permissions: [.writeable]),
                responseCharacteristic, tickerCharacteristic,
            ]
        }

        private func record(_ text: String) { BleLoop.assumeIsolated { events.append(text) } }
        func peripheralManagerDidUpdateState(_ peripheral: PeripheralManager) { record("state \(peripheral.state)") }
        func peripheralManager(_ peripheral: PeripheralManager, didAdd service: Service, error: Error?) { record("added \(error.map { "\($0)" } ?? "ok")") }
        func peripheralManager(_ peripheral: PeripheralManager, advertisementDidUpdate registration: AdvertisementRegistration) {
            record("advertisement \(registration.path) \(registration.state)")
        }
        func peripheralManager(_ peripheral: PeripheralManager, centralDidConnect central: Central) { record("central connected") }
        func peripheralManager(_ peripheral: PeripheralManager, centralDidDisconnect central: Central) { record("central disconnected") }
        func peripheralManager(_ peripheral: PeripheralManager, central: Central, didSubscribeTo characteristic: Characteristic) {
            record("subscribed \(characteristic.uuid == PeripheralFlowScenarios.ticker ? "ticker" : "response")")
            guard characteristic === tickerCharacteristic else { return }
            for _ in 0..<2 where !peripheral.updateValue(Data([0xBE, 0xEF]), for: tickerCharacteristic, onSubscribedCentrals: nil) { record("queue full") }
        }
        func peripheralManager(_ peripheral: PeripheralManager, central: Central, didUnsubscribeFrom characteristic: Characteristic) {
            record("unsubscribed \(characteristic.uuid == PeripheralFlowScenarios.ticker ? "ticker" : "response")")
        }
        func peripheralManager(_ peripheral: PeripheralManager, didReceiveRead request: ATTRequest) {
            request.value = Data([0x2A])
            peripheral.respond(to: request, withResult: .success)
            record("read")
        }
        func peripheralManager(_ peripheral: PeripheralManager, didReceiveWrite requests: [ATTRequest]) {
            for request in requests {
                if request.needsResponse { peripheral.respond(to: request, withResult: .success) }
                record("write \(ProbeEvent.hex(request.value ?? Data()))")
                guard request.value?.first == 0x01 else { continue }
                for packet in PeripheralFlowScenarios.packets where !peripheral.updateValue(packet, for: responseCharacteristic, onSubscribedCentrals: nil) {
                    record("queue full")
                }
            }
        }
    }

    /// A `PeripheralManager` on the peripheral adapter serving `Server`'s service, once added.
    /// It stands for another device: a bus client of its own, not the process's shared one.
    @BleLoop
    static func serve(_ context: ScenarioContext, _ server: Server) async throws -> PeripheralManager {
        let manager = PeripheralManager(delegate: server, queue: nil,
                                        options: PeripheralManagerOptions(bus: context.backend.bleBus, adapter: context.backend.peripheralAdapter,
                                                                          sharesBusConnection: false))
        context.onCleanup { manager.close(); _ = server }
        try await wait(server, "state poweredOn", context)
        manager.add(server.service)
        try await wait(server, "added ok", context)
        return manager
    }

    /// Waits for the server event `what` (exactly) and records it as a step.
    @BleLoop
    static func wait(_ server: Server, _ what: String, _ context: ScenarioContext) async throws {
        try await server.events.wait(what, timeout: context.eventDeadline) { $0.contains(what) }
        context.step("peripheral: \(what)")
    }

    /// Starts advertising and waits for bluetoothd's answer: the registration, or its refusal.
    @BleLoop
    static func advertise(_ manager: PeripheralManager, _ advertisement: Advertisement, _ server: Server,
                          _ context: ScenarioContext) async throws -> AdvertisementRegistration {
        let registration = manager.startAdvertising(advertisement)
        try await server.events.wait("advertisement answered", timeout: context.eventDeadline) { events in
            events.contains { $0.hasPrefix("advertisement \(registration.path) ") && !$0.hasSuffix(" registering") }
        }
        context.refreshOnDiscovery(manager, registration)
        return registration
    }

    // MARK: BleKit on both sides, with pairing

    /// Records the values notified on the ticker (any thread; no queue on the loop).
    final class TickerListener: PeripheralDelegate, Sendable {
        let values: EventRecorder<String>
        @BleLoop init() { values = EventRecorder<String>() }
        func peripheral(_ peripheral: Peripheral, didUpdateValueFor characteristic: Characteristic, error: Error?) {
            guard characteristic.uuid == PeripheralFlowScenarios.ticker else { return }
            values.appendFromAnyThread(ProbeEvent.hex(characteristic.value ?? Data()))
        }
        func peripheral(_ peripheral: Peripheral, didDiscoverCharacteristicsFor service: Service, error: Error?) {
            values.appendFromAnyThread(error.map { "discovery failed \($0)" } ?? "discovered")
        }
        func peripheral(_ peripheral: Peripheral, didUpdateNotificationStateFor characteristic: Characteristic, error: Error?) {
            guard characteristic.uuid == PeripheralFlowScenarios.ticker else { return }
            values.appendFromAnyThread(error.map { "notify failed \($0)" } ?? "notifying \(characteristic.isNotifying)")
        }
    }

    /// The DSL's command: 01, answered by four notifications.
    struct FourPacketCommand: PeripheralOperationCommand {
        let cmdData = Data([0x01, 0x02])
        func checkResponse(_ dataGroup: [Data], data: Data) -> CheckResponseResult {
            let packets = dataGroup + [data]
            return packets.count >= 4 ? .success(data: packets) : .goon(data: packets)
        }
        var timeOutInterval: TimeInterval { 20 }
    }

    static let flowWithPairing = IntegrationScenario(
        "peripheralManager.flowWithPairing", "PeripheralManager serves, advertises and is the default agent; the DSL's BleManager connects, gets a four-packet answer through DeviceCharacteristicValue, subscribes to a second characteristic, and pairs: both agents confirm the same passkey."
    ) { context in
        let server = Server()
        let manager = try await serve(context, server)
        let events = EventRecorder<AgentEvent>()
        let serving = AcceptingAgentDelegate(side: "serving", events: events)
        let servingAgent = BleCore.PairingAgent(peripheralManager: manager, capability: .displayYesNo, delegate: serving, makeDefault: true)
        servingAgent.start()
        context.onCleanup { servingAgent.stop(); _ = serving }
        let registration = try await advertise(manager, Advertisement(localName: "blekit-flow", serviceUUIDs: [service]), server, context)
        context.onCleanup { registration.cancel() }
        context.step("advertisement \(registration.state)")

        // BlueZ learns the device from a scan (restarted as btvirt needs); BleManager connects by identifier.
        let scout = try await context.central()
        let found = try await context.discoverPeer(scout, services: [service], name: "blekit-flow")
        let manager2 = BleManager(centralOptions: CentralManagerOptions(
            bus: context.backend.bleBus, adapter: context.backend.centralAdapter, operationTimeout: .seconds(20), connectTimeout: .seconds(30)))
        let central = manager2.centralManager.centralManager
        context.adopt(central)
        let device = PeripheralDevice()
        let pair = PeripheralDevice.Characteristic(writeUUID: command, readUUID: response, serviceUUID: service)
        let engine = PeripheralDevice.DeviceCharacteristicValue()
        let adapter = CharacteristicAdapter(characteristic: pair, characteristicValue: engine)
        device.executable(commandItems: [.discoverServices([service]), .discoverCharacteristics([pair]), .characteristicValues([engine])])
        let connected = CallbackBridge<Result<Peripheral, BleManagerError>>()
        manager2.execute(commandItems: [.connect(.uuid(found.identifier.uuidString)), .handle(device), .connectTimeout(30), .scanTimeout(30)]) { result in
            switch result {
            case .success(.connected(let peripheral)): connected.resume(.success(peripheral))
            case .success(.disconnected): break
            case .failure(let error): connected.resume(.failure(error))
            }
        }
        let peripheral = try await connected.value(within: .seconds(60), "BleManager connect").get()
        context.step("BleManager connected")
        try await wait(server, "central connected", context)
        let ready = CallbackBridge<Bool>()
        adapter.readyForCommand { _ in ready.resume(true) }
        _ = try await ready.value(within: context.eventDeadline, "engine ready")
        try await wait(server, "subscribed response", context)

        let answer = CallbackBridge<Result<[Data], Error>>()
        engine.executable(option: FourPacketCommand(), completion: { answer.resume($0) })
        let received = try await answer.value(within: context.eventDeadline, "four-packet answer").get()
        context.step("command 0102 → \(received.count) packets")
        try context.expect(received == packets, "wrong packets \(received.map(ProbeEvent.hex))")
        try await wait(server, "write 0102", context)

        let listener = TickerListener()
        peripheral.multiDelegate.addDelegate(listener)
        context.onCleanup { _ = listener }
        let gatt = try context.expectValue(peripheral.services?.first { $0.uuid == service }, "the service is resolved")
        peripheral.discoverCharacteristics([ticker], for: gatt)
        try await listener.values.wait("ticker discovered", timeout: context.eventDeadline) { $0.contains { $0.hasPrefix("discover") } }
        let tickerOnCentral = try context.expectValue(gatt.characteristics?.first { $0.uuid == ticker }, "the ticker was discovered")
        peripheral.setNotifyValue(true, for: tickerOnCentral)
        try await listener.values.wait("two ticker notifications", timeout: context.eventDeadline) { $0.filter { $0 == "beef" }.count >= 2 }
        context.step("ticker: \(listener.values.events.filter { $0 != "beef" }), 2 notifications beef")
        try await wait(server, "subscribed ticker", context)

        try await PairingScenarios.startCentralAgent(central, events: events, context: context)
        context.step("agents registered: central DisplayYesNo, serving DisplayYesNo (default, PeripheralManager's session)")
        peripheral.pair(timeout: .seconds(60)) { error in events.appendFromAnyThread(.paired(error)) }
        let outcome = try await events.first(timeout: .seconds(70), "pair() result") { if case .paired = $0 { return true }; return false }
        guard case .paired(let error) = outcome else { throw ScenarioFailure("unexpected \(outcome)") }
        context.step("pair() → \(error.map { "\($0)" } ?? "paired")")
        try context.expect(error == nil, "pair() failed: \(String(describing: error))")
        let ownRequests = events.events.compactMap { if case .request("central", let r) = $0 { return r }; return nil }
        let servingRequests = events.events.compactMap { if case .request("serving", let r) = $0 { return r }; return nil }
        guard case .confirmation(let a)? = ownRequests.first?.kind, case .confirmation(let b)? = servingRequests.first?.kind,
              ownRequests.count == 1, servingRequests.count == 1 else {
            throw ScenarioFailure("both agents should confirm once: central \(ownRequests.map(\.kind)), serving \(servingRequests.map(\.kind))")
        }
        context.step("both agents asked RequestConfirmation once")
        try context.expect(a == b, "the two sides confirmed different passkeys (\(a), \(b))")
        context.step("both confirmed the same passkey")
        try context.expect(peripheral.isPaired && peripheral.isBonded, "not Paired/Bonded after pair()")
        context.step("Paired \(peripheral.isPaired), Bonded \(peripheral.isBonded)")

        try await PairingScenarios.removeCentralsBond(central, peripheral, events: events, context: context)
        try await wait(server, "central disconnected", context)
        // The application ends before the serving side forgets the central that subscribed to
        // it, which bluetoothd 5.66 does not survive in the other order (removeServingSidesBond).
        let servingName = try context.expectValue(manager.dbusConnection?.uniqueName, "the serving manager's bus name")
        manager.close()
        try await context.waitForBusNameGone(servingName)
        context.step("served application closed")
        try await PairingScenarios.removeServingSidesBond(central, context: context)
        context.step("bonds removed on both sides")
    }

    // MARK: bleak as the outside central

    /// Where bleak's Python is: `BLEKIT_BLEAK_PYTHON`, else the venv `scripts/bleak-python`
    /// makes under `.build` (the guest of `make test-bluez` sees the host's, read-only).
    static var bleakPython: String? {
        let environment = ProcessInfo.processInfo.environment
        let candidates = [environment["BLEKIT_BLEAK_PYTHON"], FileManager.default.currentDirectoryPath + "/.build/bleak-venv/bin/python"]
        return candidates.compactMap { $0 }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    static let bleakCentral = IntegrationScenario(
        "outside.bleakCentral", "bleak (PyPI), an outside central, against BleKit's PeripheralManager: scan, connect, read, subscribe, write a command and get its four notifications, a second subscription's notifications."
    ) { context in
        guard let python = bleakPython else {
            throw BackendError.unavailable("bleak is needed: scripts/bleak-python installs it into .build/bleak-venv (make test runs it), or set BLEKIT_BLEAK_PYTHON")
        }
        let server = Server()
        let manager = try await serve(context, server)
        var advertisement = Advertisement(localName: "blekit-bleak", serviceUUIDs: [service])
        advertisement.manufacturerData = [0xFFFF: Data([0x42])]
        let registration = try await advertise(manager, advertisement, server, context)
        context.onCleanup { registration.cancel() }
        context.step("advertisement \(registration.state)")

        let script = NSTemporaryDirectory() + "blekit-bleak-central-\(getpid()).py"
        try Data(BleakCentralScript.source.utf8).write(to: URL(fileURLWithPath: script))
        context.onCleanup { try? FileManager.default.removeItem(atPath: script) }
        var environment = ProcessInfo.processInfo.environment
        for (key, value) in context.backend.peerEnvironment { environment[key] = value }
        environment["PYTHONUNBUFFERED"] = "1"
        let arguments = [python, script, context.backend.centralAdapter, "blekit-bleak", service.uuidString128.lowercased(),
                         command.uuidString128.lowercased(), response.uuidString128.lowercased(), ticker.uuidString128.lowercased()]
        // On the real daemon under load, bleak's connect (or its first notifications) sometimes
        // fails on the central's side alone (BleSim's README, "bleak's connect that disconnects
        // itself"); bleak's users retry with a fresh client (bleak-retry-connector), and so does
        // this scenario, with a fresh bleak process, at most three times, each retry said.
        var failures: [String] = []
        var output = ""
        let traceBeforeBleak = context.trace.mark
        for attempt in 1...3 {
            // bleak's scan gets the advertisement again once its discovery is on (see discoverPeer;
            // bleak starts in seconds under emulation, hence the window).
            try await context.refreshAdvertisementsWhenDiscovering(within: .seconds(60))
            let (status, printed, errors) = try await runBleak(arguments, environment: environment, context: context)
            if status == 0 {
                output = printed
                break
            }
            let reason = "bleak exited with \(status.map(String.init) ?? "a timeout"): \(errors.suffix(1000))"
            failures.append(reason)
            guard attempt < 3 else { throw ScenarioFailure(failures.enumerated().map { "attempt \($0 + 1): \($1)" }.joined(separator: "\n")) }
            print("note: outside.bleakCentral: attempt \(attempt) failed, running bleak again: \(reason.prefix(300))")
            // The server must see this attempt's link end before the next one's starts.
            try await server.events.wait("the failed attempt's link to end", timeout: context.eventDeadline) { events in
                events.filter { $0 == "central connected" }.count == events.filter { $0 == "central disconnected" }.count
            }
            // A retried bleak finds the device only if BlueZ announces it ("not found" on both
            // retries of a hogged run): it must be new to hci1 again, as it was for the first attempt.
            try await context.forgetDevicesOnTheCentralAdapter(rewindingTraceTo: traceBeforeBleak)
        }
        for line in output.split(separator: "\n") { context.step("bleak \(line)") }
        let expected = [
            #"{"step": "scan", "name": "blekit-bleak", "service_uuids": ["\#(service.uuidString128.lowercased())"], "manufacturer_data": {"65535": "42"}}"#,
            #"{"step": "read", "value": "2a"}"#,
            #"{"step": "response", "packets": 4, "value": "\#(packets.reduce(Data(), +).map { String(format: "%02x", $0) }.joined())"}"#,
            #"{"step": "ticker", "values": ["beef", "beef"]}"#,
            #"{"step": "done"}"#,
        ]
        for line in expected { try context.expect(output.contains(line), "bleak did not print \(line)") }
        for what in ["central connected", "read", "subscribed response", "write 0102", "subscribed ticker", "central disconnected"] {
            try await wait(server, what, context)
        }
    }

    /// Runs the bleak script once: its exit status (nil: timed out), its stdout (the steps) and
    /// its stderr (the reason it failed).
    @BleLoop
    static func runBleak(_ arguments: [String], environment: [String: String],
                         context: ScenarioContext) async throws -> (Int32?, String, String) {
        let log = NSTemporaryDirectory() + "blekit-bleak-central-\(getpid()).log"
        let child = try ChildProcess(arguments: arguments, environment: environment, standardErrorPath: log)
        context.onCleanup { child.stop() }
        let (status, output) = await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: child.runToCompletion(timeout: 120)) }
        }
        let errors = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        try? FileManager.default.removeItem(atPath: log)
        return (status, output, errors)
    }

    // MARK: What the advertisement carries, and what fits

    /// Device1's advertising properties, as text that does not depend on the order of entries.
    static func render(_ value: DBusValue) -> String {
        switch value {
        case .variant(let inner): return render(inner)
        case .bytes(let data): return ProbeEvent.hex(data)
        case .uint16(let number): return String(format: "0x%04x", number)
        case .byte(let number): return String(format: "0x%02x", number)
        case .dictionary(_, _, let entries): return "{" + entries.map { "\(render($0.key)): \(render($0.value))" }.sorted().joined(separator: ", ") + "}"
        default: return CentralScenarios.render(value)
        }
    }

    static let advertisedFields = IntegrationScenario(
        "advertising.fieldsAndFit", "Appearance, SolicitUUIDs and Data in a PeripheralManager advertisement as a scanning central's Device1 shows them; then which advertisements of 31 and 32 bytes bluetoothd accepts, with and without Discoverable and tx-power."
    ) { context in
        let server = Server()
        let manager = try await serve(context, server)
        var fields = Advertisement(localName: "blekit-adv", serviceUUIDs: [BluetoothUUID(UInt16(0x180F))])
        fields.solicitUUIDs = [BluetoothUUID(UInt16(0x1812))]
        fields.appearance = 0x03C1
        fields.data = [0x26: Data([0x01, 0x01, 0x00])]
        fields.manufacturerData = [0xFFFF: Data([0xAB])]
        let registration = try await advertise(manager, fields, server, context)
        context.step("advertisement with appearance, solicit UUIDs and data: \(registration.state)")
        let central = try await context.central()
        let peripheral = try await context.discoverPeer(central, services: nil, name: "blekit-adv")
        let device = try ObjectPath("/org/bluez/\(context.backend.centralAdapter)/dev_\(peripheral.address.replacingOccurrences(of: ":", with: "_"))")
        let connection = try await context.dbus()
        let reply = try await connection.call(destination: BlueZ.busName, path: device, interface: FreedesktopDBus.Properties.interface,
                                              member: FreedesktopDBus.Properties.getAll, arguments: [.string(BlueZ.Device1.interface)])
        var properties: [String: DBusValue] = [:]
        if case .dictionary(_, _, let entries)? = reply.first {
            for entry in entries { if case .string(let name) = entry.key { properties[name] = entry.value } }
        }
        for name in ["Appearance", "Icon", "UUIDs", "AdvertisingData", "AdvertisingFlags", "ManufacturerData", "ServiceData"] {
            context.step("Device1 \(name) = \(properties[name].map(render) ?? "absent")")
        }
        try context.expect(properties["Appearance"].map(render) == "0x03c1", "the central does not see the appearance")
        registration.cancel()
        try await server.events.wait("cancelled", timeout: context.eventDeadline) { $0.contains("advertisement \(registration.path) cancelled") }

        // Sizes by the rule BleSim's README states: 13 bytes of solicit UUID, appearance and
        // data, manufacturer data (4 + n), Flags (3) only with Discoverable, 3 less room with tx-power.
        func sized(_ manufacturerBytes: Int, discoverable: Bool = false, txPower: Bool = false) -> Advertisement {
            var advertisement = Advertisement(localName: "blekit-fit")
            advertisement.solicitUUIDs = [BluetoothUUID(UInt16(0x1812))]
            advertisement.appearance = 0x03C1
            advertisement.data = [0x26: Data([0x01, 0x01, 0x00])]
            advertisement.manufacturerData = [0xFFFF: Data(repeating: 0x5A, count: manufacturerBytes)]
            if discoverable { advertisement.discoverable = true }
            advertisement.includeTxPower = txPower
            return advertisement
        }
        let cases: [(String, Advertisement)] = [
            ("31 bytes", sized(14)), ("32 bytes", sized(15)),
            ("Discoverable, 28 bytes + Flags", sized(11, discoverable: true)), ("Discoverable, 29 bytes + Flags", sized(12, discoverable: true)),
            ("tx-power, 28 bytes", sized(11, txPower: true)), ("tx-power, 29 bytes", sized(12, txPower: true)),
        ]
        for (label, advertisement) in cases {
            let attempt = try await advertise(manager, advertisement, server, context)
            switch attempt.state {
            case .active: context.step("fit \(label): accepted")
            case .failed(let error): context.step("fit \(label): refused (\(error))")
            default: context.step("fit \(label): \(attempt.state)")
            }
            attempt.cancel()
            if attempt.state == .active {
                try await server.events.wait("cancelled", timeout: context.eventDeadline) { $0.contains("advertisement \(attempt.path) cancelled") }
            }
        }
    }
}

extension ScenarioContext {
    /// `value`, or a scenario failure saying `what` was expected.
    func expectValue<Value>(_ value: Value?, _ what: String) throws -> Value {
        guard let value else { throw ScenarioFailure("expected: \(what)") }
        return value
    }
}
