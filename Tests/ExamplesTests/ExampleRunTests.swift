import BleTestSupport
import Foundation
import Testing

/// Each example, run with --sim as a user would run it: its transcript shows every step and
/// its verdict line, and its exit status follows the verdict.
@Suite(.serialized) struct ExampleRunTests {
    static func run(_ name: String, _ arguments: [String] = ["--sim"], timeout: TimeInterval = 90) async throws -> (status: Int32?, output: String) {
        let me = URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0])
        let path = me.deletingLastPathComponent().appendingPathComponent(name).path
        try #require(FileManager.default.isExecutableFile(atPath: path), "\(name) is built next to the test bundle")
        let child = try ChildProcess(arguments: [path] + arguments, standardErrorPath: nil)
        return await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: child.runToCompletion(timeout: timeout)) }
        }
    }

    @Test func centralWalkthroughPrintsEachStepAndPasses() async throws {
        let (status, output) = try await Self.run("CentralWalkthrough")
        for expected in ["✓ powered on", "✓ scan: found BleKit-Walkthrough C0:FF:EE:00:04:01", "✓ connect", "FFE0, Battery",
                         "characteristic FFE1 properties", "descriptor Client Characteristic Configuration", "✓ read: FFE1 = 00",
                         "✓ write: wrote \"hello\"", "✓ notify: notification 70696e67 (\"ping\")", "✓ disconnect",
                         "verdict: CentralWalkthrough passed: 10 of 10 steps"] {
            #expect(output.contains(expected), "missing \(expected)\n\(output)")
        }
        #expect(status == 0, "\(output)")
    }

    @Test func centralWalkthroughFailsLoudlyWhenTheDeviceIsMissing() async throws {
        let (status, output) = try await Self.run("CentralWalkthrough", ["--sim", "--name", "NoSuchDevice", "--deadline", "3"])
        #expect(status == 1, "\(output)")
        #expect(output.contains("verdict: CentralWalkthrough FAILED (never ran: scan, connect"), "\(output)")
        #expect(output.contains("gave up after 3 s"), "\(output)")
    }

    @Test func stateAndPermissionsReportsEveryStateWithAdvice() async throws {
        let (status, output) = try await Self.run("StateAndPermissions")
        for expected in ["✓ powered on", "✓ powered off: poweredOff — told: Bluetooth is off. Turn it on: `bluetoothctl power on`",
                         "✓ powered on again", "✓ no adapter: unsupported — told: There is no Bluetooth adapter",
                         "✓ adapter back", "✓ bluetoothd gone: unsupported — told: bluetoothd is not running",
                         "✓ bluetoothd back", "✓ unauthorized: unauthorized — told: This user may not use Bluetooth",
                         "sudo usermod -aG bluetooth $USER", "/etc/dbus-1/system.d/bluetooth.conf",
                         "verdict: StateAndPermissions passed: 8 of 8 steps"] {
            #expect(output.contains(expected), "missing \(expected)\n\(output)")
        }
        #expect(status == 0, "\(output)")
    }

    @Test func asyncScannerRunsTheAsyncAPIEndToEnd() async throws {
        let (status, output) = try await Self.run("AsyncScanner")
        for expected in ["✓ powered on", "✓ scan: Async-HR at -52 dBm", "✓ connect: connected to C0:FF:EE:00:05:01",
                         "✓ read battery: 87 %", "✓ notifications: 74 bpm, 74 bpm, 74 bpm", "✓ disconnect",
                         "verdict: AsyncScanner passed: 7 of 7 steps"] {
            #expect(output.contains(expected), "missing \(expected)\n\(output)")
        }
        #expect(status == 0, "\(output)")
    }

    @Test func ledControlBothRolesPass() async throws {
        let (status, output) = try await Self.run("LEDControl")
        for expected in ["✓ advertising: as BleKit-LED", "✓ found the LED: 00:AA:01:00:00:00", "✓ read state: the LED is off",
                         "✓ LED switched on: by 00:AA:01:00:00:01", "✓ switched on: the LED says it is on",
                         "✓ switched off: the LED says it is off", "✓ central left",
                         "verdict: LED central passed: 9 of 9 steps", "verdict: LED peripheral passed: 7 of 7 steps"] {
            #expect(output.contains(expected), "missing \(expected)\n\(output)")
        }
        #expect(status == 0, "\(output)")
    }

    @Test func ledCentralAloneFailsLoudlyWithoutAPeripheral() async throws {
        let (status, output) = try await Self.run("LEDControl", ["--sim", "central", "--deadline", "2"])
        #expect(status == 1, "\(output)")
        #expect(output.contains("verdict: LED central FAILED (never ran: found the LED"), "\(output)")
    }

    @Test func blekitDemoShowsBothRolesAndTheDeviceManagerFlow() async throws {
        var environment = ProcessInfo.processInfo.environment
        // No real adapter: the demo uses BleSim.
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = "unix:path=/nonexistent/blekit-demo-test.sock"
        let me = URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0])
        let blekit = me.deletingLastPathComponent().appendingPathComponent("blekit").path
        let child = try ChildProcess(arguments: [blekit, "demo"], environment: environment, standardErrorPath: nil)
        let (status, output) = await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: child.runToCompletion(timeout: 120)) }
        }
        for expected in ["using BleSim", "among 200 beacons (a crowded room)", "Part 1: both roles, as two processes",
                         "peripheral | ", "✓ LED switched on", "central    | ", "verdict: LED central passed",
                         "Part 2: the DeviceManager flow", "passed  multi-packet command", "passed  link drop and automatic reconnect",
                         "passed  command after the reconnect", "demo passed: two roles passed, DeviceManager flow passed"] {
            #expect(output.contains(expected), "missing \(expected)\n\(output)")
        }
        #expect(status == 0, "\(output)")
    }
}
