import Foundation
import Testing

/// Examples/DeviceManager (FXBlueTooth's README manager as a program) against BleSim: every
/// step of the README's flow shows in its transcript, and a broken device fails it loudly.
@Suite(.serialized) struct DeviceManagerRunTests {
    @Test func theReadmeManagerRunsEveryStepAndPasses() async throws {
        let (status, output) = try await ExampleRunTests.run("DeviceManager")
        for expected in ["✓ crowded room: heard 15", "扫描到 1 台设备", "  - MyDevice-01, RSSI: -50",
                         "✓ scan and filter: the README's filter kept MyDevice-01", "连接成功：MyDevice-01",
                         "✓ connect: connected; FFE1/FFE2 ready", "✓ single-packet command: QueryStatus 响应：AA 01 00 55",
                         "✓ multi-packet command: BB 02 00 FF → 3 packets", "✓ streaming command: 3 pushes",
                         "✓ link loss: 断开连接：MyDevice-01", "✓ automatic reconnect", "✓ command after the reconnect: QueryStatus 响应：AA 01 00 55",
                         "verdict: DeviceManager passed: 9 of 9 steps"] {
            #expect(output.contains(expected), "missing \(expected)\n\(output)")
        }
        #expect(!output.contains("OtherVendor-7, RSSI"), "the README's filter let the look-alike through\n\(output)")
        #expect(status == 0, "\(output)")
    }

    @Test func aDeviceThatNeverAnswersTheMultiPacketCommandFailsTheRun() async throws {
        let (status, output) = try await ExampleRunTests.run("DeviceManager", ["--sim", "--sim-fault", "no-multi-packet", "--step-deadline", "3"])
        #expect(status == 1, "\(output)")
        #expect(output.contains("✗ multi-packet command: no 3-packet answer"), "\(output)")
        #expect(output.contains("verdict: DeviceManager FAILED (failed: multi-packet command"), "\(output)")
    }

    @Test func noMatchingDeviceFailsTheRunAndSaysWhatNeverRan() async throws {
        let (status, output) = try await ExampleRunTests.run("DeviceManager", ["--sim", "--sim-fault", "no-device", "--step-deadline", "2"])
        #expect(status == 1, "\(output)")
        #expect(output.contains("✗ crowded room: no device named MyDevice*"), "\(output)")
        #expect(output.contains("never ran: scan and filter, connect"), "\(output)")
    }
}
