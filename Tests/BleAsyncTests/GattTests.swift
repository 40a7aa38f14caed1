import BleAsync
import BleSim
import BleTestSupport
import Foundation
import Testing

@Suite(.timeLimit(.minutes(TestTime.minutes(1))))
@BleLoop
struct GattTests {
    @Test func discoverReadAndWriteEveryKindOfAttribute() async throws {
        let bench = try await AsyncBench.start()
        defer { bench.tearDown() }
        let device = try await bench.connected()
        let services = try await device.discover(serviceUUIDs: nil, timeout: 10)
        #expect(services.map(\.uuid).contains(Gadget.service))
        let characteristics = try await device.discover(characteristicUUIDs: nil, for: try #require(services.first { $0.uuid == Gadget.service }))
        #expect(characteristics.map(\.uuid) == [Gadget.readWrite, Gadget.notify, Gadget.writeNoResponse, Gadget.indicate])
        let readWrite = try #require(characteristics.first)
        #expect(try await device.read(for: readWrite, timeout: 10) == Data([0x01]))

        try await device.write(Data([7, 8, 9]), to: readWrite, type: .withResponse, timeout: 10)
        #expect(bench.virtual?.value(of: Gadget.full("ff01")) == Data([7, 8, 9]))
        #expect(try await device.read(for: readWrite) == Data([7, 8, 9]))

        let descriptors = try await device.discoverDescriptors(for: readWrite, timeout: 10)
        let userDescription = try #require(descriptors.first { $0.uuid == CBUUID(string: "2901") })
        #expect(try await device.read(for: userDescription, timeout: 10) == Data("hello".utf8))

        #expect(device.mtu == 247)
        #expect(device.maximumWriteValueLength(for: .withoutResponse) == 244)
        #expect(device.identifier == device.peripheral.identifier)
    }

    /// Issue 25 item 4: the MTU seen first survived reconnects, so a 512-byte write without
    /// response was accepted on a 247-MTU link. The limit is the link's own: 20 bytes (ATT's
    /// 23) until bluetoothd tells the new link's MTU, then MTU − 3.
    @Test func aReconnectWithASmallerMTUMakesALongWriteWithoutResponseTooLong() async throws {
        let bench = try await AsyncBench.start([Gadget.spec(mtu: 517)])
        defer { bench.tearDown() }
        let device = try await bench.connected()
        let target = try await bench.characteristic(device, Gadget.writeNoResponse)
        try await eventually("the first link's MTU is known") { device.mtu == 517 }
        #expect(Self.refusal(Data(count: 512), to: target, on: device) == nil)
        try await bench.manager.disconnect(device, timeout: 10)
        // Disconnected: no MTU to speak of, and a write says why it cannot go.
        #expect(device.maximumWriteValueLength(for: .withoutResponse) == 20)
        #expect(Self.refusal(Data(count: 10), to: target, on: device) == .peripheralNotConnected)
        bench.virtual?.updateAdvertisement { $0.mtu = 247 }
        let earlier = bench.virtual?.writes.count ?? 0
        let again = try await bench.manager.connect(device.peripheral, timeout: 20)
        let refused = Self.refusal(Data(count: 512), to: target, on: again)
        guard case .valueTooLong(length: 512, let maximum)? = refused, maximum == 20 || maximum == 244 else {
            Issue.record("a 512-byte write without response on a 247-MTU link: \(String(describing: refused))")
            return
        }
        try await eventually("the new link's MTU is known") { again.mtu == 247 }
        #expect(again.maximumWriteValueLength(for: .withoutResponse) == 244)
        #expect(Self.refusal(Data(count: 245), to: target, on: again) == .valueTooLong(length: 245, maximum: 244))
        #expect(Self.refusal(Data(count: 244), to: target, on: again) == nil)
        try await eventually("the 244-byte write arrived") {
            bench.virtual?.writes.contains { $0.uuid == Gadget.full("ff03") && $0.value.count == 244 } == true
        }
        #expect(bench.virtual?.writes.dropFirst(earlier).contains { $0.value.count > 244 } == false)
    }

    /// What BleCore says at once about a write without response (nil: queued).
    static func refusal(_ data: Data, to characteristic: CBCharacteristic, on device: AsyncPeripheral) -> BleError? {
        var refused: BleError?
        device.peripheral.performWrite(data, characteristic, .withoutResponse) { refused = $0 }
        return refused
    }

    @Test func theStacksOwnServicesAreListedOnlyWhenAskedFor() async throws {
        let bench = try await AsyncBench.start()
        defer { bench.tearDown() }
        let device = try await bench.connected()
        let all = try await device.discover(serviceUUIDs: nil, timeout: 10)
        #expect(all.first?.uuid == Gadget.service)
        #expect(!all.contains { $0.uuid == CBUUID(UInt16(0x1801)) })
        let gatt = try await device.discover(serviceUUIDs: [CBUUID(UInt16(0x1801))], timeout: 10)
        #expect(gatt.map(\.uuid) == [CBUUID(UInt16(0x1801))])
    }

    @Test func writeWithoutResponseIsChunkedToTheMTUAndArrivesWhole() async throws {
        let bench = try await AsyncBench.start([Gadget.spec(mtu: 23)])
        defer { bench.tearDown() }
        let device = try await bench.connected()
        let target = try await bench.characteristic(device, Gadget.writeNoResponse)
        let payload = Data((0..<200).map { UInt8($0) })
        try await device.write(payload, to: target, type: .withoutResponse, timeout: 10)
        try await eventually("all chunks arrived") {
            (bench.virtual?.writes.filter { $0.uuid == Gadget.full("ff03") }.count ?? 0) == 10
        }
        let chunks = bench.virtual?.writes.filter { $0.uuid == Gadget.full("ff03") }.map(\.value) ?? []
        #expect(chunks.allSatisfy { $0.count == 20 })
        #expect(chunks.reduce(Data(), +) == payload)
        #expect(chunks.allSatisfy { !$0.isEmpty })
    }

    @Test func aWriteThatIsRefusedSaysSo() async throws {
        let bench = try await AsyncBench.start()
        defer { bench.tearDown() }
        let device = try await bench.connected()
        let readWrite = try await bench.characteristic(device, Gadget.readWrite)
        bench.simulator.faults.injectAttError(Gadget.address, characteristic: Gadget.full("ff01"), operation: .write, error: .writeNotPermitted)
        do {
            try await device.write(Data([1]), to: readWrite, timeout: 10)
            Issue.record("the write succeeded")
        } catch AsyncBleClientError.operationFailed(let operation, _) {
            #expect(operation == .writeValue)
        }
    }

    @Test func readRSSIOutsideDiscoveryIsNotAvailable() async throws {
        let bench = try await AsyncBench.start()
        defer { bench.tearDown() }
        let device = try await bench.connected()
        do {
            let rssi = try await device.readRSSI(timeout: 5)
            #expect(rssi < 0)
        } catch AsyncBleClientError.operationFailed(let operation, let error) {
            #expect(operation == .readRSSI)
            #expect(error == .notAvailable)
        }
    }

    @Test func operationsAfterDisconnectFailAtOnce() async throws {
        let bench = try await AsyncBench.start()
        defer { bench.tearDown() }
        let device = try await bench.connected()
        let readWrite = try await bench.characteristic(device, Gadget.readWrite)
        try await bench.manager.disconnect(device, timeout: 10)
        #expect(device.state == .disconnected)
        await #expect(throws: AsyncBleClientError.self) { _ = try await device.read(for: readWrite, timeout: 5) }
        await #expect(throws: AsyncBleClientError.self) { _ = try await device.discover(serviceUUIDs: nil, timeout: 5) }
        // Disconnecting what is not connected returns at once.
        try await bench.manager.disconnect(device, timeout: 5)
    }
}
