@testable import BleCore
import BleDBus
import BleSim
import BleTestSupport
import Foundation
import Testing

/// Everything a BleCore delegate can report, recorded in order.
enum Event: CustomStringConvertible {
    case state(ManagerState)
    case restored([Peripheral])
    case discovered(Peripheral, AdvertisementData, Int)
    case connected(Peripheral)
    case failedToConnect(Peripheral, BleError?)
    case disconnected(Peripheral, BleError?)
    case services(Peripheral, BleError?)
    case characteristics(Service, BleError?)
    case includedServices(Service, BleError?)
    case descriptors(Characteristic, BleError?)
    case value(Characteristic, Data?, BleError?)
    case wrote(Characteristic, BleError?)
    case notifyState(Characteristic, Bool, BleError?)
    case descriptorValue(Descriptor, Data?, BleError?)
    case descriptorWrote(Descriptor, BleError?)
    case readyToWrite
    case rssi(Int, BleError?)
    case modified([Service])
    case name(String?)
    case scanFailed(BleError?)

    var description: String {
        switch self {
        case .state(let s): return "state(\(s))"
        case .restored(let p): return "restored(\(p.map(\.address)))"
        case .discovered(let p, _, let rssi): return "discovered(\(p.address), \(rssi))"
        case .connected(let p): return "connected(\(p.address))"
        case .failedToConnect(let p, let e): return "failedToConnect(\(p.address), \(String(describing: e)))"
        case .disconnected(let p, let e): return "disconnected(\(p.address), \(String(describing: e)))"
        case .services(_, let e): return "services(\(String(describing: e)))"
        case .characteristics(let s, let e): return "characteristics(\(s.uuid), \(String(describing: e)))"
        case .includedServices(let s, let e): return "includedServices(\(s.uuid), \(String(describing: e)))"
        case .descriptors(let c, let e): return "descriptors(\(c.uuid), \(String(describing: e)))"
        case .value(let c, let d, let e): return "value(\(c.uuid), \(d.map { Array($0) } ?? []), \(String(describing: e)))"
        case .wrote(let c, let e): return "wrote(\(c.uuid), \(String(describing: e)))"
        case .notifyState(let c, let on, let e): return "notifyState(\(c.uuid), \(on), \(String(describing: e)))"
        case .descriptorValue(let d, _, let e): return "descriptorValue(\(d.uuid), \(String(describing: e)))"
        case .descriptorWrote(let d, let e): return "descriptorWrote(\(d.uuid), \(String(describing: e)))"
        case .readyToWrite: return "readyToWrite"
        case .rssi(let r, let e): return "rssi(\(r), \(String(describing: e)))"
        case .modified(let s): return "modified(\(s.map(\.uuid)))"
        case .name(let n): return "name(\(n ?? "nil"))"
        case .scanFailed(let e): return "scanFailed(\(String(describing: e)))"
        }
    }

    var error: BleError? {
        switch self {
        case .failedToConnect(_, let e), .disconnected(_, let e), .services(_, let e), .characteristics(_, let e), .includedServices(_, let e),
             .descriptors(_, let e), .value(_, _, let e), .wrote(_, let e), .notifyState(_, _, let e),
             .descriptorValue(_, _, let e), .descriptorWrote(_, let e), .rssi(_, let e), .scanFailed(let e):
            return e
        default: return nil
        }
    }
}

struct WaitTimeout: Error, CustomStringConvertible {
    var what: String
    var seen: [String]
    var description: String { "timed out waiting for \(what); events: \(seen.joined(separator: ", "))" }
}

/// Records delegate events; tests wait on them with deadlines (never sleeps).
@BleLoop
final class Recorder {
    var events: [Event] { recorder.events }
    private let recorder = EventRecorder<Event>()
    /// Runs inside a callback, for tests that act from within one.
    var onEvent: ((Event) -> Void)?

    var mark: Int { events.count }

    func record(_ event: Event) {
        recorder.append(event)
        onEvent?(event)
    }

    @discardableResult
    func wait(since index: Int = 0, timeout: Duration = .seconds(20), _ what: String = "an event",
              where predicate: @escaping (Event) -> Bool) async throws -> Event {
        try await recorder.first(since: index, timeout: timeout, what, where: predicate)
    }

    func count(since index: Int = 0, where predicate: (Event) -> Bool) -> Int {
        events.dropFirst(index).filter(predicate).count
    }
}

extension Recorder: @preconcurrency CentralManagerDelegate {
    func centralManagerDidUpdateState(_ central: CentralManager) { record(.state(central.currentState)) }
    func centralManager(_ central: CentralManager, willRestoreState dict: [String: Any]) {
        record(.restored(dict[CBCentralManagerRestoredStatePeripheralsKey] as? [Peripheral] ?? []))
    }
    func centralManager(_ central: CentralManager, didDiscover peripheral: Peripheral, advertisementData: AdvertisementData, rssi RSSI: Int) {
        record(.discovered(peripheral, advertisementData, RSSI))
    }
    func centralManager(_ central: CentralManager, didConnect peripheral: Peripheral) { record(.connected(peripheral)) }
    func centralManager(_ central: CentralManager, didFailToScan error: Error) { record(.scanFailed(error as? BleError)) }
    func centralManager(_ central: CentralManager, didFailToConnect peripheral: Peripheral, error: Error?) {
        record(.failedToConnect(peripheral, error as? BleError))
    }
    func centralManager(_ central: CentralManager, didDisconnectPeripheral peripheral: Peripheral, error: Error?) {
        record(.disconnected(peripheral, error as? BleError))
    }
}

extension Recorder: @preconcurrency PeripheralDelegate {
    func peripheralDidUpdateName(_ peripheral: Peripheral) { record(.name(peripheral.lastName)) }
    func peripheral(_ peripheral: Peripheral, didModifyServices invalidatedServices: [Service]) { record(.modified(invalidatedServices)) }
    func peripheral(_ peripheral: Peripheral, didReadRSSI RSSI: Int, error: Error?) { record(.rssi(RSSI, error as? BleError)) }
    func peripheral(_ peripheral: Peripheral, didDiscoverServices error: Error?) { record(.services(peripheral, error as? BleError)) }
    func peripheral(_ peripheral: Peripheral, didDiscoverCharacteristicsFor service: Service, error: Error?) {
        record(.characteristics(service, error as? BleError))
    }
    func peripheral(_ peripheral: Peripheral, didDiscoverIncludedServicesFor service: Service, error: Error?) {
        record(.includedServices(service, error as? BleError))
    }
    func peripheral(_ peripheral: Peripheral, didDiscoverDescriptorsFor characteristic: Characteristic, error: Error?) {
        record(.descriptors(characteristic, error as? BleError))
    }
    func peripheral(_ peripheral: Peripheral, didUpdateValueFor characteristic: Characteristic, error: Error?) {
        record(.value(characteristic, characteristic.cachedValue, error as? BleError))
    }
    func peripheral(_ peripheral: Peripheral, didWriteValueFor characteristic: Characteristic, error: Error?) {
        record(.wrote(characteristic, error as? BleError))
    }
    func peripheral(_ peripheral: Peripheral, didUpdateNotificationStateFor characteristic: Characteristic, error: Error?) {
        record(.notifyState(characteristic, characteristic.isNotifyingOnLoop, error as? BleError))
    }
    func peripheral(_ peripheral: Peripheral, didUpdateValueFor descriptor: Descriptor, error: Error?) {
        record(.descriptorValue(descriptor, descriptor.cachedValue, error as? BleError))
    }
    func peripheral(_ peripheral: Peripheral, didWriteValueFor descriptor: Descriptor, error: Error?) {
        record(.descriptorWrote(descriptor, error as? BleError))
    }
    func peripheralIsReady(toSendWriteWithoutResponse peripheral: Peripheral) { record(.readyToWrite) }
}

enum Sample {
    static let address = "C0:FF:EE:00:00:01"
    static let other = "C0:FF:EE:00:00:02"
    static let service = BluetoothUUID(string: "ff00")
    static let readWrite = BluetoothUUID(string: "ff01")
    static let notify = BluetoothUUID(string: "ff02")
    static let writeNoResponse = BluetoothUUID(string: "ff03")
    static let indicate = BluetoothUUID(string: "ff04")
    static let userDescription = BluetoothUUID(string: "2901")

    static func full(_ short: String) -> String { "0000\(short)-0000-1000-8000-00805f9b34fb" }

    static func spec(address: String = Sample.address, name: String = "Sample", mtu: UInt16 = 247, rules: [BehaviourRule] = [],
                     servicesAfterReconnect: [ServiceSpec]? = nil) -> PeripheralSpec {
        PeripheralSpec(address: address, name: name, manufacturerData: [0x004c: Data([1, 2])], serviceData: ["ff00": Data([9])],
                       serviceUUIDs: ["ff00"], mtu: mtu, services: [
                           ServiceSpec(uuid: "ff00", characteristics: [
                               CharacteristicSpec(uuid: "ff01", flags: ["read", "write"], value: Data([0x01]),
                                                  descriptors: [DescriptorSpec(uuid: "2901", flags: ["read", "write"], value: Data("hello".utf8))]),
                               CharacteristicSpec(uuid: "ff02", flags: ["read", "notify"], value: Data([0x02])),
                               CharacteristicSpec(uuid: "ff03", flags: ["write-without-response"]),
                               CharacteristicSpec(uuid: "ff04", flags: ["read", "indicate"], value: Data([0x04])),
                           ]),
                       ], servicesAfterReconnect: servicesAfterReconnect, rules: rules)
    }
}

/// A private bus, BleSim, and a CentralManager on it that reached poweredOn.
@BleLoop
final class Bench {
    let fixture: SimulatorFixture
    let recorder = Recorder()
    /// The members of every call the simulator received, in order.
    let calls = EventRecorder<String>()
    var central: CentralManager!

    init(fixture: SimulatorFixture) { self.fixture = fixture }

    static func start(_ peripherals: [PeripheralSpec] = [Sample.spec()], configuration: Simulator.Configuration = .init(),
                      expectPoweredOn: Bool = true,
                      configure: (inout CentralManagerOptions) -> Void = { _ in }) async throws -> Bench {
        let fixture = try await SimulatorFixture.start(peripherals: peripherals, configuration: configuration)
        let bench = Bench(fixture: fixture)
        let calls = bench.calls
        fixture.simulator.traceObserver = { calls.append($0.member) }
        bench.central = bench.makeCentral(configure: configure)
        if expectPoweredOn { try await bench.recorder.wait("poweredOn") { if case .state(.poweredOn) = $0 { return true }; return false } }
        return bench
    }

    var simulator: Simulator { fixture.simulator }
    var busAddress: String {
        if case .address(let text) = fixture.bus.busAddress { return text }
        return ""
    }

    func makeCentral(recorder: Recorder? = nil, configure: (inout CentralManagerOptions) -> Void = { _ in }) -> CentralManager {
        // The default deadlines are for operations the tests expect to succeed: at the tests'
        // clock. A test that checks a deadline running out sets its own in `configure`.
        var options = CentralManagerOptions(bus: .address(busAddress), operationTimeout: TestTime.scaled(.seconds(3)),
                                            connectTimeout: TestTime.scaled(.seconds(10)),
                                            retryBackoff: .milliseconds(10), servicesResolvedGrace: .milliseconds(200))
        configure(&options)
        return CentralManager(delegate: recorder ?? self.recorder, queue: nil, options: options)
    }

    func tearDown() {
        central?.close()
        fixture.tearDown()
    }

    /// Scans until `address` is found, then stops scanning.
    func discover(_ address: String = Sample.address) async throws -> Peripheral {
        central.scanForPeripherals(withServices: nil)
        let event = try await recorder.wait("discovery of \(address)") {
            if case .discovered(let p, _, _) = $0, p.address == address { return true }
            return false
        }
        central.stopScan()
        guard case .discovered(let peripheral, _, _) = event else { fatalError() }
        peripheral.delegate = recorder
        return peripheral
    }

    /// Discovers, connects and discovers every service, characteristic and descriptor.
    func connected(_ address: String = Sample.address) async throws -> Peripheral {
        let peripheral = try await discover(address)
        try await connect(peripheral)
        try await resolve(peripheral)
        return peripheral
    }

    func connect(_ peripheral: Peripheral) async throws {
        let mark = recorder.mark
        central.connect(peripheral)
        let event = try await recorder.wait(since: mark, "connect") {
            switch $0 {
            case .connected(let p), .failedToConnect(let p, _): return p === peripheral
            default: return false
            }
        }
        guard case .connected = event else { throw WaitTimeout(what: "connected, got \(event)", seen: []) }
    }

    func resolve(_ peripheral: Peripheral) async throws {
        var mark = recorder.mark
        peripheral.discoverServices(nil)
        try await recorder.wait(since: mark, "services") { if case .services = $0 { return true }; return false }
        for service in peripheral.resolvedServices ?? [] {
            mark = recorder.mark
            peripheral.discoverCharacteristics(nil, for: service)
            try await recorder.wait(since: mark, "characteristics") { if case .characteristics = $0 { return true }; return false }
            for characteristic in service.discoveredCharacteristics ?? [] {
                mark = recorder.mark
                peripheral.discoverDescriptors(for: characteristic)
                try await recorder.wait(since: mark, "descriptors") { if case .descriptors = $0 { return true }; return false }
            }
        }
    }

    func characteristic(_ peripheral: Peripheral, _ uuid: BluetoothUUID) -> Characteristic {
        peripheral.characteristicsByPath.values.first { $0.uuid == uuid }!
    }

    /// Waits for the completion event of one operation on `peripheral`.
    @discardableResult
    func await(_ what: String, since mark: Int, _ predicate: @escaping (Event) -> Bool) async throws -> Event {
        try await recorder.wait(since: mark, what, where: predicate)
    }

    /// Waits until the simulator received a call of `member`.
    func waitForCall(_ member: String, timeout: Duration = .seconds(20)) async throws {
        try await calls.wait("a \(member) call", timeout: timeout) { $0.contains(member) }
    }

    func trace(_ member: String) -> Int { simulator.trace.filter { $0.member == member }.count }
}

extension Event {
    var isValue: Bool { if case .value = self { return true }; return false }
}
