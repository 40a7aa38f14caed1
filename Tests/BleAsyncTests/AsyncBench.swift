import BleAsync
import BleDBus
import BleSim
import BleTestSupport
import Foundation
import Testing

/// The virtual peripheral the tests talk to.
enum Gadget {
    static let address = "C0:FF:EE:00:00:01"
    static let other = "C0:FF:EE:00:00:02"
    static let service = CBUUID(string: "ff00")
    static let readWrite = CBUUID(string: "ff01")
    static let notify = CBUUID(string: "ff02")
    static let writeNoResponse = CBUUID(string: "ff03")
    static let indicate = CBUUID(string: "ff04")
    static let twin = CBUUID(string: "ff10")
    static let twinValue = CBUUID(string: "ff11")

    static func full(_ short: String) -> String { "0000\(short)-0000-1000-8000-00805f9b34fb" }

    static func spec(address: String = Gadget.address, name: String = "Gadget", mtu: UInt16 = 247,
                     rules: [BehaviourRule] = []) -> PeripheralSpec {
        PeripheralSpec(address: address, name: name, serviceUUIDs: ["ff00"], mtu: mtu, services: [
            ServiceSpec(uuid: "ff00", characteristics: [
                CharacteristicSpec(uuid: "ff01", flags: ["read", "write"], value: Data([0x01]),
                                   descriptors: [DescriptorSpec(uuid: "2901", flags: ["read"], value: Data("hello".utf8))]),
                CharacteristicSpec(uuid: "ff02", flags: ["read", "notify"], value: Data([0x02])),
                CharacteristicSpec(uuid: "ff03", flags: ["write-without-response"]),
                CharacteristicSpec(uuid: "ff04", flags: ["read", "indicate"], value: Data([0x04])),
            ]),
            // Two services with one UUID, each with a characteristic of one UUID (defect 28).
            ServiceSpec(uuid: "ff10", characteristics: [CharacteristicSpec(uuid: "ff11", flags: ["read"], value: Data([0xa1]))]),
            ServiceSpec(uuid: "ff10", characteristics: [CharacteristicSpec(uuid: "ff11", flags: ["read"], value: Data([0xb2]))]),
        ], rules: rules)
    }
}

/// A private bus, BleSim and an `AsyncBleManager` on it.
@BleLoop
final class AsyncBench {
    let fixture: SimulatorFixture
    let manager: AsyncBleManager
    /// The members of every call the simulator received, in order.
    let calls = EventRecorder<String>()

    private init(fixture: SimulatorFixture, manager: AsyncBleManager) {
        self.fixture = fixture
        self.manager = manager
        let calls = self.calls
        fixture.simulator.traceObserver = { calls.append($0.member) }
    }

    static func start(_ peripherals: [PeripheralSpec] = [Gadget.spec()], configuration: Simulator.Configuration = .init(),
                      waitForPower: Bool = true,
                      configure: (inout CentralManagerOptions) -> Void = { _ in }) async throws -> AsyncBench {
        let fixture = try await SimulatorFixture.start(peripherals: peripherals, configuration: configuration)
        var options = CentralManagerOptions(bus: .address(busText(fixture)), operationTimeout: .seconds(15), connectTimeout: .seconds(20),
                                            retryBackoff: .milliseconds(10), servicesResolvedGrace: .milliseconds(200))
        configure(&options)
        let bench = AsyncBench(fixture: fixture, manager: AsyncBleManager(configuration: options))
        if waitForPower { _ = try await bench.manager.getState(timeout: 20) }
        return bench
    }

    static func busText(_ fixture: SimulatorFixture) -> String {
        if case .address(let text) = fixture.bus.busAddress { return text }
        return ""
    }

    var simulator: Simulator { fixture.simulator }
    var virtual: VirtualPeripheral? { simulator.peripheral(Gadget.address) }

    func tearDown() {
        manager.close()
        fixture.tearDown()
    }

    /// The first discovery of `address`.
    func find(_ address: String = Gadget.address) async throws -> AsyncDiscoveredPeripheral {
        for try await discovered in manager.discoveries(AsyncScanRequest(matcher: { $0.peripheral.address == address }), timeout: 20) {
            return discovered
        }
        throw BenchError("the scan for \(address) ended without it")
    }

    func connected(_ address: String = Gadget.address) async throws -> AsyncPeripheral {
        let discovered = try await find(address)
        return try await manager.connect(discovered.peripheral, timeout: 20)
    }

    /// The characteristic `uuid` of the first service offering it.
    func characteristic(_ device: AsyncPeripheral, _ uuid: CBUUID, in service: CBUUID = Gadget.service) async throws -> CBCharacteristic {
        let services = try await device.discover(serviceUUIDs: [service], timeout: 10)
        for service in services {
            if let found = try await device.discover(characteristicUUIDs: [uuid], for: service, timeout: 10).first { return found }
        }
        throw BenchError("no characteristic \(uuid)")
    }

    /// Waits until the simulator received `count` calls of `member` in all.
    func waitForCall(_ member: String, count: Int = 1, timeout: Duration = .seconds(20)) async throws {
        try await calls.wait("\(count) \(member) call(s)", timeout: timeout) { $0.filter { $0 == member }.count >= count }
    }

    func callCount(_ member: String) -> Int { calls.events.filter { $0 == member }.count }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// What a task ended with, for tests that cancel.
enum Outcome<Value: Sendable>: Sendable {
    case value(Value)
    case cancelled
    case failed(any Error)

    init(isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> Value) async {
        do { self = .value(try await body()) } catch is CancellationError { self = .cancelled } catch { self = .failed(error) }
    }

    var isCancelled: Bool {
        if case .cancelled = self { return true }
        return false
    }
}

/// Polls loop state with a deadline, by yielding to the loop between checks (no sleeps); the
/// deadline is at the tests' clock (TestTime).
@BleLoop
func eventually(_ what: String, timeout: Duration = .seconds(10), _ condition: @BleLoop () async -> Bool) async throws {
    let end = ContinuousClock.now + TestTime.scaled(timeout)
    while !(await condition()) {
        guard ContinuousClock.now < end else { throw BenchError("timed out waiting until \(what)") }
        var timer: LoopTimer?
        await withCheckedContinuation { continuation in
            timer = LoopTimer.scheduled(after: .milliseconds(5)) { continuation.resume() }
        }
        timer?.cancel()
    }
}
