import BleCore
import Foundation

/// A BLE → MQTT gateway speaking OpenMQTTGateway's and Theengs Gateway's formats: it scans,
/// publishes each advertisement on `home/<gateway>/BTtoMQTT/<MAC>` (and raw on `…/undecoded`),
/// keeps a retained `home/<gateway>/LWT`, announces decoded devices to Home Assistant, takes
/// commands on `home/<gateway>/commands/MQTTtoBT/config`, and in a fleet takes the commands
/// for the devices it hears best.
@BleLoop
public final class Gateway: @preconcurrency CentralManagerDelegate {
    /// Counters for tools, tests and benchmarks.
    public struct Statistics: Sendable, Equatable {
        /// Advertisements BleCore reported.
        public var heard = 0
        /// Advertisement messages published: confirmed by libmosquitto, written whole to the
        /// broker's socket (QoS 0) or acknowledged by the broker (QoS 1 and 2). Messages still
        /// buffered, dropped or unacknowledged are not counted.
        public var published = 0
        /// Advertisements left out by the lists, the minimum RSSI, the interval or `onlySensors`.
        public var filtered = 0
        /// Raw frames published on `…/undecoded` (confirmed, as `published`).
        public var undecoded = 0
        /// Commands received.
        public var commands = 0
        /// GATT requests carried out successfully.
        public var gattSucceeded = 0
        /// GATT requests that failed.
        public var gattFailed = 0
    }

    /// The configuration, as changed by `MQTTtoBT/config` commands.
    public private(set) var configuration: GatewayConfiguration
    /// The MQTT connection.
    public let mqtt: MQTTClient
    /// The central that scans and connects.
    public let central: CentralManager
    /// The counters.
    public private(set) var statistics = Statistics()
    /// Called after each GATT request with its response message (tests and tools).
    public var onGattResponse: (@BleLoop (JSONValue) -> Void)?
    /// Called with each line about the broker's reachability, as written to standard error (tests and tools).
    public var onNotice: (@BleLoop (String) -> Void)?

    /// The largest command payload read; larger ones are refused unread (a command is a few hundred bytes).
    public static let maximumCommandBytes = 64 * 1024
    /// How long the gateway waits for its first broker connection before it says the broker is unreachable.
    public static let unreachableWarningDelay: Duration = .seconds(3)
    private static let advertisementTag: UInt8 = 1
    private static let undecodedTag: UInt8 = 2

    private var peripherals: [String: Peripheral] = [:]
    private var lastPublished: [String: ContinuousClock.Instant] = [:]
    private var topics: [String: String] = [:]
    private var discovery = HomeAssistantDiscovery()
    private var fleet: FleetCoordinator?
    private var queue: [GattRequest] = []
    private var running: GattAction?
    private var stopped = false
    private let clock = ContinuousClock()
    private var outage = BrokerOutageReport()
    private var unreachableTimer: LoopTimer?

    /// A gateway for `configuration`; `start()` connects to the broker and to bluetoothd.
    public init(configuration: GatewayConfiguration) throws {
        let levels: [(String, String?)] = [("name", configuration.name), ("baseTopic", configuration.baseTopic),
                                           ("fleet", configuration.fleet), ("discoveryPrefix", configuration.discoveryPrefix)]
        for case let (setting, value?) in levels {
            if let problem = TopicLevel.problem(value) { throw CommandError.invalidField(path: setting, reason: "'\(value.prefix(64))' \(problem)") }
        }
        // Checked here too, for specs made in code: a bad one would trap at its first command.
        for (index, spec) in configuration.operationCommands.enumerated() {
            try spec.validated(at: "operationCommands[\(index)]")
        }
        var configuration = configuration
        configuration.mqtt.will = MQTTOptions.Will(topic: configuration.availabilityTopic, payload: "offline",
                                                   qos: configuration.qos.availability, retain: true)
        self.configuration = configuration
        mqtt = try MQTTClient(options: configuration.mqtt)
        central = CentralManager(delegate: nil, queue: nil, options: configuration.central)
        if let name = configuration.fleet {
            fleet = FleetCoordinator(fleet: name, gateway: configuration.name, baseTopic: configuration.baseTopic,
                                     lifetime: configuration.fleetPresenceLifetime)
        }
        if !configuration.activeScan {
            GatewayLog.warning("passive scanning needs BlueZ's AdvertisementMonitor API (experimental in 5.66); scanning actively")
        }
    }

    /// Starts: broker connection (retrying), subscriptions, then scanning once the adapter is on.
    public func start() {
        mqtt.onConnect = { [weak self] in self?.brokerConnected() }
        mqtt.onDisconnect = { [weak self] reason in self?.brokerLost(reason) }
        mqtt.onMessage = { [weak self] message in self?.received(message) }
        mqtt.onPublished = { [weak self] tag in self?.confirmed(tag) }
        mqtt.subscribe(configuration.commandTopic, qos: configuration.qos.commands)
        if let fleet, let topic = configuration.fleetCommandTopic {
            mqtt.subscribe(topic, qos: configuration.qos.commands)
            mqtt.subscribe(fleet.presencePattern, qos: configuration.qos.fleet)
            mqtt.subscribe(fleet.availabilityPattern, qos: configuration.qos.fleet)
        }
        mqtt.start()
        unreachableTimer = LoopTimer.scheduled(after: Self.unreachableWarningDelay) { [weak self] in
            guard let self, !self.stopped, self.mqtt.state != .connected else { return }
            self.say(self.outage.unreachable(self.brokerName, reason: self.mqtt.lastError, self.tally, now: self.clock.now))
        }
        central.delegate = self
        if central.state == .poweredOn { startScan() }
    }

    /// Stops cleanly: `offline` on the LWT topic, DISCONNECT, scan stopped.
    public func stop() {
        guard !stopped else { return }
        stopped = true
        unreachableTimer?.cancel()
        mqtt.publish(configuration.availabilityTopic, "offline", qos: configuration.qos.availability, retain: true)
        mqtt.close()
        central.stopScan()
        central.close()
    }

    /// Stops as a killed process would: the connection dies without DISCONNECT, so the broker
    /// publishes the will (`offline`) and the fleet fails over.
    public func crash() {
        guard !stopped else { return }
        stopped = true
        unreachableTimer?.cancel()
        mqtt.dropConnectionWithoutDisconnect()
        central.stopScan()
        central.close()
    }

    private var brokerName: String { "\(configuration.mqtt.host):\(configuration.mqtt.port)" }

    private var tally: BrokerOutageReport.Tally {
        .init(published: mqtt.publishedMessages, dropped: mqtt.droppedMessages, buffered: mqtt.bufferedMessages,
              unconfirmed: mqtt.unconfirmedMessages, capacity: configuration.mqtt.offlineBufferCapacity)
    }

    private func say(_ line: String?) {
        guard let line else { return }
        GatewayLog.notice(line)
        onNotice?(line)
    }

    private func brokerLost(_ reason: String) {
        GatewayLog.info("broker connection: \(reason); reconnecting")
        guard !stopped else { return }
        say(outage.lost(brokerName, reason: reason, tally, now: clock.now))
    }

    private func confirmed(_ tag: UInt8) {
        switch tag {
        case Self.advertisementTag: statistics.published += 1
        case Self.undecodedTag: statistics.undecoded += 1
        default: break
        }
    }

    private func brokerConnected() {
        unreachableTimer?.cancel()
        say(outage.connected(brokerName, tally, now: clock.now))
        mqtt.publish(configuration.availabilityTopic, "online", qos: configuration.qos.availability, retain: true)
        if configuration.homeAssistantDiscovery, let (topic, payload) = discovery.gatewayConfig(configuration) {
            mqtt.publish(topic, payload.data, qos: configuration.qos.discovery, retain: true)
        }
    }

    // MARK: Scanning

    private func startScan() {
        guard !stopped else { return }
        // Duplicates: OpenMQTTGateway publishes every advertisement, filtered by its own interval.
        central.scanForPeripherals(withServices: nil, options: ScanOptions(allowDuplicates: true))
    }

    /// Starts scanning when the adapter is on (again after bluetoothd restarts).
    public func centralManagerDidUpdateState(_ central: CentralManager) {
        if central.state == .poweredOn && !stopped { startScan() }
    }

    /// Publishes the advertisement, as the options allow.
    public func centralManager(_ central: CentralManager, didDiscover peripheral: Peripheral, advertisementData: AdvertisementData, rssi: Int) {
        statistics.heard += 1
        let address = AdvertisementMessage.canonical(peripheral.address)
        if peripherals[address] !== peripheral { peripherals[address] = peripheral }
        if var fleet {
            let now = clock.now
            if fleet.shouldAnnounce(address, rssi: rssi, now: now, interval: configuration.fleetAnnounceInterval) {
                let topicID = address.replacingOccurrences(of: ":", with: "")
                let payload: JSONValue = .object([("id", .string(address)), ("gateway", .string(configuration.name)), ("rssi", .integer(rssi))])
                mqtt.publish(fleet.presenceTopic(topicID), payload.data, qos: configuration.qos.fleet, retain: true)
            }
            self.fleet = fleet
        }
        guard admits(address, rssi: rssi) else {
            statistics.filtered += 1
            return
        }
        let message = AdvertisementMessage(address: address, rssi: rssi, advertisement: advertisementData)
        if configuration.publishUndecoded {
            let topic = "\(configuration.advertisementTopic)/undecoded"
            let entries = message.serviceData.isEmpty ? [nil] : message.serviceData.map { Optional($0) }
            for entry in entries {
                var pairs = message.rawPairs(serviceData: entry)
                pairs.append(("gateway", .string(configuration.name)))
                mqtt.publish(topic, JSONValue.object(pairs).data, qos: configuration.qos.advertisements, tag: Self.undecodedTag)
            }
        }
        if configuration.onlySensors && message.decoded == nil {
            statistics.filtered += 1
            return
        }
        if configuration.publishInterval > .zero {
            let now = clock.now
            if let last = lastPublished[address], now - last < configuration.publishInterval {
                statistics.filtered += 1
                return
            }
            lastPublished[address] = now
        }
        mqtt.publish(advertisementTopic(address, message), message.json(gateway: configuration.name).data,
                     qos: configuration.qos.advertisements, tag: Self.advertisementTag)
        if configuration.homeAssistantDiscovery {
            for (topic, payload) in discovery.configs(for: message, configuration) {
                mqtt.publish(topic, payload.data, qos: configuration.qos.discovery, retain: true)
            }
        }
    }

    /// `home/<gateway>/BTtoMQTT/<MAC without colons>`, built once per device: the same few
    /// thousand topics are published again and again. Bounded: a crowd of rotating random
    /// addresses starts the cache afresh rather than growing it without end.
    private func advertisementTopic(_ address: String, _ message: AdvertisementMessage) -> String {
        if let topic = topics[address] { return topic }
        if topics.count >= 16_384 { topics.removeAll(keepingCapacity: true) }
        let topic = "\(configuration.advertisementTopic)/\(message.topicID)"
        topics[address] = topic
        return topic
    }

    private func admits(_ address: String, rssi: Int) -> Bool {
        if !configuration.whiteList.isEmpty && !configuration.whiteList.contains(address) { return false }
        if configuration.blackList.contains(address) { return false }
        return rssi >= configuration.minimumRSSI
    }

    /// Routed to the running GATT request.
    public func centralManager(_ central: CentralManager, didConnect peripheral: Peripheral) {
        if let running, running.address == peripheral.address { running.connected() }
    }

    /// Routed to the running GATT request.
    public func centralManager(_ central: CentralManager, didFailToConnect peripheral: Peripheral, error: Error?) {
        if let running, running.address == peripheral.address { running.failedToConnect(error) }
    }

    /// Routed to the running GATT request.
    public func centralManager(_ central: CentralManager, didDisconnectPeripheral peripheral: Peripheral, error: Error?) {
        if let running, running.address == peripheral.address { running.disconnected(error) }
    }

    /// Logged: the gateway keeps its MQTT side up and retries when the adapter comes back.
    public func centralManager(_ central: CentralManager, didFailToScan error: Error) {
        GatewayLog.warning("scan failed: \(error)")
    }

    /// The fleet gateway that would carry out a command for `address` now, as this gateway sees it.
    public func fleetChoice(for address: String) -> String? {
        fleet?.best(for: address, now: clock.now)?.gateway
    }

    // MARK: Commands

    private func received(_ message: MQTTClient.Message) {
        if var fleet, fleet.receive(topic: message.topic, payload: message.payload, now: clock.now) {
            self.fleet = fleet
            return
        }
        let forFleet = message.topic == configuration.fleetCommandTopic
        guard message.topic == configuration.commandTopic || forFleet else { return }
        guard !message.retained || !forFleet else { return }
        statistics.commands += 1
        guard message.payload.count <= Self.maximumCommandBytes else {
            return refuse(.payloadTooLarge(bytes: message.payload.count, limit: Self.maximumCommandBytes), on: message.topic, command: nil, forFleet: forFleet)
        }
        guard let command = JSONValue.parse(message.payload) else { return refuse(.invalidJSON, on: message.topic, command: nil, forFleet: forFleet) }
        guard case .object = command else { return refuse(.notAnObject(path: ""), on: message.topic, command: nil, forFleet: forFleet) }
        var configured = false
        if !forFleet {
            do {
                configured = try configuration.apply(configCommand: command)
            } catch {
                return refuse(error, on: message.topic, command: command, forFleet: forFleet)
            }
            if configured { publishSettings() }
        }
        switch GattRequest.parse(command, operations: configuration.operationCommands) {
        case nil:
            // Neither a setting nor a request: a misspelt key must be answered, not dropped.
            if !configured { refuse(GatewayConfiguration.unrecognized(command, onFleetTopic: forFleet), on: message.topic, command: command, forFleet: forFleet) }
        case .failure(let error)?:
            refuse(error, on: message.topic, command: command, forFleet: forFleet)
        case .success(let request)?:
            if forFleet, let fleet {
                let best = fleet.best(for: request.address, now: clock.now)
                if let best, best.gateway != configuration.name { return }
                if best == nil {
                    // Nobody hears it: one gateway (the first by name) says so, the others stay quiet.
                    guard fleet.spokesman == configuration.name else { return }
                    publishResponse(failure(request, "no gateway of fleet \(fleet.fleet) hears \(request.address)"), address: request.address)
                    return
                }
            }
            queue.append(request)
            runNext()
        }
    }

    /// The settings now in force, on `home/<gateway>/BTtoMQTT/config`, after each config command:
    /// a subscriber knows every later message was published under them (one connection keeps order).
    private func publishSettings() {
        let settings: JSONValue = .object([
            ("white-list", .array(configuration.whiteList.sorted().map(JSONValue.string))),
            ("black-list", .array(configuration.blackList.sorted().map(JSONValue.string))),
            ("minrssi", .integer(configuration.minimumRSSI)),
            ("interval", .integer(Int(configuration.publishInterval.components.seconds * 1000
                + configuration.publishInterval.components.attoseconds / 1_000_000_000_000_000))),
            ("onlysensors", .bool(configuration.onlySensors)),
            ("pubadvdata", .bool(configuration.publishUndecoded)),
            ("discovery", .bool(configuration.homeAssistantDiscovery)),
            ("activescan", .bool(configuration.activeScan)),
            ("gateway", .string(configuration.name)),
        ])
        mqtt.publish("\(configuration.advertisementTopic)/config", settings.data, qos: configuration.qos.commandResponses)
    }

    private func runNext() {
        guard running == nil, !stopped, !queue.isEmpty else { return }
        let request = queue.removeFirst()
        guard let peripheral = peripherals[request.address] else {
            publishResponse(failure(request, "\(request.address) has not been heard by \(configuration.name)"), address: request.address)
            statistics.gattFailed += 1
            return runNext()
        }
        let deadline = configuration.central.connectTimeout + configuration.central.operationTimeout
        let action = GattAction(request: request, central: central, peripheral: peripheral, deadline: deadline) { [weak self] outcome in
            self?.finished(request, outcome)
        }
        running = action
        action.start()
    }

    private func finished(_ request: GattRequest, _ outcome: GattAction.Outcome) {
        running = nil
        var pairs: [(String, JSONValue)] = [("id", .string(request.address)), ("service", .string(request.service)),
                                            ("characteristic", .string(request.characteristic))]
        switch outcome {
        case .read(let data):
            pairs.append(("read", request.render(data)))
            pairs.append(("success", .bool(true)))
        case .written:
            pairs.append(("write", .string(request.writtenText ?? "")))
            pairs.append(("success", .bool(true)))
        case .operation(let data):
            if case .operation(let spec) = request.kind {
                pairs.append(("cmd", .string(spec.name)))
                pairs += spec.parse(data)
            }
            pairs.append(("success", .bool(true)))
        case .failed(let reason):
            if let text = request.writtenText { pairs.append(("write", .string(text))) }
            if case .operation(let spec) = request.kind { pairs.append(("cmd", .string(spec.name))) }
            pairs.append(("success", .bool(false)))
            pairs.append(("error", .string(reason)))
        }
        if case .failed = outcome { statistics.gattFailed += 1 } else { statistics.gattSucceeded += 1 }
        pairs.append(("gateway", .string(configuration.name)))
        publishResponse(.object(pairs), address: request.address)
        runNext()
    }

    /// Says on stderr and on MQTT why a command was refused: on the device's response topic when
    /// the command named a valid address, else on `home/<gateway>/BTtoMQTT/commands`. A fleet
    /// command is answered by the fleet's spokesman only, not once by every gateway.
    private func refuse(_ error: CommandError, on topic: String, command: JSONValue?, forFleet: Bool) {
        GatewayLog.warning("command on \(topic) refused: \(error)")
        if forFleet, let spokesman = fleet?.spokesman, spokesman != configuration.name { return }
        let address = ["ble_write_address", "ble_read_address", "id"].lazy.compactMap { command?[$0]?.stringValue }.first
            .flatMap { JSONFields.isAddress($0) ? $0.uppercased() : nil }
        var pairs: [(String, JSONValue)] = []
        if let address { pairs.append(("id", .string(address))) }
        pairs += [("success", .bool(false)), ("code", .string(error.code)), ("error", .string(error.description))]
        if let path = error.path { pairs.append(("path", .string(path))) }
        pairs.append(("gateway", .string(configuration.name)))
        publishResponse(.object(pairs), address: address)
    }

    private func failure(_ request: GattRequest, _ reason: String) -> JSONValue {
        .object([("id", .string(request.address)), ("service", .string(request.service)), ("characteristic", .string(request.characteristic)),
                 ("success", .bool(false)), ("error", .string(reason)), ("gateway", .string(configuration.name))])
    }

    private func publishResponse(_ response: JSONValue, address: String?) {
        var topicID = address?.uppercased().replacingOccurrences(of: ":", with: "") ?? "commands"
        if let problem = TopicLevel.problem(topicID) {
            // Addresses are checked at the door; this is the last guard before libmosquitto
            // would refuse the topic, or a '/' would move the response elsewhere.
            GatewayLog.warning("response for '\(topicID.prefix(64))' published on \(configuration.advertisementTopic)/commands: the address \(problem)")
            topicID = "commands"
        }
        mqtt.publish("\(configuration.advertisementTopic)/\(topicID)", response.data, qos: configuration.qos.commandResponses)
        onGattResponse?(response)
    }
}
