import BleAsync
import BleDBus
import BleSim
import BleTestSupport
import Foundation
import Testing

/// Both README examples of FXBlueToothAsync, compiled with only their imports changed, run
/// against BleSim. The second one's placeholder identifier matches nothing, so as written it
/// scans until cancelled; the copy with the placeholder filled in (the one edit its reader
/// makes) runs the whole flow.
@Suite(.serialized, .timeLimit(.minutes(TestTime.minutes(1))))
struct ReadmeExampleTests {
    static func spec(address: String, name: String) -> PeripheralSpec {
        PeripheralSpec(address: address, name: name, serviceUUIDs: ["ffe0"], services: [
            ServiceSpec(uuid: "ffe0", characteristics: [CharacteristicSpec(uuid: "ffe1", flags: ["read", "notify"], value: Data([0x2a]))]),
        ])
    }

    static func start() async throws -> SimulatorFixture {
        let fixture = try await SimulatorFixture.start(peripherals: [
            spec(address: "C0:FF:EE:00:0E:01", name: "Other"), spec(address: "C0:FF:EE:00:0E:02", name: "MyDevice"),
        ])
        guard case .address(let text) = await fixture.bus.busAddress else { throw BenchFailure("no bus address") }
        // `AsyncBleManager()` of the README: the process's default configuration points at BleSim.
        AsyncBleManager.defaultConfiguration = CentralManagerOptions(bus: .address(text), servicesResolvedGrace: .milliseconds(200))
        return fixture
    }

    @Test func quickStartScansConnectsDiscoversReadsAndDisconnects() async throws {
        let fixture = try await Self.start()
        defer { Task { @BleLoop in fixture.tearDown() } }
        readmeLog.clear()
        try await readmeQuickStart()
        #expect(readmeLog.all == ["read [42]"])
        let peripheral = await fixture.simulator.peripheral("C0:FF:EE:00:0E:02")
        #expect(await peripheral?.connectedCentrals == 0)
    }

    @Test func asyncExampleAsWrittenScansUntilCancelled() async throws {
        let fixture = try await Self.start()
        defer { Task { @BleLoop in fixture.tearDown() } }
        readmeLog.clear()
        let manager = AsyncBleManager()
        let run = Task { await example(asyncManager: manager) }
        // It scans; nothing matches the placeholder, so it is cancelled, and says so.
        for try await _ in manager.discoveries(AsyncScanRequest(serviceUUIDs: [CBUUID(string: "FFE0")]), timeout: 20) { break }
        run.cancel()
        await run.value
        #expect(readmeLog.all.count == 1)
        #expect(readmeLog.all.first?.hasPrefix("connect failed: CancellationError") == true)
    }

    @Test func asyncExampleWithTheIdentifierFilledInRunsTheWholeFlow() async throws {
        let fixture = try await Self.start()
        defer { Task { @BleLoop in fixture.tearDown() } }
        readmeLog.clear()
        let manager = AsyncBleManager()
        var target: AsyncDiscoveredPeripheral?
        for try await discovered in manager.discoveries(AsyncScanRequest(matcher: { $0.peripheral.name == "MyDevice" }), timeout: 20) {
            target = discovered
            break
        }
        let identifier = try #require(target).peripheral.identifier.uuidString
        await filledInExample(asyncManager: manager, identifier: identifier)
        #expect(readmeLog.all == ["services count: 1"])
    }
}

struct BenchFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
