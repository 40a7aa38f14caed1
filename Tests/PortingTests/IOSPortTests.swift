import BleCore
import BleDBus
import BleSim
import BleTestSupport
import Foundation
import Testing

/// Issue 24: iOS code ported by changing imports, tried from outside. Seeds 000 and 001's
/// peripherals (in the Swift 5 IOSConformance fixture) serve bleak, a real outside central;
/// what cannot be supported fails to compile or is named by scripts/check-ios-port; the rest of
/// the iOS API the seeds use exists and tells the truth.
@Suite(.serialized) struct IOSPortTests {
    static let root = IOSConformanceTests.root

    /// Runs `command` to its end; its status and standard output and error together.
    static func run(_ command: [String], environment: [String: String]? = nil, timeout: TimeInterval = 60) async throws -> (status: Int32?, output: String) {
        let child = try ChildProcess(arguments: ["/bin/sh", "-c", "exec \"$@\" 2>&1", "sh"] + command, environment: environment, standardErrorPath: nil)
        return await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: child.runToCompletion(timeout: TestTime.scaled(timeout))) }
        }
    }

    /// bleak's Python (scripts/bleak-python's venv); the test fails with the reason when it is missing.
    static func bleakPython() async throws -> String {
        if let python = ProcessInfo.processInfo.environment["BLEKIT_BLEAK_PYTHON"] { return python }
        let (status, output) = try await run([root.appendingPathComponent("scripts/bleak-python").path], timeout: 300)
        let python = output.split(separator: "\n").last.map(String.init) ?? ""
        try #require(status == 0 && FileManager.default.isExecutableFile(atPath: python),
                     "bleak is needed: scripts/bleak-python installs it into .build/bleak-venv (make test runs it); it said: \(output)")
        return python
    }

    /// bleak on hci1 as the central: finds the service, subscribes, writes, and prints what it hears.
    static let bleakCentral = #"""
import asyncio, json, sys
from bleak import BleakClient, BleakScanner

ADAPTER, SERVICE, WRITE, NOTIFY, VALUE, EXPECT = sys.argv[1:7]

def say(**fields):
    print(json.dumps(fields), flush=True)

async def main():
    device = None
    for _ in range(10):
        device = await BleakScanner.find_device_by_filter(lambda d, adv: SERVICE in adv.service_uuids, timeout=4.0, bluez={"adapter": ADAPTER})
        if device:
            break
    if device is None:
        raise RuntimeError(f"no device with {SERVICE} on {ADAPTER}")
    say(step="found", address=device.address)
    async with BleakClient(device, timeout=30.0) as client:
        got = []
        arrived = asyncio.Event()
        def on_value(_, data):
            got.append(bytes(data))
            if len(got) >= int(EXPECT):
                arrived.set()
        await client.start_notify(NOTIFY, on_value)
        say(step="subscribed")
        await client.write_gatt_char(WRITE, bytes.fromhex(VALUE), response=True)
        say(step="wrote")
        await asyncio.wait_for(arrived.wait(), 20.0)
        say(step="notified", values=[value.hex() for value in got])
        if NOTIFY != WRITE or "read" in sys.argv[7:]:
            pass
        if "read" in sys.argv[7:]:
            say(step="read", value=(await client.read_gatt_char(WRITE)).hex())
asyncio.run(main())
"""#

    static func writeScript() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("blekit-ios-port-\(UUID().uuidString.prefix(6)).py").path
        try Self.bleakCentral.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test @BleLoop func seed001sPeripheralPortedByItsImportServesBleak() async throws {
        let python = try await Self.bleakPython()
        let script = try Self.writeScript()
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        let peripheral = try ChildProcess(arguments: [IOSConformanceTests.fixtureBinary, "seed001", "--bus", fixture.bus.address, "--adapter", "hci0"],
                                          standardErrorPath: nil)
        defer { peripheral.stop() }
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = fixture.bus.address
        let bleak = try ChildProcess(arguments: [python, script, "hci1", "12345678-1234-1234-1234-1234567890ab", "12345678-1234-1234-1234-1234567890ac",
                                                 "12345678-1234-1234-1234-1234567890ad", Data("你好 from bleak".utf8).map { String(format: "%02x", $0) }.joined(), "1"],
                                     environment: environment, standardErrorPath: nil)
        defer { bleak.stop() }
        // The seed prints what a central wrote; its UI's sendMessage is a line on its stdin here.
        _ = try await IOSConformanceTests.lines(of: peripheral, until: "收到消息：你好 from bleak", timeout: 60)
        peripheral.writeLine("hello from the seed")
        let heard = try await IOSConformanceTests.lines(of: bleak, until: "\"notified\"", timeout: 30)
        let hex = Data("hello from the seed".utf8).map { String(format: "%02x", $0) }.joined()
        #expect(heard.last?.contains("\"values\": [\"\(hex)\"]") == true, "\(heard)")
    }

    @Test @BleLoop func seed000sLEDPeripheralServesBleak() async throws {
        let python = try await Self.bleakPython()
        let script = try Self.writeScript()
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        let peripheral = try ChildProcess(arguments: [IOSConformanceTests.fixtureBinary, "seed000", "--bus", fixture.bus.address, "--adapter", "hci0"],
                                          standardErrorPath: nil)
        defer { peripheral.stop() }
        _ = try await IOSConformanceTests.lines(of: peripheral, until: "开始广播", timeout: 30)
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = fixture.bus.address
        // Subscribing brings the LED's state (off), the write switches it on and notifies it.
        let bleak = try ChildProcess(arguments: [python, script, "hci1", "0000ffe0-0000-1000-8000-00805f9b34fb", "0000ffe1-0000-1000-8000-00805f9b34fb",
                                                 "0000ffe1-0000-1000-8000-00805f9b34fb", "01", "2", "read"],
                                     environment: environment, standardErrorPath: nil)
        defer { bleak.stop() }
        let heard = try await IOSConformanceTests.lines(of: bleak, until: "\"read\"", timeout: 60)
        #expect(heard.contains { $0.contains("\"values\": [\"00\", \"01\"]") }, "\(heard)")
        #expect(heard.last?.contains("\"value\": \"01\"") == true, "\(heard)")
        _ = try await IOSConformanceTests.lines(of: peripheral, until: "LED 开", timeout: 10)
    }

    @Test func theGeneratedConformanceFilesAndPortingTableAreUpToDate() async throws {
        let (status, output) = try await Self.run([Self.root.appendingPathComponent("scripts/generate-ios-conformance").path, "--check"])
        #expect(status == 0, "\(output)")
    }

    /// The C modules and headers BleCore's interface needs, for a compile outside SwiftPM.
    static func compilerFlags() async throws -> [String] {
        let modules = URL(fileURLWithPath: IOSConformanceTests.fixtureBinary).deletingLastPathComponent()
        let (status, includes) = try await run(["pkg-config", "--cflags-only-I", "glib-2.0", "dbus-1"])
        try #require(status == 0, "pkg-config: \(includes)")
        return ["-I", modules.appendingPathComponent("Modules").path,
                "-Xcc", "-fmodule-map-file=\(root.appendingPathComponent("Sources/CGLib/module.modulemap").path)",
                "-Xcc", "-fmodule-map-file=\(root.appendingPathComponent("Sources/CDBus/module.modulemap").path)",
                "-Xcc", "-fmodule-map-file=\(modules.appendingPathComponent("CSocketShim.build/module.modulemap").path)",
                "-Xcc", "-I", "-Xcc", root.appendingPathComponent("Sources/CSocketShim/include").path]
            + includes.split(separator: " ").flatMap { ["-Xcc", String($0).trimmingCharacters(in: .whitespacesAndNewlines)] }
    }

    @Test func delegateMethodsBleKitCannotSupportFailToCompileWithTheirMessage() async throws {
        let folder = Self.root.appendingPathComponent("Tests/IOSConformance/CompileFail")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".swift") }.sorted()
        #expect(files.count == 5, "\(files)")
        let flags = try await Self.compilerFlags()
        for file in files {
            let path = folder.appendingPathComponent(file).path
            let source = try String(contentsOfFile: path, encoding: .utf8)
            let expected = try #require(source.split(separator: "\n").first { $0.hasPrefix("// expect: ") }).dropFirst("// expect: ".count)
            let (status, output) = try await Self.run(["swiftc", "-typecheck", "-swift-version", "5"] + flags + [path])
            #expect(status != 0, "\(file) compiled, so its method would be silently never called:\n\(output)")
            #expect(output.contains("error: \(expected):"), "\(file): expected \(expected) with a message\n\(output)")
        }
        // The same flags compile what should compile: the harness cannot pass by failing everything.
        let control = FileManager.default.temporaryDirectory.appendingPathComponent("blekit-compile-control-\(UUID().uuidString.prefix(6)).swift")
        try """
        import BleCore
        final class Probe: NSObject, CBPeripheralDelegate {
            func peripheral(_ peripheral: CBPeripheral, didDiscoverIncludedServicesFor service: CBService, error: (any Error)?) {}
        }
        """.write(to: control, atomically: true, encoding: .utf8)
        let (status, output) = try await Self.run(["swiftc", "-typecheck", "-swift-version", "5"] + flags + [control.path])
        #expect(status == 0, "\(output)")
    }

    @Test func checkIOSPortNamesTheMethodsBleKitWillNeverCall() async throws {
        let script = Self.root.appendingPathComponent("scripts/check-ios-port").path
        let generated = Self.root.appendingPathComponent("Tests/IOSConformance/Generated").path
        let (status, output) = try await Self.run([script, generated])
        #expect(status == 1, "\(output)")
        #expect(output.contains("centralManager(_:didUpdateANCSAuthorizationFor:) is never called on Linux"), "\(output)")
        #expect(output.contains("peripheralDidUpdateRSSI(_:error:) is never called on Linux"), "\(output)")
        #expect(output.contains("peripheralDidInvalidateServices(_:) is never called on Linux"), "\(output)")
        #expect(output.components(separatedBy: "is never called").count == 4, "\(output)")

        let ported = FileManager.default.temporaryDirectory.appendingPathComponent("blekit-ported-\(UUID().uuidString.prefix(6)).swift")
        try """
        class Server: NSObject, CBPeripheralManagerDelegate {
            func peripheralManager(_ peripheral: CBPeripheralManager, didAdd service: CBMutableService, error: Error?) {}
            func peripheralManager(_ peripheral: CBPeripheralManager,
                                   central: CBCentral, didSubscribeTo characteristic: CBCharacteristic) {}
        }
        """.write(to: ported, atomically: true, encoding: .utf8)
        let (mistyped, said) = try await Self.run([script, ported.path])
        #expect(mistyped == 1, "\(said)")
        #expect(said.contains(":2: peripheralManager(_:didAdd:error:) has parameter types (CBPeripheralManager, CBMutableService, Error?)"), "\(said)")
        #expect(!said.contains("didSubscribeTo"), "\(said)")

        // The examples and seed ports use Apple's signatures throughout.
        let (clean, cleanOutput) = try await Self.run([script, Self.root.appendingPathComponent("Examples").path,
                                                       Self.root.appendingPathComponent("Tests/IOSConformance/Fixture").path])
        #expect(clean == 0, "\(cleanOutput)")
    }

    @Test func cbuuidStringConstantsAreTheStandardDescriptors() {
        #expect(CBUUID(string: CBUUIDCharacteristicUserDescriptionString) == BluetoothUUID(UInt16(0x2901)))
        #expect(CBUUID(string: CBUUIDClientCharacteristicConfigurationString) == BluetoothUUID(UInt16(0x2902)))
        #expect(CBUUID(string: CBUUIDCharacteristicFormatString) == BluetoothUUID(UInt16(0x2904)))
        #expect(CBUUID(string: CBUUIDCharacteristicExtendedPropertiesString) == BluetoothUUID(UInt16(0x2900)))
        #expect(CBUUID(string: CBUUIDServiceChangedString) == BluetoothUUID(UInt16(0x2A05)))
        // The non-trapping parser: the string is a valid 128-bit UUID.
        #expect(BluetoothUUID(CBUUIDL2CAPPSMCharacteristicString) != nil)
    }
}

/// `CBManager.authorization` from bluetoothd's D-Bus policy, as seed 002 switches on it.
@Suite(.serialized) struct AuthorizationTests {
    /// Loop-confined: both managers deliver on the loop (`queue: nil`), checked at run time.
    @BleLoop
    final class StateWatcher: @preconcurrency CentralManagerDelegate, @preconcurrency PeripheralManagerDelegate {
        let states: EventRecorder<ManagerState>
        /// `CBManager.authorization` asked inside each callback, on the loop, as seed 002 does.
        var classVerdicts: [ManagerAuthorization] = []
        init() { states = EventRecorder<ManagerState>() }
        func centralManagerDidUpdateState(_ central: CBCentralManager) {
            classVerdicts.append(CBManager.authorization)
            states.append(central.state)
        }
        func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
            classVerdicts.append(CBManager.authorization)
            states.append(peripheral.state)
        }
    }

    @Test func aBusThatLetsUsTalkToBluetoothdIsAllowedAlways() async throws {
        let fixture = try await SimulatorFixture.start()
        let bus = await fixture.bus.address
        defer { Task { @BleLoop in fixture.tearDown() } }
        #expect(Manager.authorization(on: .address(bus)) == .allowedAlways)
        let watcher = await StateWatcher()
        let central = CBCentralManager(delegate: watcher, queue: nil, options: CentralManagerOptions(bus: .address(bus)))
        defer { central.close() }
        #expect(central.authorization == .notDetermined || central.state != .unknown)
        try await watcher.states.wait("poweredOn") { $0.contains(.poweredOn) }
        #expect(central.authorization == .allowedAlways)
        #expect(await watcher.classVerdicts.last == .allowedAlways, "CBManager.authorization inside the callback")
    }

    @Test func aPolicyThatRefusesOrgBluezIsDeniedForTheClassAndBothManagers() async throws {
        let bus = try await PrivateBus.start(denyingCallsTo: "org.bluez")
        let fixture = try await SimulatorFixture.start(on: bus)
        defer { Task { @BleLoop in fixture.tearDown() } }
        #expect(Manager.authorization(on: .address(bus.address)) == .denied)
        let watcher = await StateWatcher()
        let central = CBCentralManager(delegate: watcher, queue: nil, options: CentralManagerOptions(bus: .address(bus.address)))
        defer { central.close() }
        let peripheral = CBPeripheralManager(delegate: watcher, queue: nil, options: PeripheralManagerOptions(bus: .address(bus.address)))
        defer { peripheral.close() }
        try await watcher.states.wait("both unauthorized") { $0.filter { $0 == .unauthorized }.count >= 2 }
        #expect(central.state == .unauthorized && central.authorization == .denied)
        #expect(peripheral.state == .unauthorized && peripheral.authorization == .denied)
        #expect(central.stateError?.description.contains("bluetooth' group") == true)
    }

    @Test func noBluetoothdOnTheBusIsNotDetermined() async throws {
        let bus = try await PrivateBus.start()
        defer { bus.stop() }
        #expect(Manager.authorization(on: .address(bus.address)) == .notDetermined)
        #expect(Manager.authorization(on: .address("unix:path=/nonexistent/blekit-authorization")) == .notDetermined)
    }
}
