import BleCore
import BleGateway
import Foundation

/// `blekit gateway`: a BLE → MQTT gateway in OpenMQTTGateway/Theengs formats until Ctrl-C (or
/// `--timeout`), then a verdict line with its counters.
enum GatewayCommand: BlekitCommand {
    static let name = "gateway"
    static let synopsis = ""
    static let summary = "gateway: publish advertisements to MQTT as OpenMQTTGateway/Theengs do; take commands"
    static let options: [OptionSpec] = [
        .value("--broker", "HOST[:PORT]", "the MQTT broker (default localhost:1883; 8883 with TLS)"),
        .value("--name", "NAME", "the gateway's name in home/NAME/... (default BleKit_<host>)"),
        .value("--base", "TOPIC", "the first topic level (default home)"),
        .value("--username", "USER", "MQTT user name"),
        .value("--password", "PASSWORD", "MQTT password (or BLEKIT_MQTT_PASSWORD)"),
        .value("--cafile", "PEM", "TLS: trusted certificate authorities"),
        .value("--certfile", "PEM", "TLS: client certificate"),
        .value("--keyfile", "PEM", "TLS: client key"),
        .flag("--tls-insecure", "TLS: do not check the broker's host name"),
        .value("--min-rssi", "DBM", "publish only advertisements at least this strong (-90)"),
        .value("--interval", "MS", "at most one message per device per MS milliseconds (default 0: every advertisement)"),
        .value("--white-list", "MAC", "publish only these devices (repeatable)"),
        .value("--black-list", "MAC", "never publish these devices (repeatable)"),
        .flag("--undecoded", "also publish raw frames on home/NAME/BTtoMQTT/undecoded (for Theengs Gateway)"),
        .flag("--only-sensors", "publish only advertisements a decoder understood"),
        .flag("--discovery", "announce decoded devices through Home Assistant MQTT discovery"),
        .value("--fleet", "FLEET", "join a fleet: commands on home/FLEET/commands/MQTTtoBT/config go to the gateway hearing the device best"),
        .value("--commands", "FILE", "named operation commands (JSON) that {\"cmd\": NAME, \"id\": MAC} runs"),
        .flag("--passive", "ask for passive scanning (BlueZ 5.66 scans actively; see --help)"),
        .value("--bthome", "KEY=VALUE,...", "also advertise these readings as a BTHome v2 sensor (tempc=21.5,hum=40,batt=90)"),
        .value("--timeout", "SECONDS", "stop after this long (default 0: until Ctrl-C)"),
        .flag("--verbose", "log broker connections and command retries"),
    ]
    static let details = """
    Topics: home/NAME/BTtoMQTT/<MAC without colons> (one JSON object per advertisement: id, name,
    rssi, txpower, manufacturerdata, servicedata, servicedatauuid, decoded BTHome v2, iBeacon,
    Eddystone and SIG battery/environmental fields, gateway), home/NAME/LWT (retained online/offline),
    commands on home/NAME/commands/MQTTtoBT/config: {"white-list":[...]}, {"minrssi":-80},
    {"interval":5000}, {"ble_write_address":MAC,"ble_write_service":UUID,"ble_write_char":UUID,
    "ble_write_value":"0102","value_type":"HEX","ttl":2}, {"ble_read_address":...}, {"cmd":NAME,"id":MAC}.
    A refused command (over 64 KiB, not JSON, a bad address, UUID or value, no member the gateway
    reads) is answered on
    home/NAME/BTtoMQTT/<MAC>, or .../commands, with "success":false, "code", "path" and "error".
    An unreachable or lost broker is said once on stderr, and its return; "published" counts what
    libmosquitto wrote (QoS 0) or the broker acknowledged (QoS 1).
    Passive scanning needs BlueZ's AdvertisementMonitor API (experimental in 5.66, bluetoothd -E);
    BleKit scans actively and says so.
    Example: blekit gateway --broker 192.168.1.10 --name kitchen --discovery --min-rssi -90
    """

    @MainActor
    static func run(_ invocation: Invocation) async -> ExitCode {
        guard invocation.positionals.isEmpty else { return invocation.usage("takes no arguments", help: help) }
        let arguments = invocation.arguments
        let seconds: Double
        let minimumRSSI: Int?
        let interval: Int?
        do {
            seconds = try arguments.seconds("--timeout", default: 0)
            // Refused rather than clamped: --min-rssi 90 (OpenMQTTGateway's magnitude) or a
            // negative --interval used to be taken as given, and filtered every advertisement
            // out, or none, without a word.
            minimumRSSI = try arguments.integer("--min-rssi", in: -127...20)
            interval = try arguments.integer("--interval", in: 0...GatewayConfiguration.maximumIntervalMilliseconds)
        } catch {
            return invocation.usage(error.description, help: help)
        }
        // A misspelt address in --white-list matches nothing: the gateway would publish
        // nothing and exit 0 with everything counted as filtered.
        for option in ["--white-list", "--black-list"] {
            if let bad = arguments.all(option).first(where: { !GatewayConfiguration.isAddress($0) }) {
                return invocation.usage("\(option) wants a device address such as C0:FF:EE:00:00:01, not '\(bad)'", help: help)
            }
        }
        let tls = arguments.value("--cafile") != nil || arguments.value("--certfile") != nil || arguments.has("--tls-insecure")
        let (host, port) = broker(arguments.value("--broker") ?? "localhost", tls: tls)
        guard let port else { return invocation.usage("--broker wants HOST or HOST:PORT", help: help) }
        let hostName = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "host"
        let name = arguments.value("--name") ?? "BleKit_\(hostName)"
        guard !name.isEmpty, !name.contains(where: { "/+#".contains($0) }) else {
            return invocation.usage("--name may not contain /, + or #", help: help)
        }
        var operations: [OperationCommandSpec] = []
        if let path = arguments.value("--commands") {
            do {
                operations = try OperationCommandSpec.load(path: path)
            } catch {
                invocation.fail("cannot read the commands file \(path): \(error)")
                return .usage
            }
        }
        var mqtt = MQTTOptions(host: host, port: port, clientID: "blekit-\(name)", username: arguments.value("--username"),
                               password: arguments.value("--password") ?? ProcessInfo.processInfo.environment["BLEKIT_MQTT_PASSWORD"])
        if tls {
            mqtt.tls = .init(caFile: arguments.value("--cafile"), certificateFile: arguments.value("--certfile"),
                             keyFile: arguments.value("--keyfile"), insecure: arguments.has("--tls-insecure"))
        }
        var central = invocation.global.centralOptions
        central.operationTimeout = .seconds(10)
        central.connectTimeout = .seconds(20)
        var configuration = GatewayConfiguration(name: name, mqtt: mqtt, bus: invocation.global.bus, adapter: invocation.global.adapter,
                                                 baseTopic: arguments.value("--base") ?? "home", activeScan: !arguments.has("--passive"),
                                                 whiteList: Set(arguments.all("--white-list")), blackList: Set(arguments.all("--black-list")),
                                                 minimumRSSI: minimumRSSI ?? -100, publishInterval: .milliseconds(max(0, interval ?? 0)),
                                                 publishUndecoded: arguments.has("--undecoded"), onlySensors: arguments.has("--only-sensors"),
                                                 homeAssistantDiscovery: arguments.has("--discovery"), fleet: arguments.value("--fleet"),
                                                 operationCommands: operations, central: central)
        configuration.central.bus = invocation.global.bus
        GatewayLog.verbose = arguments.has("--verbose")
        var readings: [(key: String, value: Double)]?
        if let text = arguments.value("--bthome") {
            do {
                readings = try BTHomeEncoder.parse(text)
                _ = try BTHomeEncoder.encode(readings ?? [])
            } catch {
                return invocation.usage("--bthome: \(error.description)", help: help)
            }
        }
        // No Bluetooth, a powered-off adapter or a refusing D-Bus policy end the gateway before
        // it starts, with their own statuses: it would otherwise run on, publishing nothing.
        do throws(CLIError) {
            try await CentralSession.open(invocation).close()
        } catch {
            return invocation.fail(error)
        }
        let gateway: Gateway
        do {
            gateway = try await start(configuration)
        } catch {
            invocation.fail("cannot start: \(error)")
            return .failure
        }
        var sensor: BTHomeSensor?
        if let readings {
            do {
                sensor = try await startSensor(name: name, readings: readings,
                                               options: PeripheralManagerOptions(bus: invocation.global.bus, adapter: invocation.global.adapter))
            } catch {
                // Asked for and not done: a gateway that runs on without it would look fine.
                invocation.fail("cannot advertise BTHome: \(error)")
                _ = await stop(gateway)
                return .failure
            }
        }
        invocation.out("gateway \(name): publishing to \(host):\(port) under \(configuration.advertisementTopic); Ctrl-C to stop")
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await Termination.wait() }
            if seconds > 0 {
                group.addTask { try? await Task.sleep(for: .seconds(seconds)) }
            }
            await group.next()
            group.cancelAll()
        }
        let advertised = await stopSensor(sensor)
        let (statistics, connections, dropped, unsent, lastError, state) = await stop(gateway)
        invocation.out("gateway \(name): heard \(statistics.heard), published \(statistics.published), filtered \(statistics.filtered), "
            + "undecoded \(statistics.undecoded), commands \(statistics.commands) (GATT ok \(statistics.gattSucceeded), failed \(statistics.gattFailed)), "
            + "broker connections \(connections), dropped \(dropped), unsent \(unsent)")
        if sensor != nil && !advertised {
            invocation.fail("the BTHome advertisement was not accepted by bluetoothd")
            return .failure
        }
        if connections == 0 {
            invocation.fail("never reached the broker at \(host):\(port): \(lastError ?? "no answer")")
            return .failure
        }
        if state == .unsupported || state == .unauthorized {
            invocation.fail("Bluetooth was not usable (\(state)); nothing was scanned")
            return state == .unauthorized ? .permissionDenied : .unavailable
        }
        if statistics.heard == 0 {
            invocation.fail("no advertisement was heard")
            return .deviceNotFound
        }
        return .success
    }

    /// `host`, `host:port`, `[v6]` or `[v6]:port`; the port nil when it is not 1…65535.
    private static func broker(_ text: String, tls: Bool) -> (String, Int32?) {
        let defaultPort: Int32 = tls ? 8883 : 1883
        var host = Substring(text)
        var portText: Substring?
        if host.hasPrefix("["), let close = host.firstIndex(of: "]") {
            let rest = host[host.index(after: close)...]
            portText = rest.hasPrefix(":") ? rest.dropFirst() : (rest.isEmpty ? nil : rest)
            host = host[host.index(after: host.startIndex)..<close]
        } else if host.filter({ $0 == ":" }).count == 1, let colon = host.firstIndex(of: ":") {
            portText = host[host.index(after: colon)...]
            host = host[..<colon]
        }
        guard let portText else { return (String(host), defaultPort) }
        return (String(host), Int32(portText).flatMap { (1...65535).contains($0) ? $0 : nil })
    }

    @BleLoop
    private static func start(_ configuration: GatewayConfiguration) throws -> Gateway {
        let gateway = try Gateway(configuration: configuration)
        gateway.start()
        return gateway
    }

    @BleLoop
    private static func startSensor(name: String, readings: [(key: String, value: Double)], options: PeripheralManagerOptions) throws -> BTHomeSensor {
        let sensor = try BTHomeSensor(name: name, readings: readings, options: options)
        sensor.start()
        return sensor
    }

    /// Stops the sensor; true when its advertisement was active.
    @BleLoop
    private static func stopSensor(_ sensor: BTHomeSensor?) -> Bool {
        guard let sensor else { return false }
        let active = sensor.registration?.isActive ?? false
        sensor.stop()
        return active
    }

    @BleLoop
    private static func stop(_ gateway: Gateway) -> (Gateway.Statistics, Int, Int, Int, String?, ManagerState) {
        // Unsent: still buffered, or handed to libmosquitto and never confirmed.
        let mqtt = gateway.mqtt
        let result = (gateway.statistics, mqtt.connections, mqtt.droppedMessages, mqtt.bufferedMessages + mqtt.unconfirmedMessages,
                      mqtt.lastError, gateway.central.state)
        gateway.stop()
        return result
    }
}
