import BleCore
import BleDBus
import BleSim
import BleTestSupport
import Foundation
import Testing

/// Issue 24: iOS delegate code with Apple's exact signatures is the code BleKit calls. The list
/// of Apple's methods (Tests/IOSConformance/AppleDelegateAPI.txt) generates one class per
/// delegate protocol (Swift 5 mode, in the IOSConformance fixture), which a two-process
/// central ↔ peripheral flow drives on BleSim; each method the list marks as part of the flow
/// must fire, in order, and none that BleKit must not call does.
@Suite(.serialized) struct IOSConformanceTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    struct AppleMethod {
        let proto: String
        let status: String
        let flow: String
        let event: String
    }

    /// The list, with each method's event name as the generated classes report it.
    static func appleMethods() throws -> [AppleMethod] {
        let text = try String(contentsOf: root.appendingPathComponent("Tests/IOSConformance/AppleDelegateAPI.txt"), encoding: .utf8)
        var methods: [(AppleMethod, selector: String, secondType: String)] = []
        for line in text.split(separator: "\n") where !line.hasPrefix("#") && !line.trimmingCharacters(in: .whitespaces).isEmpty {
            let fields = line.components(separatedBy: " | ").map { $0.trimmingCharacters(in: .whitespaces) }
            let signature = fields[3]
            let name = String(signature.dropFirst(5).prefix { $0 != "(" })
            let inside = signature[signature.index(after: signature.firstIndex(of: "(")!)..<signature.index(before: signature.endIndex)]
            var labels: [String] = []
            var types: [String] = []
            var depth = 0
            var current = ""
            for character in inside + "," {
                if "([".contains(character) { depth += 1 }
                if ")]".contains(character) { depth -= 1 }
                if character == ",", depth == 0 {
                    let parts = current.split(separator: ":", maxSplits: 1)
                    labels.append(String(parts[0].split(separator: " ").first ?? ""))
                    types.append(parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : "")
                    current = ""
                } else {
                    current.append(character)
                }
            }
            let selector = name + "(" + labels.map { "\($0):" }.joined() + ")"
            methods.append((AppleMethod(proto: fields[0], status: fields[1], flow: fields[2], event: selector), selector, types.count > 1 ? types[1] : ""))
        }
        return methods.map { entry in
            let shared = methods.filter { $0.selector == entry.selector }.count > 1
            let method = entry.0
            return AppleMethod(proto: method.proto, status: method.status, flow: method.flow,
                               event: shared ? "\(entry.selector) \(entry.secondType)" : entry.selector)
        }
    }

    static var fixtureBinary: String {
        let me = URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0])
        return me.deletingLastPathComponent().appendingPathComponent("IOSConformance").path
    }

    /// Lines of `child` up to and including the first that contains `marker`.
    static func lines(of child: ChildProcess, until marker: String, timeout: TimeInterval, transcript: String? = nil) async throws -> [String] {
        let deadline = Date().addingTimeInterval(TestTime.scaled(timeout))
        let collected: [String] = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                var lines: [String] = []
                while let line = child.readLine(before: deadline) {
                    lines.append(line)
                    if line.contains(marker) || line.hasPrefix("FLOW FAILED") { break }
                }
                continuation.resume(returning: lines)
            }
        }
        if let transcript {
            // Kept for a person reading a failure: what each process printed, in order.
            let before = (try? String(contentsOfFile: transcript, encoding: .utf8)) ?? ""
            try? (before + collected.map { "\(marker.prefix(12)) \($0)\n" }.joined()).write(toFile: transcript, atomically: true, encoding: .utf8)
        }
        try #require(collected.last?.contains(marker) == true,
                     "no \(marker) within \(timeout) s; the process printed:\n\(collected.joined(separator: "\n"))\n(all: \(transcript ?? "-"))")
        return collected
    }

    static func events(_ lines: [String]) -> [String] {
        lines.compactMap { line in
            guard line.hasPrefix("EVENT ") else { return nil }
            return String(line.dropFirst(6).components(separatedBy: " | ")[0])
        }
    }

    /// `expected` appear in `events` in this order (other events may come between).
    static func inOrder(_ expected: [String], _ events: [String]) -> String? {
        var rest = events[...]
        for event in expected {
            guard let index = rest.firstIndex(of: event) else { return "\(event) did not fire after the ones before it" }
            rest = rest[(index + 1)...]
        }
        return nil
    }

    @Test @BleLoop func everyDelegateMethodOfTheFlowFiresInOrderAndNoneBleKitMustNotCall() async throws {
        let methods = try Self.appleMethods()
        let fixture = try await SimulatorFixture.start()
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("ios-conformance-\(UUID().uuidString.prefix(6)).log").path
        let peripheral = try ChildProcess(arguments: [Self.fixtureBinary, "peripheral", "--bus", fixture.bus.address, "--adapter", "hci0"],
                                          standardErrorPath: log)
        var central: ChildProcess?
        defer {
            central?.stop()
            peripheral.stop()
            fixture.tearDown()
        }
        var peripheralLines = try await Self.lines(of: peripheral, until: "EVENT peripheralManagerDidStartAdvertising(_:error:)", timeout: 20, transcript: log + ".transcript")
        let centralProcess = try ChildProcess(arguments: [Self.fixtureBinary, "central", "--bus", fixture.bus.address, "--adapter", "hci1"],
                                              standardErrorPath: log)
        central = centralProcess
        var centralLines = try await Self.lines(of: centralProcess, until: "READY FOR FAILING CONNECT", timeout: 40, transcript: log + ".transcript")
        // The central connects once more: BleSim refuses that connect, for didFailToConnect.
        let noted = centralLines.first { $0.hasPrefix("NOTE address ") }
        let peripheralAddress = try #require(noted.map { String($0.dropFirst("NOTE address ".count)) }, "\(centralLines)")
        fixture.simulator.faults.failConnect(peripheralAddress, with: .inProgress, times: nil)
        centralProcess.writeLine("")
        centralLines += try await Self.lines(of: centralProcess, until: "FLOW DONE", timeout: 30, transcript: log + ".transcript")
        peripheralLines += try await Self.lines(of: peripheral, until: "EVENT peripheralManager(_:central:didUnsubscribeFrom:)", timeout: 20)
        // bluetoothd restarts under the serving peripheral: its restore identifier makes
        // willRestoreState due, with what BleKit registers again, before poweredOn.
        try await fixture.simulator.restart(.clean, on: fixture.bus.busAddress)
        peripheralLines += try await Self.lines(of: peripheral, until: "EVENT peripheralManager(_:willRestoreState:)", timeout: 20)
        peripheralLines += try await Self.lines(of: peripheral, until: "EVENT peripheralManagerDidUpdateState(_:) | poweredOn", timeout: 20)
        let transcript = "central:\n" + centralLines.joined(separator: "\n") + "\nperipheral:\n" + peripheralLines.joined(separator: "\n")

        let centralEvents = Self.events(centralLines)
        let peripheralEvents = Self.events(peripheralLines)
        let fired = Set(centralEvents + peripheralEvents)
        for method in methods where method.flow == "yes" {
            #expect(fired.contains(method.event), "\(method.proto) \(method.event) never fired\n\(transcript)")
        }
        // Never called: the flagged methods, and the pre-iOS 17 disconnect form once the iOS 17 one is implemented.
        for method in methods where method.status == "flagged" {
            #expect(!fired.contains(method.event), "\(method.event) fired\n\(transcript)")
        }
        #expect(!fired.contains("centralManager(_:didDisconnectPeripheral:error:)"), "both disconnect forms fired\n\(transcript)")

        let centralOrder = [
            "centralManagerDidUpdateState(_:)", "centralManager(_:didDiscover:advertisementData:rssi:)", "centralManager(_:didConnect:)",
            "peripheral(_:didDiscoverServices:)", "peripheral(_:didDiscoverIncludedServicesFor:error:)",
            "peripheral(_:didDiscoverCharacteristicsFor:error:)", "peripheral(_:didDiscoverDescriptorsFor:error:)",
            "peripheral(_:didUpdateValueFor:error:) CBCharacteristic", "peripheral(_:didWriteValueFor:error:) CBCharacteristic",
            "peripheral(_:didUpdateValueFor:error:) CBDescriptor", "peripheral(_:didWriteValueFor:error:) CBDescriptor",
            "peripheral(_:didUpdateNotificationStateFor:error:)", "peripheral(_:didUpdateValueFor:error:) CBCharacteristic",
            "peripheral(_:didReadRSSI:error:)", "peripheral(_:didUpdateNotificationStateFor:error:)",
            "centralManager(_:didDisconnectPeripheral:timestamp:isReconnecting:error:)", "centralManager(_:didFailToConnect:error:)",
        ]
        let peripheralOrder = [
            "peripheralManagerDidUpdateState(_:)", "peripheralManager(_:didAdd:error:)", "peripheralManager(_:didAdd:error:)",
            "peripheralManagerDidStartAdvertising(_:error:)", "peripheralManager(_:didReceiveRead:)", "peripheralManager(_:didReceiveWrite:)",
            "peripheralManager(_:central:didSubscribeTo:)", "peripheralManagerIsReady(toUpdateSubscribers:)",
            "peripheralManager(_:central:didUnsubscribeFrom:)", "peripheralManager(_:willRestoreState:)", "peripheralManagerDidUpdateState(_:)",
        ]
        #expect(Self.inOrder(centralOrder, centralEvents) == nil, "\(Self.inOrder(centralOrder, centralEvents) ?? "")\n\(transcript)")
        #expect(Self.inOrder(peripheralOrder, peripheralEvents) == nil, "\(Self.inOrder(peripheralOrder, peripheralEvents) ?? "")\n\(transcript)")

        // What the events carried: the served objects themselves, the included service, the
        // notified value, the restored services, and the authorization both processes saw.
        let text = centralLines.joined(separator: "\n") + "\n" + peripheralLines.joined(separator: "\n")
        for expected in ["didDiscoverIncludedServicesFor:error:) | [\"B1E4C002-0000-4000-8000-00805F9B34FB\"] ok",
                         "didSubscribeTo:) | B1E4C011-0000-4000-8000-00805F9B34FB is the served one: true",
                         "CBCharacteristic | notified hello 0 ok", "CBCharacteristic | read 2a ok",
                         "didReceiveWrite:) | hi", "isReconnecting false fresh true ok",
                         "willRestoreState:) | services [\"B1E4C001-0000-4000-8000-00805F9B34FB\", \"B1E4C002-0000-4000-8000-00805F9B34FB\"] name BleKit-Conformance",
                         "centralManagerDidUpdateState(_:) | poweredOn authorization allowedAlways",
                         "peripheralManagerDidUpdateState(_:) | poweredOn authorization allowedAlways"] {
            #expect(text.contains(expected), "missing \(expected)\n\(transcript)")
        }
        #expect(centralLines.contains("NOTE authorization class allowedAlways") && peripheralLines.contains("NOTE authorization class allowedAlways"), "\(transcript)")
    }
}

/// iOS-shaped: only `peripheralDidUpdateName(_:)` with Apple's signature. Loop-confined: the
/// manager delivers on its loop (`queue: nil`), which `@preconcurrency` checks at run time.
@BleLoop
final class NameWatcher: NSObject, @preconcurrency CBCentralManagerDelegate, @preconcurrency CBPeripheralDelegate {
    let names = EventRecorder<String>()
    let found = EventRecorder<CBPeripheral>()

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        if central.state == .poweredOn { central.scanForPeripherals(withServices: nil, options: [CBCentralManagerScanOptionAllowDuplicatesKey: true]) }
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral, advertisementData: [String: Any], rssi RSSI: NSNumber) {
        peripheral.delegate = self
        found.append(peripheral)
    }

    func peripheralDidUpdateName(_ peripheral: CBPeripheral) {
        names.append(peripheral.name ?? "nil")
    }
}

extension IOSConformanceTests {
    @Test @BleLoop func aNameChangeReachesPeripheralDidUpdateName() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Device.spec(name: "Before")])
        defer { fixture.tearDown() }
        let watcher = NameWatcher()
        let central = CBCentralManager(delegate: watcher, queue: nil, options: CentralManagerOptions(bus: .address(fixture.bus.address)))
        defer { central.close() }
        try await watcher.found.wait(count: 1)
        fixture.simulator.peripheral(Device.address)?.updateAdvertisement { $0.name = "After" }
        try await watcher.names.wait("the new name") { $0.contains("After") }
    }
}
