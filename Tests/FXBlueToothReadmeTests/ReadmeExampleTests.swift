import BleDBus
import BleDSL
import BleSim
import BleTestSupport
import Foundation
@testable import FXBlueToothReadme
import Testing

/// FXBlueTooth's README complete example (BlueToothManager.swift, unchanged but for its imports,
/// Swift 5 language mode) against a BleSim device that speaks its protocol: 0xAA → one packet,
/// 0xBB → three packets, 0xCC → a stream. Every command answers before and after a link loss and
/// the example's own reconnect, and the console shows what the README promises — and nothing it
/// does not (no scan error from the replaced scan, no failures).
@Suite(.serialized, .timeLimit(.minutes(TestTime.minutes(2))))
struct ReadmeExampleTests {
    static let address = "C0:FF:EE:00:FF:E0"
    static let service = "0000ffe0-0000-1000-8000-00805f9b34fb"
    static let write = "0000ffe1-0000-1000-8000-00805f9b34fb"
    static let notify = "0000ffe2-0000-1000-8000-00805f9b34fb"

    /// "MyDevice-01" advertising FFE0; FFE1 takes commands, FFE2 answers.
    static let device = PeripheralSpec(address: address, name: "MyDevice-01", rssi: -50, serviceUUIDs: [service], mtu: 185, services: [
        ServiceSpec(uuid: service, characteristics: [
            CharacteristicSpec(uuid: write, flags: ["write", "write-without-response"]),
            CharacteristicSpec(uuid: notify, flags: ["notify"]),
        ]),
    ], rules: [
        BehaviourRule(.write(characteristic: write, prefix: Data([0xAA])), [.notify(characteristic: notify, value: Data([0xAA, 0x01, 0x00, 0x55]), packets: nil)]),
        BehaviourRule(.write(characteristic: write, prefix: Data([0xBB])), [
            .notify(characteristic: notify, value: Data([0xBB, 0x01, 0x10, 0x11]), packets: nil),
            .notify(characteristic: notify, value: Data([0xBB, 0x02, 0x20, 0x21]), packets: nil),
            .notify(characteristic: notify, value: Data([0xBB, 0x03, 0x30, 0x31]), packets: nil),
        ]),
        BehaviourRule(.write(characteristic: write, prefix: Data([0xCC])), [.notify(characteristic: notify, value: Data([0xCC, 0x03, 0x00, 0x01]), packets: nil)]),
        // The stream keeps coming while connected; before 0xCC nobody claims these packets.
        BehaviourRule(.periodic(milliseconds: 150), [.notify(characteristic: notify, value: Data([0xCC, 0x03, 0x00, 0x02]), packets: nil)]),
    ])

    /// Learns the device's identifier the way the README's user does: from a scan.
    final class Scout: CentralManagerDelegate, @unchecked Sendable {
        let found = NSCondition()
        var identifier: String?
        func centralManagerDidUpdateState(_ central: CentralManager) {
            if central.state == .poweredOn { central.scanForPeripherals(withServices: nil, options: nil) }
        }
        func centralManager(_ central: CentralManager, didDiscover peripheral: Peripheral, advertisementData: AdvertisementData, rssi RSSI: Int) {
            guard peripheral.address == ReadmeExampleTests.address else { return }
            found.lock()
            identifier = peripheral.identifier.uuidString
            found.signal()
            found.unlock()
            central.stopScan()
        }
        /// Blocks its (non-loop) thread until the device was seen, at most `seconds` at the tests' clock.
        func waitForIdentifier(seconds: Double) -> String? {
            found.lock()
            defer { found.unlock() }
            let deadline = Date().addingTimeInterval(TestTime.scaled(seconds))
            while identifier == nil, found.wait(until: deadline) {}
            return identifier
        }
    }

    static func identifier(bus: String) async -> String? {
        let scout = Scout()
        let central = CentralManager(delegate: scout, queue: nil, options: CentralManagerOptions(bus: .address(bus)))
        defer { central.close() }
        return await Task.detached { scout.waitForIdentifier(seconds: 15) }.value
    }

    /// Lines the README's code prints only when something went wrong.
    static let failurePrefixes = ["扫描错误", "连接失败", "QueryStatus 失败", "LongData 失败"]

    @Test func theReadmeExampleRunsUnchangedAndEveryCommandAnswersBeforeAndAfterAReconnect() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Self.device])
        let bus = await MainActorHop.onLoop { fixture.bus.address }
        let saved = CentralManagerOptions.defaults
        // The README's `BleManager()` takes no options: the defaults point it at the private bus.
        CentralManagerOptions.defaults = CentralManagerOptions(bus: .address(bus), connectTimeout: .seconds(10))
        readmeTranscript.reset()
        let btManager = BlueToothManager()
        CentralManagerOptions.defaults = saved
        defer { Task { @BleLoop in fixture.tearDown() } }

        // 扫描
        btManager.startScan()
        #expect(await readmeTranscript.wait(startingWith: "扫描到 1 台设备"), "\(readmeTranscript.lines)")
        #expect(await readmeTranscript.wait(startingWith: "  - MyDevice-01, RSSI: -50"), "\(readmeTranscript.lines)")

        // 连接（UUID 从扫描结果中获取）: the scan's replacement must not print a scan error.
        let uuid = try #require(await Self.identifier(bus: bus))
        btManager.connect(uuid: uuid)
        #expect(await readmeTranscript.wait(startingWith: "连接成功：MyDevice-01"), "\(readmeTranscript.lines)")
        #expect(await readmeTranscript.wait(startingWith: "特征值就绪，可以发送指令"), "\(readmeTranscript.lines)")
        // 连接成功后，指令发送由 adapter.readyForCommand 回调自动触发
        #expect(await readmeTranscript.wait(startingWith: "QueryStatus 响应：AA 01 00 55"), "\(readmeTranscript.lines)")

        // 也可以手动调用
        try await exerciseEveryCommand(btManager, round: 1)

        // The link drops; the example's disconnect handler reconnects by itself.
        await MainActorHop.onLoop { fixture.simulator.peripheral(Self.address)?.dropLinks() }
        #expect(await readmeTranscript.wait(startingWith: "断开连接：MyDevice-01"), "\(readmeTranscript.lines)")
        #expect(await readmeTranscript.wait(count: 2, startingWith: "连接成功：MyDevice-01"), "\(readmeTranscript.lines)")
        #expect(await readmeTranscript.wait(count: 2, startingWith: "特征值就绪，可以发送指令"), "\(readmeTranscript.lines)")
        // The ready callback's own QueryStatus answers after the reconnect.
        #expect(await readmeTranscript.wait(count: 3, startingWith: "QueryStatus 响应：AA 01 00 55"), "\(readmeTranscript.lines)")

        try await exerciseEveryCommand(btManager, round: 2)

        let lines = readmeTranscript.lines
        for prefix in Self.failurePrefixes {
            #expect(!lines.contains { $0.hasPrefix(prefix) }, "printed \(prefix): \(lines)")
        }
        #expect(btManager.buildStatusTask(onResult: { _ in }).plugins.count == 1)
    }

    /// LongData (three packets), a stream, then a QueryStatus issued while the stream is live.
    func exerciseEveryCommand(_ btManager: BlueToothManager, round: Int) async throws {
        let queryBefore = readmeTranscript.count(startingWith: "QueryStatus 响应：AA 01 00 55")
        let longBefore = readmeTranscript.count(startingWith: "LongData 收到 3 包")
        btManager.sendLongData()
        #expect(await readmeTranscript.wait(count: longBefore + 1, startingWith: "LongData 收到 3 包"), "round \(round): \(readmeTranscript.lines)")

        let notifyBefore = readmeTranscript.count(startingWith: "Notify 推送：CC 03 00")
        btManager.startNotify()
        #expect(await readmeTranscript.wait(count: notifyBefore + 3, startingWith: "Notify 推送：CC 03 00"), "round \(round): \(readmeTranscript.lines)")

        // A subscription is live: a request/response command still runs, and the stream goes on.
        btManager.sendQueryStatus()
        #expect(await readmeTranscript.wait(count: queryBefore + 1, startingWith: "QueryStatus 响应：AA 01 00 55"), "round \(round): \(readmeTranscript.lines)")
        let notifyNow = readmeTranscript.count(startingWith: "Notify 推送：CC 03 00")
        #expect(await readmeTranscript.wait(count: notifyNow + 1, startingWith: "Notify 推送：CC 03 00"), "round \(round): \(readmeTranscript.lines)")
    }
}

/// Runs a closure on BleKit's loop from a Swift 5 test.
enum MainActorHop {
    static func onLoop<T>(_ body: @escaping @BleLoop () -> T) async -> T {
        await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
            BleLoop.perform { continuation.resume(returning: body()) }
        }
    }
}
