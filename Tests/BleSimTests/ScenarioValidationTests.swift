import BleDBus
@testable import BleSim
import Foundation
import Testing

/// A scenario file is the peer a test author wrote or it is refused: unknown keys, wrong types,
/// numbers out of range and missing keys are `ScenarioProblem`s naming the JSON path, and no
/// number from a file reaches a conversion that traps.
struct ScenarioValidationTests {
    /// The problem `json` is refused with, or nil (recorded as an issue) when it loads.
    static func problem(_ json: String, _ label: String = "") -> ScenarioProblem? {
        do {
            _ = try Scenario.parse(Data(json.utf8), name: "test.json")
            Issue.record("\(label): the scenario was accepted")
        } catch {
            if case .invalid(_, _, let problem) = error { return problem }
            Issue.record("\(label): \(error) is not .invalid")
        }
        return nil
    }

    static let peripheral = #""address": "C0:FF:EE:00:00:01""#
    static let service = #"{"uuid": "ff00", "characteristics": [{"uuid": "ff01"}, {"uuid": "ff02", "flags": ["notify"]}]}"#

    // MARK: Unknown keys

    /// (label, JSON, path of the unknown key, suggestion).
    static let unknownKeys: [(String, String, String, String?)] = [
        ("top level", #"{"temporaryTimout": 30}"#, "temporaryTimout", "temporaryTimeout"),
        ("a Swift property name", #"{"temporaryTimeoutSeconds": 30}"#, "temporaryTimeoutSeconds", "temporaryTimeout"),
        ("timing", #"{"timing": {"scael": 1}}"#, "timing.scael", "scale"),
        ("adapter", #"{"adapters": [{"name": "hci0", "address": "00:AA:01:00:00:00", "powerd": false}]}"#, "adapters[0].powerd", "powered"),
        ("peripheral", #"{"peripherals": [{\#(peripheral), "rsi": -40}]}"#, "peripherals[0].rsi", "rssi"),
        ("peripheral, nothing close", #"{"peripherals": [{\#(peripheral), "colour": "red"}]}"#, "peripherals[0].colour", nil),
        ("deep characteristic", #"""
         {"peripherals": [{"address": "C0:FF:EE:00:00:01"}, {"address": "C0:FF:EE:00:00:02"},
                          {"address": "C0:FF:EE:00:00:03", "services": [{"uuid": "ff00", "characteristics": [
                            {"uuid": "ff01"}, {"uuid": "ff02", "flag": ["read"]}]}]}]}
         """#, "peripherals[2].services[0].characteristics[1].flag", "flags"),
        ("service", #"{"peripherals": [{\#(peripheral), "services": [{"uuid": "ff00", "characteristic": []}]}]}"#,
         "peripherals[0].services[0].characteristic", "characteristics"),
        ("descriptor", #"{"peripherals": [{\#(peripheral), "services": [{"uuid": "ff00", "characteristics": [{"uuid": "ff01", "descriptors": [{"uuid": "2901", "vaule": "00"}]}]}]}]}"#,
         "peripherals[0].services[0].characteristics[0].descriptors[0].vaule", "value"),
        ("rule", #"{"peripherals": [{\#(peripheral), "rules": [{"on": {"connect": true}, "then": [], "latancy": 5}]}]}"#,
         "peripherals[0].rules[0].latancy", "latency"),
        ("misspelled trigger", #"{"peripherals": [{\#(peripheral), "rules": [{"on": {"wirte": "ff01"}, "then": []}]}]}"#,
         "peripherals[0].rules[0].on.wirte", "write"),
        ("a write's key on a read", #"{"peripherals": [{\#(peripheral), "rules": [{"on": {"read": "ff01", "prefix": "01"}, "then": []}]}]}"#,
         "peripherals[0].rules[0].on.prefix", nil),
        ("response", #"{"peripherals": [{\#(peripheral), "rules": [{"on": {"connect": true}, "then": [{"notify": "ff02", "value": "01", "packet": 2}]}]}]}"#,
         "peripherals[0].rules[0].then[0].packet", "packets"),
        ("crowd", #"{"crowd": {"count": 2, "intervall": 100}}"#, "crowd.intervall", "interval"),
        ("fault", #"{"faults": [{"connect": "C0:FF:EE:00:00:01", "failure": "timeout", "time": 2}]}"#, "faults[0].time", "times"),
        ("another fault's key", #"{"faults": [{"connect": "C0:FF:EE:00:00:01", "failure": "timeout", "afterPackets": 2}]}"#,
         "faults[0].afterPackets", nil),
        ("misspelled fault", #"{"faults": [{"linkLos": "C0:FF:EE:00:00:01", "afterPackets": 2}]}"#, "faults[0].linkLos", "linkLoss"),
    ]

    @Test(arguments: ScenarioValidationTests.unknownKeys)
    func anUnknownKeyIsRefusedWithThePathTheAcceptedKeysAndTheClosest(_ label: String, _ json: String, _ path: String, _ suggestion: String?) throws {
        let problem = try #require(Self.problem(json, label))
        guard case .unknownKey(let at, let key, let accepted, let suggested) = problem else {
            Issue.record("\(label): \(problem) is not .unknownKey")
            return
        }
        #expect(at.description == path, "\(label)")
        #expect(key == path.split(separator: ".").last.map(String.init), "\(label)")
        #expect(suggested == suggestion, "\(label): \(problem)")
        #expect(!accepted.isEmpty && !accepted.contains(key), "\(label): \(accepted)")
        if let suggestion { #expect(problem.description.contains("did you mean '\(suggestion)'?"), "\(label): \(problem)") }
        for name in accepted { #expect(problem.description.contains("'\(name)'"), "\(label) lists \(name): \(problem)") }
    }

    @Test func theAcceptedKeysAreThoseOfThatPlace() throws {
        let fault = try #require(Self.problem(#"{"faults": [{"connect": "C0:FF:EE:00:00:01", "failure": "timeout", "afterPackets": 2}]}"#))
        #expect(fault == .unknownKey(path: ScenarioPath([.key("faults"), .index(0), .key("afterPackets")]), key: "afterPackets",
                                     accepted: ["connect", "failure", "times"], suggestion: nil))
        let top = try #require(Self.problem(#"{"peripheral": []}"#))
        #expect(top == .unknownKey(path: ScenarioPath([.key("peripheral")]), key: "peripheral",
                                   accepted: ["adapters", "temporaryTimeout", "timing", "peripherals", "crowd", "faults"], suggestion: "peripherals"))
    }

    @Test func theMessageSaysWhereAndWhatToWrite() throws {
        let text = """
        {
          "peripherals": [
            {"address": "C0:FF:EE:00:00:01",
             "advertisingIntervall": 100}
          ]
        }
        """
        do {
            _ = try Scenario.parse(Data(text.utf8), name: "room.json")
            Issue.record("accepted")
        } catch {
            #expect(error.description.hasPrefix(
                "Scenario room.json is invalid: line 4, peripherals[0].advertisingIntervall: unknown key 'advertisingIntervall' (did you mean 'advertisingInterval'?); the keys accepted here are 'address', "),
                "\(error)")
            guard case .invalid(_, let line, _) = error else { Issue.record("\(error)"); return }
            #expect(line == 4)
        }
    }

    // MARK: Wrong types

    /// (label, JSON, path, expected, found).
    static let wrongTypes: [(String, String, String, String, String)] = [
        ("a string for a number", #"{"peripherals": [{\#(peripheral), "rssi": "loud"}]}"#, "peripherals[0].rssi", "a number", #"the string "loud""#),
        ("an object for a list", #"{"peripherals": [{\#(peripheral), "services": {}}]}"#, "peripherals[0].services", "a list", "an object"),
        ("a string for a bool", #"{"peripherals": [{\#(peripheral), "connectable": "yes"}]}"#, "peripherals[0].connectable", "true or false", #"the string "yes""#),
        ("a number for an object", #"{"timing": 5}"#, "timing", "an object", "the number 5"),
        ("a bool for a string", #"{"peripherals": [{"address": true}]}"#, "peripherals[0].address", "a string", "true"),
        ("null for a required string", #"{"peripherals": [{"address": null}]}"#, "peripherals[0].address", "a string", "null"),
        ("a fraction for a whole number", #"{"peripherals": [{\#(peripheral), "mtu": 100.5}]}"#, "peripherals[0].mtu", "a whole number", "the number 100.5"),
        ("a fraction for a count", #"{"faults": [{"neverReply": "ReadValue", "times": 1.5}]}"#, "faults[0].times", "a whole number", "the number 1.5"),
        ("a list at the top", #"[1, 2, 3]"#, "top level", "an object", "a list"),
        ("a string for a flag list", #"{"peripherals": [{\#(peripheral), "services": [{"uuid": "ff00", "characteristics": [{"uuid": "ff01", "flags": "read"}]}]}]}"#,
         "peripherals[0].services[0].characteristics[0].flags", "a list", #"the string "read""#),
    ]

    @Test(arguments: ScenarioValidationTests.wrongTypes)
    func aWrongTypeIsRefusedWithThePathAndWhatWasFound(_ label: String, _ json: String, _ path: String, _ expected: String, _ found: String) throws {
        let problem = try #require(Self.problem(json, label))
        #expect(problem == .wrongType(path: try #require(Self.path(path)), expected: expected, found: found), "\(label): \(problem)")
        #expect(problem.description == "\(path): expected \(expected), found \(found)")
    }

    // MARK: Out of range

    /// (label, JSON, path, the range's text). Every duration and count a file can hold; 1e300
    /// for those that crashed `blekit sim` (`temporaryTimeout` at start, `advertisingInterval`
    /// once a client scanned) or could, once scheduled.
    static let outOfRange: [(String, String, String, String)] = [
        ("temporaryTimeout 1e300", #"{"temporaryTimeout": 1e300}"#, "temporaryTimeout", "0.001…86400 s"),
        ("temporaryTimeout 0", #"{"temporaryTimeout": 0}"#, "temporaryTimeout", "0.001…86400 s"),
        ("advertisingInterval 1e300", #"{"peripherals": [{\#(peripheral), "advertisingInterval": 1e300}]}"#, "peripherals[0].advertisingInterval", "20…10240 ms"),
        ("advertisingInterval too short", #"{"peripherals": [{\#(peripheral), "advertisingInterval": 5}]}"#, "peripherals[0].advertisingInterval", "20…10240 ms"),
        ("timing.scale", #"{"timing": {"scale": 1e300}}"#, "timing.scale", "0…100 ×"),
        ("timing.connectionInterval", #"{"timing": {"connectionInterval": 1e300}}"#, "timing.connectionInterval", "7.5…4000 ms"),
        ("timing.disconnect", #"{"timing": {"disconnect": 1e300}}"#, "timing.disconnect", "0…3600000 ms"),
        ("timing.disconnect negative", #"{"timing": {"disconnect": -5}}"#, "timing.disconnect", "0…3600000 ms"),
        ("timing.connectTimeout", #"{"timing": {"connectTimeout": 1e300}}"#, "timing.connectTimeout", "0…3600000 ms"),
        ("a rule's every", #"{"peripherals": [{\#(peripheral), "rules": [{"on": {"every": 1e300}, "then": []}]}]}"#, "peripherals[0].rules[0].on.every", "7.5…3600000 ms"),
        ("a rule's latency", #"{"peripherals": [{\#(peripheral), "rules": [{"on": {"connect": true}, "then": [], "latency": 1e300}]}]}"#, "peripherals[0].rules[0].latency", "0…3600000 ms"),
        ("a negative latency", #"{"peripherals": [{\#(peripheral), "rules": [{"on": {"connect": true}, "then": [], "latency": -1}]}]}"#, "peripherals[0].rules[0].latency", "0…3600000 ms"),
        ("a response's packets", #"{"peripherals": [{\#(peripheral), "rules": [{"on": {"connect": true}, "then": [{"notify": "ff02", "value": "01", "packets": 1e300}]}]}]}"#,
         "peripherals[0].rules[0].then[0].packets", "1…10000000"),
        ("a response's ATT error", #"{"peripherals": [{\#(peripheral), "rules": [{"on": {"connect": true}, "then": [{"attError": 256}]}]}]}"#,
         "peripherals[0].rules[0].then[0].attError", "1…255"),
        ("a crowd's interval", #"{"crowd": {"count": 1, "interval": 1e300}}"#, "crowd.interval", "20…10240 ms"),
        ("a crowd's count", #"{"crowd": {"count": 70000}}"#, "crowd.count", "1…65535"),
        ("a crowd's rssi", #"{"crowd": {"count": 1, "rssi": 1e300}}"#, "crowd.rssi", "-127…20 dBm"),
        ("a crowd's jitter", #"{"crowd": {"count": 1, "rssiJitter": -3}}"#, "crowd.rssiJitter", "0…100 dB"),
        ("a fault's times -1", #"{"faults": [{"connect": "C0:FF:EE:00:00:01", "failure": "timeout", "times": -1}]}"#, "faults[0].times", "1…10000000"),
        ("a fault's times 0", #"{"faults": [{"neverReply": "ReadValue", "times": 0}]}"#, "faults[0].times", "1…10000000"),
        ("an ATT error fault's times", #"{"faults": [{"attError": "C0:FF:EE:00:00:01", "characteristic": "ff01", "operation": "read", "code": 14, "times": 1e300}]}"#,
         "faults[0].times", "1…10000000"),
        ("an ATT error fault's code", #"{"faults": [{"attError": "C0:FF:EE:00:00:01", "characteristic": "ff01", "operation": "read", "code": 0}]}"#,
         "faults[0].code", "1…255"),
        ("afterPackets", #"{"faults": [{"linkLoss": "C0:FF:EE:00:00:01", "afterPackets": -1}]}"#, "faults[0].afterPackets", "0…10000000"),
        ("dropEvery", #"{"faults": [{"notifications": "C0:FF:EE:00:00:01", "dropEvery": 0}]}"#, "faults[0].dropEvery", "1…10000000"),
        ("rssi", #"{"peripherals": [{\#(peripheral), "rssi": 100000}]}"#, "peripherals[0].rssi", "-127…20 dBm"),
        ("rssiJitter", #"{"peripherals": [{\#(peripheral), "rssiJitter": -1}]}"#, "peripherals[0].rssiJitter", "0…100 dB"),
        ("txPower", #"{"peripherals": [{\#(peripheral), "txPower": 1e300}]}"#, "peripherals[0].txPower", "-127…20 dBm"),
        ("mtu", #"{"peripherals": [{\#(peripheral), "mtu": 22}]}"#, "peripherals[0].mtu", "23…517"),
    ]

    @Test(arguments: ScenarioValidationTests.outOfRange)
    func aNumberOutOfRangeIsRefusedWithThePathAndTheRange(_ label: String, _ json: String, _ path: String, _ range: String) throws {
        let problem = try #require(Self.problem(json, label))
        guard case .outOfRange(let at, _, _, _) = problem else {
            Issue.record("\(label): \(problem) is not .outOfRange")
            return
        }
        #expect(at.description == path, "\(label)")
        #expect(problem.description.hasSuffix("is out of range; use \(range)"), "\(label): \(problem)")
    }

    /// Every bound of `ScenarioLimit` is what the README's table says, so the two cannot drift.
    @Test func theReadmeListsEveryBound() throws {
        let readme = try String(contentsOf: ScenarioTests.folder.deletingLastPathComponent()
            .appendingPathComponent("Sources/BleSim/README.md"), encoding: .utf8)
        let limits: [ScenarioLimit] = [.temporaryTimeout, .timingScale, .connectionInterval, .delay, .period, .advertisingInterval,
                                       .crowdCount, .count, .afterPackets, .power, .rssiJitter, .mtu, .attErrorCode]
        for limit in limits {
            let text = "\(ScenarioProblem.number(limit.range.lowerBound))…\(ScenarioProblem.number(limit.range.upperBound))"
            #expect(readme.contains(text), "the README does not give the range \(text)")
        }
    }

    @Test func aNumberTooLargeForADoubleIsRefusedWithItsLine() {
        do {
            _ = try Scenario.parse(Data("{\n  \"temporaryTimeout\":\n    1e400\n}".utf8), name: "huge.json")
            Issue.record("accepted")
        } catch {
            guard case .notJSON(_, let line, let detail) = error else { Issue.record("\(error) is not .notJSON"); return }
            #expect(line == 3)
            #expect(detail.contains("1e400"), "\(detail)")
        }
    }

    @Test func theLargestValuesLoad() throws {
        let scenario = try Scenario.parse(Data(#"""
        {"temporaryTimeout": 86400, "timing": {"scale": 100, "connectionInterval": 4000, "disconnect": 3600000, "connectTimeout": 3600000},
         "peripherals": [{"address": "C0:FF:EE:00:00:01", "advertisingInterval": 10240, "rssi": 20, "rssiJitter": 100, "txPower": -127, "mtu": 517,
                          "services": [{"uuid": "ff00", "characteristics": [{"uuid": "ff02", "flags": ["notify"]}]}],
                          "rules": [{"on": {"every": 3600000}, "then": [{"notify": "ff02", "value": "01", "packets": 10000000}], "latency": 3600000}]}],
         "crowd": {"count": 65535, "interval": 10240},
         "faults": [{"connect": "C0:FF:EE:00:00:01", "failure": "timeout", "times": 10000000},
                    {"linkLoss": "C0:FF:EE:00:00:01", "afterPackets": 0}]}
        """#.utf8))
        #expect(scenario.configuration.temporaryTimeoutSeconds == 86400)
        #expect(scenario.peripherals.count == 65536)
    }

    // MARK: No trapping conversion

    @Test func aDurationFromAnOrdinaryNumberIsThatNumber() {
        #expect(Duration.clampedMilliseconds(7.5) == .microseconds(7500))
        #expect(Duration.clampedMilliseconds(0) == .zero)
        #expect(Duration.clampedMilliseconds(-5) == .zero)
    }

    /// The numbers `Duration.milliseconds` traps on, in a child process so that a trap fails
    /// this test instead of ending the run; a wrong result is a distinct exit status.
    @Test func aDurationFromAHugeNumberOrNaNDoesNotTrap() async {
        await #expect(processExitsWith: .success) {
            let longest = Duration.milliseconds(Int64(Duration.longestSimulatedMilliseconds))
            let cases: [(Double, Duration)] = [(1e300, longest), (.infinity, longest), (.nan, .zero), (-1e300, .zero), (-.infinity, .zero)]
            for (number, expected) in cases where Duration.clampedMilliseconds(number) != expected { exit(2) }
            if TimingModel(connectionIntervalMilliseconds: 1e300, scale: 1e300).intervals(3) != longest { exit(3) }
            if TimingModel(scale: 1e300).scaled(milliseconds: 1e300) != longest { exit(4) }
        }
    }

    /// What crashed `blekit sim` (a scan with `advertisingInterval` 1e300, the expiry check with
    /// `temporaryTimeout` 1e300) and what could (a periodic rule's and a connect rule's delays),
    /// set from Swift, where no file bounds them: in a child process, so that a trap fails
    /// this test instead of ending the test run.
    @Test func hugeDurationsSetFromSwiftDoNotCrashTheSimulator() async {
        await #expect(processExitsWith: .success, "the simulator trapped on a huge duration") {
            try await ScenarioValidationTests.scanAndConnectWithHugeDurations()
        }
    }

    @BleLoop
    static func scanAndConnectWithHugeDurations() async throws {
        var configuration = Simulator.Configuration()
        configuration.temporaryTimeoutSeconds = 1e300
        let characteristic = try #require(SimUUID.full("ff01"))
        let spec = PeripheralSpec(address: "C0:FF:EE:00:00:01", advertisingIntervalMilliseconds: 1e300,
                                  services: [ServiceSpec(uuid: "ff00", characteristics: [CharacteristicSpec(uuid: characteristic, flags: ["read", "notify"])])],
                                  rules: [BehaviourRule(.periodic(milliseconds: 1e300), [.notify(characteristic: characteristic, value: Data([1]), packets: nil)]),
                                          BehaviourRule(.connect, [.setValue(characteristic: characteristic, value: Data([2]))], latencyMilliseconds: 1e300)])
        let run = try await ScenarioTests.Run.start(Scenario(configuration: configuration, peripherals: [spec]))
        defer { run.tearDown() }
        let device = try await run.discover(spec.address, adapter: "hci0")
        // Connecting takes the timing model's connection intervals (about 90 ms), so the
        // scheduler's expiry check (every 50 ms) has run by the time services resolve.
        try await run.client.bluez(device, Interface.device, "Connect")
        try await run.log.wait("ServicesResolved") { $0.changes(device, "ServicesResolved", to: .boolean(true)) }
    }

    /// `Duration.milliseconds(someDouble)` converts to whole attoseconds and traps on a huge
    /// number: in BleSim every duration made from a number goes through `clampedMilliseconds`.
    @Test func bleSimMakesNoDurationFromAnUncheckedNumber() throws {
        let sources = ScenarioTests.folder.deletingLastPathComponent().appendingPathComponent("Sources/BleSim")
        let files = try #require(FileManager.default.enumerator(atPath: sources.path)?.compactMap { $0 as? String }).filter { $0.hasSuffix(".swift") }
        #expect(files.count > 20, "\(sources.path)")
        let factory = try Regex(#"\.(milliseconds|microseconds|nanoseconds|seconds)\(([^)]*)"#)
        for file in files where !file.hasSuffix("Duration+Clamped.swift") {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            for line in text.split(separator: "\n") where !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") {
                for match in line.matches(of: factory) {
                    let argument = String(match.output[2].substring ?? "")
                    let isWhole = Int(argument) != nil || argument.hasPrefix("Int64(")
                    #expect(isWhole, "\(file): \(line.trimmingCharacters(in: .whitespaces)) makes a Duration from a number that may trap; use Duration.clampedMilliseconds")
                }
            }
        }
    }

    // MARK: Missing keys

    /// (label, JSON, path of the object, missing key).
    static let missingKeys: [(String, String, String, String)] = [
        ("a peripheral's address", #"{"peripherals": [{"name": "nameless"}]}"#, "peripherals[0]", "address"),
        ("a service's uuid", #"{"peripherals": [{\#(peripheral), "services": [{"characteristics": []}]}]}"#, "peripherals[0].services[0]", "uuid"),
        ("a characteristic's uuid", #"{"peripherals": [{\#(peripheral), "services": [{"uuid": "ff00", "characteristics": [{"flags": ["read"]}]}]}]}"#,
         "peripherals[0].services[0].characteristics[0]", "uuid"),
        ("a rule's then", #"{"peripherals": [{\#(peripheral), "rules": [{"on": {"connect": true}}]}]}"#, "peripherals[0].rules[0]", "then"),
        ("a notify's value", #"{"peripherals": [{\#(peripheral), "rules": [{"on": {"connect": true}, "then": [{"notify": "ff02"}]}]}]}"#,
         "peripherals[0].rules[0].then[0]", "value"),
        ("an adapter's address", #"{"adapters": [{"name": "hci0"}]}"#, "adapters[0]", "address"),
        ("a crowd's count", #"{"crowd": {"interval": 100}}"#, "crowd", "count"),
        ("a connect fault's failure", #"{"faults": [{"connect": "C0:FF:EE:00:00:01"}]}"#, "faults[0]", "failure"),
        ("a link loss's afterPackets", #"{"faults": [{"linkLoss": "C0:FF:EE:00:00:01"}]}"#, "faults[0]", "afterPackets"),
        ("an ATT error fault's code", #"{"faults": [{"attError": "C0:FF:EE:00:00:01", "characteristic": "ff01", "operation": "read"}]}"#, "faults[0]", "code"),
    ]

    @Test(arguments: ScenarioValidationTests.missingKeys)
    func aMissingRequiredKeyIsRefusedWithThePathAndTheKey(_ label: String, _ json: String, _ path: String, _ key: String) throws {
        let problem = try #require(Self.problem(json, label))
        #expect(problem == .missingKey(path: try #require(Self.path(path)), key: key), "\(label): \(problem)")
        #expect(problem.description == "\(path): missing key '\(key)', which is required here")
    }

    // MARK: Choices and names

    @Test func anObjectOfTwoKindsOrOfNoneIsRefused() throws {
        let both = try #require(Self.problem(#"{"faults": [{"connect": "C0:FF:EE:00:00:01", "linkLoss": "C0:FF:EE:00:00:01", "failure": "timeout"}]}"#))
        #expect(both == .conflictingKeys(path: ScenarioPath([.key("faults"), .index(0)]), keys: ["connect", "linkLoss"]))
        let none = try #require(Self.problem(#"{"faults": [{"times": 2}]}"#))
        #expect(none == .missingChoice(path: ScenarioPath([.key("faults"), .index(0)]),
                                       oneOf: ["connect", "linkLoss", "attError", "notifications", "neverReply", "accessDenied"]))
        let twoNotificationFaults = try #require(Self.problem(#"{"faults": [{"notifications": "C0:FF:EE:00:00:01", "duplicate": true, "reorder": true}]}"#))
        #expect(twoNotificationFaults == .conflictingKeys(path: ScenarioPath([.key("faults"), .index(0)]), keys: ["duplicate", "reorder"]))
        let falseMarker = try #require(Self.problem(#"{"faults": [{"accessDenied": false}]}"#))
        guard case .invalidValue(let path, _, _) = falseMarker else { Issue.record("\(falseMarker)"); return }
        #expect(path.description == "faults[0].accessDenied")
    }

    /// A rule naming a characteristic the peripheral does not have never acts: it used to load
    /// without a word (`"notify": "2a99"` for 2a37), and the sensor simply stayed silent.
    @Test func aRuleNamingACharacteristicThePeripheralLacksIsRefusedWithItsPlace() throws {
        let places: [(String, String)] = [
            (#"{"on": {"write": "ff09"}, "then": [{"echo": "ff02"}]}"#, "peripherals[0].rules[0].on.write"),
            (#"{"on": {"read": "ff09"}, "then": [{"reply": "01"}]}"#, "peripherals[0].rules[0].on.read"),
            (#"{"on": {"subscribe": "ff09"}, "then": [{"disconnect": true}]}"#, "peripherals[0].rules[0].on.subscribe"),
            (#"{"on": {"every": 1000}, "then": [{"notify": "2a37", "value": "01"}]}"#, "peripherals[0].rules[0].then[0].notify"),
            (#"{"on": {"write": "ff01"}, "then": [{"attError": 14}, {"echo": "ff09"}]}"#, "peripherals[0].rules[0].then[1].echo"),
            (#"{"on": {"connect": true}, "then": [{"setValue": "ff09", "value": "01"}]}"#, "peripherals[0].rules[0].then[0].setValue"),
        ]
        for (rule, place) in places {
            let problem = try #require(Self.problem(#"{"peripherals": [{\#(Self.peripheral), "services": [\#(Self.service)], "rules": [\#(rule)]}]}"#, place))
            guard case .invalidValue(let path, _, let reason) = problem else { Issue.record("\(place): \(problem)"); continue }
            #expect(path.description == place, "\(problem)")
            #expect(reason.contains("the peripheral has no characteristic") && reason.contains("its characteristics are ff01, ff02"), "\(problem)")
        }
        // One of servicesAfterReconnect's is the peripheral's too.
        _ = try Scenario.parse(Data(#"""
        {"peripherals": [{\#(Self.peripheral), "services": [\#(Self.service)],
          "servicesAfterReconnect": [{"uuid": "ff10", "characteristics": [{"uuid": "ff11", "flags": ["notify"]}]}],
          "rules": [{"on": {"write": "0xFF01"}, "then": [{"notify": "0000ff11-0000-1000-8000-00805f9b34fb", "value": "01"}]}]}]}
        """#.utf8))
    }

    @Test func anUnknownNameIsRefusedWithTheClosestKnownOne() throws {
        let flag = try #require(Self.problem(#"{"peripherals": [{\#(Self.peripheral), "services": [{"uuid": "ff00", "characteristics": [{"uuid": "ff01", "flags": ["read", "notfy"]}]}]}]}"#))
        guard case .unknownValue(let path, "notfy", let accepted, "notify") = flag else { Issue.record("\(flag)"); return }
        #expect(path.description == "peripherals[0].services[0].characteristics[0].flags[1]")
        #expect(accepted.contains("write-without-response"))
        let failure = try #require(Self.problem(#"{"faults": [{"connect": "C0:FF:EE:00:00:01", "failure": "timout"}]}"#))
        #expect(failure == .unknownValue(path: ScenarioPath([.key("faults"), .index(0), .key("failure")]), value: "timout",
                                         accepted: ["abortByLocal", "inProgress", "neverAnswer", "timeout"], suggestion: "timeout"))
        let descriptorFlag = try #require(Self.problem(#"{"peripherals": [{\#(Self.peripheral), "services": [{"uuid": "ff00", "characteristics": [{"uuid": "ff01", "descriptors": [{"uuid": "2901", "flags": ["raed"]}]}]}]}]}"#))
        guard case .unknownValue(_, "raed", _, "read") = descriptorFlag else { Issue.record("\(descriptorFlag)"); return }
    }

    @Test func theClosestKeyIsOnlySuggestedWhenItIsClose() {
        #expect(ScenarioProblem.closest(to: "rsi", among: ["rssi", "name"]) == "rssi")
        #expect(ScenarioProblem.closest(to: "RSSI", among: ["rssi", "name"]) == "rssi")
        #expect(ScenarioProblem.closest(to: "nmae", among: ["rssi", "name"]) == "name")
        #expect(ScenarioProblem.closest(to: "colour", among: ["rssi", "name"]) == nil)
        #expect(ScenarioProblem.closest(to: "x", among: ["rssi", "mtu"]) == nil)
    }

    // MARK: Every scenario in the repository loads

    /// The package's root.
    static let root = ScenarioTests.folder.deletingLastPathComponent()

    /// Every JSON object written as a raw string literal (`#"…"#`, `#"""…"""#`) in the
    /// examples, tests, benchmarks and blekit that is a scenario (holds one of its top-level
    /// keys) or a peripheral file for `blekit serve` (holds `services`), by place; literals with
    /// interpolation are left out (they run in their own tests).
    static func embeddedScenarios() throws -> [(place: String, json: String)] {
        let refusedOnPurpose: Set<String> = ["Tests/BleSimTests/ScenarioTests.swift", "Tests/BleSimTests/ScenarioValidationTests.swift",
                                             "Tests/BleReliabilityTests/BadInputTests.swift"]
        let scenarioKeys: Set<String> = ["adapters", "temporaryTimeout", "timing", "peripherals", "crowd", "faults"]
        let literal = try Regex(##"#"""\n(.*?)\n[ \t]*"""#|#"(\{[^\n]*?\})"#"##).dotMatchesNewlines()
        var found: [(String, String)] = []
        for folder in ["Examples", "Tests", "Benchmarks", "Sources/blekit"] {
            let base = root.appendingPathComponent(folder)
            let files = FileManager.default.enumerator(atPath: base.path)?.compactMap { $0 as? String } ?? []
            for file in files where file.hasSuffix(".swift") && !refusedOnPurpose.contains("\(folder)/\(file)") {
                let text = try String(contentsOf: base.appendingPathComponent(file), encoding: .utf8)
                for match in text.matches(of: literal) {
                    guard let body = (match.output[1].substring ?? match.output[2].substring).map(String.init), !body.contains(##"\#("##),
                          var object = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any] else { continue }
                    if scenarioKeys.isDisjoint(with: object.keys) {
                        // A peripheral file for `blekit serve`, which supplies the address.
                        guard object["services"] != nil else { continue }
                        if object["address"] == nil { object["address"] = "00:00:00:00:00:00" }
                        let wrapped = try JSONSerialization.data(withJSONObject: ["peripherals": [object]])
                        found.append(("\(folder)/\(file)", String(decoding: wrapped, as: UTF8.self)))
                        continue
                    }
                    found.append(("\(folder)/\(file)", body))
                }
            }
        }
        return found
    }

    @Test func everyScenarioWrittenInTheRepositoryLoads() throws {
        let scenarios = try Self.embeddedScenarios()
        #expect(scenarios.count >= 10, "found only \(scenarios.map(\.place))")
        for (place, json) in scenarios {
            do {
                _ = try Scenario.parse(Data(json.utf8), name: place)
            } catch {
                Issue.record("\(error)")
            }
        }
        for file in ScenarioTests.shipped {
            do {
                _ = try Scenario.load(path: ScenarioTests.folder.appendingPathComponent(file).path)
            } catch {
                Issue.record("\(error)")
            }
        }
    }

    // MARK: blekit sim

    /// (label, the file, what `blekit sim` must print).
    static let refusedBySim: [(String, String, String)] = [
        ("a misspelled key", #"{"peripherals": [{"address": "C0:FF:EE:00:00:01", "advertisingIntervall": 100}]}"#,
         "is invalid: line 1, peripherals[0].advertisingIntervall: unknown key 'advertisingIntervall' (did you mean 'advertisingInterval'?); the keys accepted here are 'address', "),
        ("a huge interval", #"{"peripherals": [{"address": "C0:FF:EE:00:00:01", "advertisingInterval": 1e300}]}"#,
         "is invalid: line 1, peripherals[0].advertisingInterval: 1e+300 ms is out of range; use 20…10240 ms"),
        ("a huge temporary timeout", #"{"temporaryTimeout": 1e300}"#,
         "is invalid: line 1, temporaryTimeout: 1e+300 s is out of range; use 0.001…86400 s"),
        ("a rule on a characteristic it lacks", #"{"peripherals": [{"address": "C0:FF:EE:00:00:01", "services": [{"uuid": "180d", "characteristics": [{"uuid": "2a37", "flags": ["notify"]}]}], "rules": [{"on": {"every": 1000}, "then": [{"notify": "2a99", "value": "0048"}]}]}]}"#,
         "is invalid: line 1, peripherals[0].rules[0].then[0].notify: the peripheral has no characteristic 2a99, so this rule would never act; its characteristics are 2a37"),
    ]

    @Test(arguments: ScenarioValidationTests.refusedBySim)
    func blekitSimRefusesAnInvalidScenarioWithTheMessageAndFails(_ label: String, _ json: String, _ message: String) async throws {
        let blekit = try #require(Subprocess.builtProduct("blekit"), "blekit is built next to the test bundle")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("blesim-\(UUID().uuidString.prefix(8)).json")
        try Data(json.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let process = try Subprocess([blekit, "sim", file.path], environment: ProcessInfo.processInfo.environment)
        let ended = await process.waitForEnd()
        let status = await process.finish()
        #expect(ended, "\(label): blekit sim kept running: \(process.text)")
        #expect(status == 1, "\(label): exit status \(status.map(String.init) ?? "none (killed by a signal)"): \(process.text)")
        #expect(process.text.contains("blekit sim: Scenario \(file.path) \(message)"), "\(label): \(process.text)")
        #expect(!process.text.contains("DBUS_SYSTEM_BUS_ADDRESS"), "\(label): it must not start serving")
    }

    /// `peripherals[0].rssi` as a path.
    static func path(_ text: String) -> ScenarioPath? {
        guard text != "top level" else { return ScenarioPath() }
        var components: [ScenarioPath.Component] = []
        for part in text.split(separator: ".") {
            var rest = Substring(part)
            if let bracket = rest.firstIndex(of: "[") {
                components.append(.key(String(rest[..<bracket])))
                rest = rest[bracket...]
                while rest.hasPrefix("["), let close = rest.firstIndex(of: "]"), let index = Int(rest[rest.index(after: rest.startIndex)..<close]) {
                    components.append(.index(index))
                    rest = rest[rest.index(after: close)...]
                }
                guard rest.isEmpty else { return nil }
            } else {
                components.append(.key(String(rest)))
            }
        }
        return ScenarioPath(components)
    }
}
