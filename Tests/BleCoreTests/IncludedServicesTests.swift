@testable import BleCore
import BleDBus
import BleSim
import BleTestSupport
import Foundation
import Testing

/// `discoverIncludedServices` against a scenario device whose services include others.
@Suite(.timeLimit(.minutes(TestTime.minutes(1))))
@BleLoop
struct IncludedServicesTests {
    static let battery = BluetoothUUID(string: "180f")
    static let secondary = BluetoothUUID(string: "ff10")
    static let outer = BluetoothUUID(string: "ff00")

    /// A device as a scenario file gives it: ff00 includes ff10 (by UUID) and then service 0
    /// (180f, by index), not in handle order.
    static func spec() throws -> PeripheralSpec {
        let json = #"""
        {"address": "C0:FF:EE:00:00:01", "name": "Sample",
         "services": [
           {"uuid": "180f", "characteristics": [{"uuid": "2a19", "flags": ["read"], "value": "64"}]},
           {"uuid": "ff10", "primary": false, "characteristics": [{"uuid": "ff11", "flags": ["read"], "value": "11"}]},
           {"uuid": "ff00", "includes": ["ff10", 0], "characteristics": [{"uuid": "ff01", "flags": ["read"]}]}
         ]}
        """#
        return try JSONDecoder().decode(PeripheralSpec.self, from: Data(json.utf8))
    }

    func discoverIncluded(_ bench: Bench, _ peripheral: Peripheral, _ uuids: [BluetoothUUID]?, of service: Service) async throws -> BleError? {
        let mark = bench.recorder.mark
        peripheral.discoverIncludedServices(uuids, for: service)
        let event = try await bench.await("included services of \(service.uuid)", since: mark) {
            if case .includedServices(let other, _) = $0 { return other === service }
            return false
        }
        return event.error
    }

    @Test func includedServicesComeInDeclarationOrderAsTheServicesObjects() async throws {
        let bench = try await Bench.start([try Self.spec()])
        defer { bench.tearDown() }
        let peripheral = try await bench.connected()
        let services = peripheral.resolvedServices ?? []
        let outer = try #require(services.first { $0.uuid == Self.outer })
        #expect(outer.includedServices == nil)
        #expect(try await discoverIncluded(bench, peripheral, nil, of: outer) == nil)
        let included = try #require(outer.includedServices)
        #expect(included.map(\.uuid) == [Self.secondary, Self.battery])
        // The same objects as `peripheral.services`, characteristics discovered.
        #expect(included.allSatisfy { found in services.contains { $0 === found } })
        #expect(included.first?.isPrimary == false)
        #expect(included.first?.characteristics?.map(\.uuid) == [BluetoothUUID(string: "ff11")])
        let battery = try #require(services.first { $0.uuid == Self.battery })
        #expect(try await discoverIncluded(bench, peripheral, nil, of: battery) == nil)
        #expect(battery.includedServices?.isEmpty == true)
    }

    @Test func includedServicesCanBeFilteredByUUID() async throws {
        let bench = try await Bench.start([try Self.spec()])
        defer { bench.tearDown() }
        let peripheral = try await bench.connected()
        let outer = try #require(peripheral.resolvedServices?.first { $0.uuid == Self.outer })
        #expect(try await discoverIncluded(bench, peripheral, [Self.battery], of: outer) == nil)
        #expect(outer.includedServices?.map(\.uuid) == [Self.battery])
        #expect(try await discoverIncluded(bench, peripheral, [BluetoothUUID(string: "abcd")], of: outer) == nil)
        #expect(outer.includedServices?.isEmpty == true)
    }

    @Test func includedServicesOfADisconnectedPeripheralAreAnError() async throws {
        let bench = try await Bench.start([try Self.spec()])
        defer { bench.tearDown() }
        let peripheral = try await bench.connected()
        let outer = try #require(peripheral.resolvedServices?.first { $0.uuid == Self.outer })
        let mark = bench.recorder.mark
        bench.central.cancelPeripheralConnection(peripheral)
        try await bench.await("disconnect", since: mark) { if case .disconnected = $0 { return true }; return false }
        #expect(try await discoverIncluded(bench, peripheral, nil, of: outer) == .peripheralNotConnected)
        #expect(outer.includedServices == nil)
    }

    /// BlueZ's own objects: `Includes` of the including service holds the other services'
    /// object paths, in declaration order, and the Include declarations take the handles right
    /// after the service declaration.
    @Test func theDeviceExportsIncludesWithTheIncludedServicesPaths() async throws {
        let layout = GattLayout(specs: try Self.spec().services)
        let services = layout.services.dropFirst(layout.daemonServiceCount)
        let handles = services.map(\.handle)
        let outer = try #require(services.last)
        #expect(outer.includes == [handles[1], handles[0]])
        #expect(outer.characteristics.first?.handle == outer.handle + 3)
        #expect(services.first?.includes == [])
    }
}
