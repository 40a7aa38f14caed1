import BleAsync
import BleSim
import BleTestSupport
import Foundation
import Testing

@Suite(.timeLimit(.minutes(TestTime.minutes(1))))
@BleLoop
struct StateAndScanTests {
    @Test func stateIsAValueAndAStreamForEverySubscriber() async throws {
        let bench = try await AsyncBench.start()
        defer { bench.tearDown() }
        #expect(bench.manager.state == .poweredOn)
        #expect(try await bench.manager.getState(timeout: 5) == .poweredOn)
        var first = bench.manager.stateUpdates().makeAsyncIterator()
        var second = bench.manager.stateUpdates().makeAsyncIterator()
        #expect(await first.next() == .poweredOn)
        #expect(await second.next() == .poweredOn)
        bench.simulator.adapter("hci0")?.setPowered(false)
        #expect(await first.next() == .poweredOff)
        #expect(await second.next() == .poweredOff)
    }

    @Test func getStateFailsWhenTheAdapterIsOff() async throws {
        let bench = try await AsyncBench.start(configuration: .init(adapters: [.init(index: 0, powered: false)]), waitForPower: false)
        defer { bench.tearDown() }
        await #expect(throws: AsyncBleClientError.self) { _ = try await bench.manager.getState(timeout: 10) }
        do {
            _ = try await bench.manager.getState(timeout: 10)
        } catch AsyncBleClientError.bluetoothUnavailable(let state) {
            #expect(state == .poweredOff)
        }
    }

    @Test func discoveriesStreamReportsEachPeripheralOnce() async throws {
        let bench = try await AsyncBench.start([Gadget.spec(), Gadget.spec(address: Gadget.other, name: "Other")])
        defer { bench.tearDown() }
        var seen: [String] = []
        for try await discovered in bench.manager.discoveries(timeout: 20) {
            seen.append(discovered.peripheral.address)
            if Set(seen).count == 2 { break }
        }
        #expect(Set(seen) == [Gadget.address, Gadget.other])
        #expect(seen.count == 2)
        // Leaving the loop ended the only subscriber: the radio scan stops.
        try await bench.waitForCall("StopDiscovery")
    }

    @Test func twoScanStreamsShareOneRadioScanAndBothHearEveryPeripheral() async throws {
        let bench = try await AsyncBench.start([Gadget.spec(), Gadget.spec(address: Gadget.other, name: "Other")])
        defer { bench.tearDown() }
        let manager = bench.manager
        async let a = Self.collect(manager, count: 2)
        async let b = Self.collect(manager, count: 2)
        let (first, second) = try await (a, b)
        #expect(first == [Gadget.address, Gadget.other])
        #expect(second == [Gadget.address, Gadget.other])
        try await bench.waitForCall("StopDiscovery")
        #expect(bench.callCount("StartDiscovery") == 1)
    }

    nonisolated static func collect(_ manager: AsyncBleManager, count: Int) async throws -> Set<String> {
        var found = Set<String>()
        for try await discovered in manager.discoveries(timeout: 20) {
            found.insert(discovered.peripheral.address)
            if found.count == count { break }
        }
        return found
    }

    @Test func scanTimesOutWithATimeoutError() async throws {
        let bench = try await AsyncBench.start()
        defer { bench.tearDown() }
        do {
            _ = try await bench.manager.scan(AsyncScanRequest(serviceUUIDs: [CBUUID(string: "abcd")]), timeout: 0.3) { _ in .connect }
            Issue.record("the scan returned")
        } catch AsyncBleClientError.timeout(let operation) {
            #expect(operation == .scan)
        }
    }

    @Test func scanWithConnectReturnsTheConnectedPeripheral() async throws {
        let bench = try await AsyncBench.start([Gadget.spec(), Gadget.spec(address: Gadget.other, name: "Other")])
        defer { bench.tearDown() }
        let device = try await bench.manager.scan(AsyncScanRequest(serviceUUIDs: [Gadget.service]), timeout: 20) { discovered in
            discovered.peripheral.address == Gadget.other ? .connect : .skip
        }
        #expect(device.peripheral.address == Gadget.other)
        #expect(device.state == .connected)
        try await bench.waitForCall("StopDiscovery")
    }

    @Test func stopActionEndsTheScanWithScanStopped() async throws {
        let bench = try await AsyncBench.start()
        defer { bench.tearDown() }
        await #expect(throws: AsyncBleClientError.self) {
            _ = try await bench.manager.scan(timeout: 20) { _ in .stop }
        }
    }

    @Test func handlerErrorEndsTheScanWithThatError() async throws {
        struct Refused: Error {}
        let bench = try await AsyncBench.start()
        defer { bench.tearDown() }
        await #expect(throws: Refused.self) {
            _ = try await bench.manager.scan(timeout: 20) { _ in throw Refused() }
        }
    }

    @Test func connectionEventsReachEverySubscriber() async throws {
        let bench = try await AsyncBench.start()
        defer { bench.tearDown() }
        var first = bench.manager.connectionEvents().makeAsyncIterator()
        var second = bench.manager.connectionEvents().makeAsyncIterator()
        let device = try await bench.connected()
        try await bench.manager.disconnect(device, timeout: 10)
        for index in 0..<2 {
            let connected = index == 0 ? await first.next() : await second.next()
            guard case .connected(let peripheral)? = connected else { Issue.record("expected connected, got \(String(describing: connected))"); continue }
            #expect(peripheral === device.peripheral)
            let disconnected = index == 0 ? await first.next() : await second.next()
            guard case .disconnected(let other, let error)? = disconnected else { Issue.record("expected disconnected"); continue }
            #expect(other === device.peripheral)
            #expect(error == nil)
        }
    }
}
