import BleDBus
import BleSim
import BleTestSupport
import Foundation
import Testing
import BlueZVocabulary

/// JSON scenarios: every shipped file starts, malformed files are refused with an error that
/// names the place, faults and rules from JSON take effect, and `blekit sim` serves one.
struct ScenarioTests {
    /// The package's Scenarios folder (next to Tests/).
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Scenarios")

    /// Every shipped scenario, by file name.
    static var shipped: [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.filter { $0.hasSuffix(".json") }.sorted()
    }

    /// A scenario's simulator on a private bus, with a client logging org.bluez's signals.
    @BleLoop
    final class Run {
        let bus: PrivateBus
        let simulator: Simulator
        let client: Connection
        let log: SignalLog

        private init(bus: PrivateBus, simulator: Simulator, client: Connection, log: SignalLog) {
            self.bus = bus
            self.simulator = simulator
            self.client = client
            self.log = log
        }

        static func start(_ scenario: Scenario) async throws -> Run {
            let bus = try await PrivateBus.start()
            let simulator = scenario.makeSimulator()
            do {
                try await simulator.start(on: bus.busAddress)
                let client = try await Connection.open(bus.busAddress)
                let log = try SignalLog(client, [SignalMatch(sender: "org.bluez")])
                _ = try await client.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                          interface: "org.freedesktop.DBus", member: "GetId")
                return Run(bus: bus, simulator: simulator, client: client, log: log)
            } catch {
                simulator.stop(.kill)
                bus.stopInBackground()
                throw error
            }
        }

        func tearDown() {
            log.cancel()
            client.close()
            simulator.stop(.kill)
            bus.stopInBackground()
        }

        /// Starts discovery on the first adapter and waits for `address`.
        func discover(_ address: String, adapter: String) async throws -> ObjectPath {
            let device = SimulatorFixture.devicePath(address, adapter: adapter)
            try await client.bluez(try ObjectPath("/org/bluez/\(adapter)"), Interface.adapter, "StartDiscovery")
            try await log.wait("\(device) found") { $0.addedObject == device }
            return device
        }
    }

    // MARK: Shipped scenarios

    @Test func thereAreShippedScenarios() {
        #expect(!ScenarioTests.shipped.isEmpty, "no JSON in \(ScenarioTests.folder.path)")
    }

    @BleLoop
    @Test(arguments: ScenarioTests.shipped)
    func aShippedScenarioLoadsStartsAndAdvertises(file: String) async throws {
        let scenario = try Scenario.load(path: ScenarioTests.folder.appendingPathComponent(file).path)
        let run = try await Run.start(scenario)
        defer { run.tearDown() }
        let objects = try BlueZShapes.managedObjects(try await run.client.bluez(.root, Interface.objectManager, "GetManagedObjects")[0])
        for adapter in scenario.configuration.adapters {
            #expect(objects[try ObjectPath("/org/bluez/\(adapter.name)")]?[Interface.adapter] != nil, "\(adapter.name) of \(file)")
        }
        let adapter = try #require(scenario.configuration.adapters.first { $0.powered })
        if let advertiser = scenario.peripherals.first(where: \.advertising) {
            _ = try await run.discover(advertiser.address, adapter: adapter.name)
        }
    }

    // MARK: Malformed scenarios

    static let malformed: [(String, String, [String])] = [
        ("bad address", #"{"peripherals": [{"address": "C0:FF:EE"}]}"#,
         ["peripherals[0].address", "'C0:FF:EE' is not an address"]),
        ("bad hex", #"{"peripherals": [{"address": "C0:FF:EE:00:00:01", "services": [{"uuid": "ff00", "characteristics": [{"uuid": "ff01", "value": "0g"}]}]}]}"#,
         ["peripherals[0].services[0].characteristics[0].value", "'0g' is not hex"]),
        ("odd hex", #"{"peripherals": [{"address": "C0:FF:EE:00:00:01", "manufacturerData": {"0x0059": "012"}}]}"#,
         ["peripherals[0].manufacturerData", "'012' is not hex"]),
        ("unknown flag", #"{"peripherals": [{"address": "C0:FF:EE:00:00:01", "services": [{"uuid": "ff00", "characteristics": [{"uuid": "ff01", "flags": ["read", "shout"]}]}]}]}"#,
         ["peripherals[0].services[0].characteristics[0].flags[1]", "unknown value 'shout'"]),
        ("unknown fault", #"{"faults": [{"explode": true}]}"#,
         ["faults[0].explode", "unknown key 'explode'"]),
        ("unknown connect failure", #"{"faults": [{"connect": "C0:FF:EE:00:00:01", "failure": "explode"}]}"#,
         ["faults[0].failure"]),
        ("fault with a bad address", #"{"faults": [{"linkLoss": "nowhere", "afterPackets": 3}]}"#,
         ["faults[0].linkLoss", "'nowhere' is not an address"]),
        ("bad UUID", #"{"peripherals": [{"address": "C0:FF:EE:00:00:01", "services": [{"uuid": "heart"}]}]}"#,
         ["peripherals[0].services[0].uuid", "'heart' is not a UUID"]),
        ("missing address", #"{"peripherals": [{"name": "nameless"}]}"#,
         ["peripherals[0]", "missing key 'address'"]),
        ("wrong type", #"{"peripherals": [{"address": "C0:FF:EE:00:00:01", "rssi": "loud"}]}"#,
         ["peripherals[0].rssi"]),
        ("out of range", #"{"peripherals": [{"address": "C0:FF:EE:00:00:01", "rssi": 100000}]}"#,
         ["peripherals[0].rssi", "100000 dBm is out of range; use -127…20 dBm"]),
        ("MTU out of range", #"{"peripherals": [{"address": "C0:FF:EE:00:00:01", "mtu": 70000}]}"#,
         ["peripherals[0].mtu", "70000 is out of range; use 23…517"]),
        ("fractional MTU", #"{"peripherals": [{"address": "C0:FF:EE:00:00:01", "mtu": 100.5}]}"#,
         ["peripherals[0].mtu"]),
        ("bad adapter name", #"{"adapters": [{"name": "HCI 0", "address": "00:AA:01:00:00:00"}]}"#,
         ["adapters[0].name", "adapter names look like hci0"]),
        ("duplicate addresses", #"{"peripherals": [{"address": "C0:FF:EE:00:00:01"}, {"address": "c0:ff:ee:00:00:01"}]}"#,
         ["peripherals[1].address", "two peripherals share an address"]),
        ("negative timeout", #"{"temporaryTimeout": -1}"#,
         ["temporaryTimeout", "-1 s is out of range; use 0.001…86400 s"]),
        ("rule without trigger", #"{"peripherals": [{"address": "C0:FF:EE:00:00:01", "rules": [{"on": {}, "then": []}]}]}"#,
         ["peripherals[0].rules[0].on", "needs one of 'write'"]),
        ("bad advertised UUID", #"{"peripherals": [{"address": "C0:FF:EE:00:00:01", "serviceUUIDs": ["180d", "heart"]}]}"#,
         ["peripherals[0].serviceUUIDs[1]", "'heart' is not a UUID"]),
        ("bad service data UUID", #"{"peripherals": [{"address": "C0:FF:EE:00:00:01", "serviceData": {"heart": "01"}}]}"#,
         ["peripherals[0].serviceData.heart", "'heart' is not a UUID"]),
        ("bad company id", #"{"peripherals": [{"address": "C0:FF:EE:00:00:01", "manufacturerData": {"apple": "01"}}]}"#,
         ["peripherals[0].manufacturerData", "company id 'apple'"]),
        ("not JSON", #"{"peripherals": ["#, ["not valid JSON"]),
        ("not an object", #"[1, 2, 3]"#, ["top level: expected an object, found a list"]),
    ]

    @Test(arguments: ScenarioTests.malformed)
    func aMalformedScenarioIsInvalidAndNamesThePlace(_ label: String, _ json: String, _ mentions: [String]) {
        do {
            _ = try Scenario.parse(Data(json.utf8), name: "broken.json")
            Issue.record("\(label): the scenario was accepted")
        } catch {
            switch error {
            case .invalid(let file, _, _), .notJSON(let file, _, _): #expect(file == "broken.json")
            case .unreadable: Issue.record("\(label): \(error) is not .invalid or .notJSON")
            }
            for mention in mentions { #expect(error.description.contains(mention), "\(label): \(error)") }
            #expect(error.description.hasPrefix("Scenario broken.json is invalid: "))
        }
    }

    @Test func aMissingScenarioFileIsUnreadable() {
        do {
            _ = try Scenario.load(path: "/nonexistent/scenario.json")
            Issue.record("a missing file loaded")
        } catch {
            guard case .unreadable(let path, _) = error else { Issue.record("\(error) is not .unreadable"); return }
            #expect(path == "/nonexistent/scenario.json")
        }
    }

    @Test func everyKeyOfAScenarioIsRead() throws {
        let scenario = try Scenario.parse(Data(#"""
        {
          "adapters": [{"name": "hci3", "address": "00:aa:01:00:00:33", "systemName": "Lab", "powered": false}],
          "temporaryTimeout": 7,
          "timing": {"scale": 0.5, "connectionInterval": 15, "disconnect": 100, "connectTimeout": 500},
          "peripherals": [{"address": "c0:ff:ee:00:00:01", "name": "N", "gapName": "G", "rssi": -40, "rssiJitter": 2,
                           "txPower": 3, "addressType": "random", "advertisingInterval": 50, "connectable": false,
                           "advertising": false, "mtu": 247, "serviceData": {"180d": "01"}, "serviceUUIDs": ["180d"]}],
          "crowd": {"count": 3, "addressPrefix": "DE:AD:BE:EF", "namePrefix": "b-"},
          "faults": [{"accessDenied": true}, {"neverReply": "ReadValue", "times": 2},
                     {"notifications": "C0:FF:EE:00:00:01", "dropEvery": 3}]
        }
        """#.utf8))
        #expect(scenario.configuration.adapters == [.init(name: "hci3", address: "00:AA:01:00:00:33", systemName: "Lab", powered: false)])
        #expect(scenario.configuration.temporaryTimeoutSeconds == 7)
        #expect(scenario.configuration.timing.scale == 0.5)
        #expect(scenario.configuration.timing.connectionIntervalMilliseconds == 15)
        #expect(scenario.configuration.timing.disconnectMilliseconds == 100)
        #expect(scenario.configuration.timing.connectTimeoutMilliseconds == 500)
        let first = try #require(scenario.peripherals.first)
        #expect(first.address == "C0:FF:EE:00:00:01")
        #expect(first.addressType == .random)
        #expect((first.name, first.gapName, first.rssi, first.rssiJitter, first.txPower) == ("N", "G", -40, 2, 3))
        #expect((first.advertisingIntervalMilliseconds, first.connectable, first.advertising, first.mtu) == (50, false, false, 247))
        #expect(first.serviceData == ["180d": Data([1])])
        #expect(scenario.peripherals.map(\.address).suffix(3) == ["DE:AD:BE:EF:00:00", "DE:AD:BE:EF:00:01", "DE:AD:BE:EF:00:02"])
        #expect(scenario.faults == [.accessDenied, .neverReply(member: "ReadValue", times: 2),
                                    .notifications(address: "C0:FF:EE:00:00:01", fault: .dropEvery(3))])
    }

    // MARK: Scenarios at work

    static let ledWithFault = #"""
    {
      "peripherals": [{
        "address": "C0:FF:EE:00:00:01", "name": "LED",
        "services": [{"uuid": "ff00", "characteristics": [
          {"uuid": "ff01", "flags": ["read", "write"], "value": "00"},
          {"uuid": "ff02", "flags": ["read", "notify"], "value": "00"}
        ]}],
        "rules": [
          {"on": {"write": "ff01", "prefix": "01"}, "then": [{"notify": "ff02", "value": "a0a1a2a3a4a5a6a7", "packets": 4}]},
          {"on": {"write": "ff01", "prefix": "02"}, "then": [{"echo": "ff02"}]},
          {"on": {"write": "ff01", "prefix": "ff"}, "then": [{"disconnect": true}]},
          {"on": {"read": "ff01"}, "then": [{"reply": "cafe"}]}
        ]
      }],
      "faults": [
        {"connect": "C0:FF:EE:00:00:01", "failure": "abortByLocal", "times": 1},
        {"attError": "C0:FF:EE:00:00:01", "characteristic": "ff02", "operation": "read", "code": 14, "times": 1}
      ]
    }
    """#

    /// The LED scenario, discovered and connected (after the armed abort-by-local).
    @BleLoop
    static func connectedLED() async throws -> (Run, ObjectPath) {
        let run = try await Run.start(try Scenario.parse(Data(ledWithFault.utf8)))
        do {
            let device = try await run.discover("C0:FF:EE:00:00:01", adapter: "hci0")
            do {
                try await run.client.bluez(device, Interface.device, "Connect")
                Issue.record("the scenario's abortByLocal fault did not fire")
            } catch {
                #expect(error == .remote(name: "org.bluez.Error.Failed", message: "le-connection-abort-by-local"))
            }
            let since = run.log.messages.count
            try await run.client.bluez(device, Interface.device, "Connect")
            try await run.log.wait(since: since, "ServicesResolved") { $0.changes(device, "ServicesResolved", to: .boolean(true)) }
            return (run, device)
        } catch {
            run.tearDown()
            throw error
        }
    }

    @BleLoop
    @Test func aScenariosFaultsAreArmedAtStart() async throws {
        let (run, device) = try await ScenarioTests.connectedLED()
        defer { run.tearDown() }
        let notify = try ObjectPath(device.rawValue + "/service000c/char000f")
        await expectDBusError("org.bluez.Error.Failed", "Operation failed with ATT error: 0x0e") {
            try await run.client.bluez(notify, Interface.characteristic, "ReadValue", [options()])
        }
        #expect(try await run.client.bluez(notify, Interface.characteristic, "ReadValue", [options()]) == [.bytes(Data([0]))])
    }

    @BleLoop
    @Test func aRuleSplitsANotificationIntoTheGivenNumberOfPackets() async throws {
        let (run, device) = try await ScenarioTests.connectedLED()
        defer { run.tearDown() }
        let write = try ObjectPath(device.rawValue + "/service000c/char000d")
        let notify = try ObjectPath(device.rawValue + "/service000c/char000f")
        try await run.client.bluez(notify, Interface.characteristic, "StartNotify")
        let since = run.log.messages.count
        try await run.client.bluez(write, Interface.characteristic, "WriteValue", [.bytes(Data([0x01])), options()])
        try await run.log.wait(since: since, "the last packet") { $0.changes(notify, "Value", to: .bytes(Data([0xa6, 0xa7]))) }
        let packets = run.log.messages.dropFirst(since).filter { $0.changes(notify, "Value") }.compactMap { $0.changed("Value")?.bytesValue }
        #expect(packets == [Data([0xa0, 0xa1]), Data([0xa2, 0xa3]), Data([0xa4, 0xa5]), Data([0xa6, 0xa7])])
    }

    @BleLoop
    @Test func aRuleMatchesTheWrittenPrefixAndEchoes() async throws {
        let (run, device) = try await ScenarioTests.connectedLED()
        defer { run.tearDown() }
        let write = try ObjectPath(device.rawValue + "/service000c/char000d")
        let notify = try ObjectPath(device.rawValue + "/service000c/char000f")
        try await run.client.bluez(notify, Interface.characteristic, "StartNotify")
        let since = run.log.messages.count
        try await run.client.bluez(write, Interface.characteristic, "WriteValue", [.bytes(Data([0x02, 0x99])), options()])
        try await run.log.wait(since: since, "the echo") { $0.changes(notify, "Value", to: .bytes(Data([0x02, 0x99]))) }
    }

    @BleLoop
    @Test func aRuleAnswersReadsAndAnotherDropsTheLink() async throws {
        let (run, device) = try await ScenarioTests.connectedLED()
        defer { run.tearDown() }
        let characteristic = try ObjectPath(device.rawValue + "/service000c/char000d")
        #expect(try await run.client.bluez(characteristic, Interface.characteristic, "ReadValue", [options()]) == [.bytes(Data([0xca, 0xfe]))])
        let since = run.log.messages.count
        try await run.client.bluez(characteristic, Interface.characteristic, "WriteValue", [.bytes(Data([0xff])), options()])
        try await run.log.wait(since: since, "the link drop") { $0.changes(device, "Connected", to: .boolean(false)) }
    }

    // MARK: blekit sim

    @BleLoop
    @Test func blekitSimServesAScenarioOnItsOwnBusAndStopsCleanlyOnSIGTERM() async throws {
        let blekit = try #require(Subprocess.builtProduct("blekit"), "blekit is built next to the test bundle")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("blesim-\(UUID().uuidString.prefix(8)).json")
        try Data(ScenarioTests.ledWithFault.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let process = try Subprocess([blekit, "sim", file.path], environment: ProcessInfo.processInfo.environment)
        let prefix = "DBUS_SYSTEM_BUS_ADDRESS="
        let lineEnd = try #require(await process.waitFor("Press Ctrl-C to stop."), "blekit sim printed: \(process.text)")
        _ = lineEnd
        let line = try #require(process.text.split(separator: "\n").first { $0.hasPrefix(prefix) })
        let address = String(line.dropFirst(prefix.count))
        #expect(process.text.contains("BleSim is serving 1 peripheral(s) on hci0, hci1"))
        let client = try await Connection.open(.address(address))
        defer { client.close() }
        let log = try SignalLog.daemon(client)
        defer { log.cancel() }
        try await client.bluez(SimulatorFixture.hci0, Interface.adapter, "StartDiscovery")
        try await log.wait("the scenario's device") { $0.addedObject == SimulatorFixture.devicePath("C0:FF:EE:00:00:01") }
        process.signal(SIGTERM)
        try await log.wait("the name released") { $0.isBluezNameOwnerChange && $0.newOwner == "" }
        #expect(log.messages.contains { $0.removedObject == SimulatorFixture.hci0 }, "a clean stop removes the objects first")
        #expect(await process.waitForEnd())
        await process.finish()
    }
}
