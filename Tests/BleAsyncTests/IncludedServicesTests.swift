import BleAsync
import BleSim
import BleTestSupport
import Foundation
import Testing

/// `discover(includedServiceUUIDs:for:)` against a device whose ff00 includes its two ff10
/// services by index, the second first.
@Suite(.timeLimit(.minutes(TestTime.minutes(1))))
@BleLoop
struct IncludedServicesTests {
    static func spec() -> PeripheralSpec {
        var spec = Gadget.spec()
        spec.services[0].includes = [.index(2), .index(1)]
        return spec
    }

    @Test func includedServicesAreTheDeclaredOnesInOrder() async throws {
        let bench = try await AsyncBench.start([Self.spec()])
        defer { bench.tearDown() }
        let device = try await bench.connected()
        let services = try await device.discover(serviceUUIDs: nil, timeout: 10)
        let outer = try #require(services.first { $0.uuid == Gadget.service })
        let included = try await device.discover(includedServiceUUIDs: nil, for: outer, timeout: 10)
        #expect(included.map(\.uuid) == [Gadget.twin, Gadget.twin])
        #expect(outer.includedServices?.count == 2)
        #expect(included.allSatisfy { found in services.contains { $0 === found } })
        // Which ff10 comes first is told by its characteristic's value: the second one's.
        let first = try #require(try await device.discover(characteristicUUIDs: [Gadget.twinValue], for: included[0], timeout: 10).first)
        #expect(try await device.read(for: first, timeout: 10) == Data([0xb2]))
        #expect(try await device.discover(includedServiceUUIDs: [Gadget.readWrite], for: outer, timeout: 10).isEmpty)
    }

    @Test func includedServicesOfADisconnectedDeviceThrowNotConnected() async throws {
        let bench = try await AsyncBench.start([Self.spec()])
        defer { bench.tearDown() }
        let device = try await bench.connected()
        let outer = try #require(try await device.discover(serviceUUIDs: [Gadget.service], timeout: 10).first)
        try await bench.manager.disconnect(device, timeout: 10)
        do {
            _ = try await device.discover(includedServiceUUIDs: nil, for: outer, timeout: 10)
            Issue.record("included services of a disconnected device were listed")
        } catch let error as AsyncBleClientError {
            guard case .operationFailed(.discoverIncludedServices, .peripheralNotConnected) = error else {
                Issue.record("\(error) is not operationFailed(.discoverIncludedServices, .peripheralNotConnected)")
                return
            }
        }
    }
}
