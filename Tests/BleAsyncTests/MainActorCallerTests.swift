import BleAsync
import BleSim
import BleTestSupport
import Foundation
import Testing

/// An app's view model: main-actor state, no locks, no annotations on the BleAsync calls.
@MainActor
final class DeviceModel {
    var seen: [String] = []
    var values: [Data] = []
}

/// A `@MainActor` caller uses the API as it would on iOS: no `@Sendable`, no `nonisolated`,
/// the scan handler touches main-actor state directly (it runs on the caller's actor).
@MainActor
@Suite(.timeLimit(.minutes(TestTime.minutes(1))))
struct MainActorCallerTests {
    @Test func aMainActorCallerNeedsNoAnnotations() async throws {
        let bench = try await AsyncBench.start()
        let manager = bench.manager
        let model = DeviceModel()
        let device = try await manager.scan(AsyncScanRequest(serviceUUIDs: [Gadget.service]), timeout: 20) { discovered in
            MainActor.assertIsolated()
            model.seen.append(discovered.peripheral.address)
            return .connect
        }
        let services = try await device.discover(serviceUUIDs: [Gadget.service], timeout: 10)
        let characteristics = try await device.discover(characteristicUUIDs: nil, for: services[0], timeout: 10)
        model.values.append(try await device.read(for: characteristics[0], timeout: 10))
        let notify = try #require(characteristics.first { $0.uuid == Gadget.notify })
        let stream = try await device.subscribe(to: notify, timeout: 10)
        await bench.virtual?.notify(Gadget.full("ff02"), value: Data([0x33]))
        for try await value in stream {
            model.values.append(value)
            break
        }
        try await manager.disconnect(device, timeout: 10)
        #expect(model.seen == [Gadget.address])
        #expect(model.values == [Data([0x01]), Data([0x33])])
        await bench.tearDown()
    }
}
