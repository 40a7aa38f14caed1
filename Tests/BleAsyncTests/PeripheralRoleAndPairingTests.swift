@testable import BleAsync
import BleDBus
import BleSim
import BleTestSupport
import Foundation
import Testing

/// The peripheral role and the pairing agent with async/await, against BleSim: a BleAsync
/// central on hci1 talks to an `AsyncPeripheralManager` serving on hci0.
@Suite(.timeLimit(.minutes(TestTime.minutes(1))))
@BleLoop
struct PeripheralRoleAndPairingTests {
    static let service = CBUUID(string: "7b1e0001-0000-1000-8000-00805f9b34fb")
    static let receive = CBUUID(string: "7b1e0002-0000-1000-8000-00805f9b34fb")
    static let send = CBUUID(string: "7b1e0003-0000-1000-8000-00805f9b34fb")

    @Test func requestsArriveAsASequenceAndUpdateValueWaitsForRoom() async throws {
        let bench = try await AsyncBench.start([], configure: { $0.adapter = "hci1" })
        defer { bench.tearDown() }
        let server = AsyncPeripheralManager(options: PeripheralManagerOptions(bus: .address(AsyncBench.busText(bench.fixture)), adapter: "hci0",
                                                                              acquireSockets: false, notificationWindow: 2))
        defer { server.close() }
        #expect(try await server.getState(timeout: 10) == .poweredOn)
        let service = MutableService(type: Self.service, primary: true)
        let receive = MutableCharacteristic(type: Self.receive, properties: [.write], value: nil, permissions: [.writeable])
        let send = MutableCharacteristic(type: Self.send, properties: [.notify, .read], value: nil, permissions: [.readable])
        service.characteristics = [receive, send]
        try await server.add(service, timeout: 10)
        let registration = server.startAdvertising(Advertisement(localName: "async-periph", serviceUUIDs: [Self.service]))
        defer { registration.cancel() }

        let count = 40
        // Two subscribers to the requests: both see each one; the first answer counts.
        let watcher = server.requests()
        let requests = server.requests()
        let serving = Task { @BleLoop in
            var sent = 0
            for await request in requests {
                switch request {
                case .read(let read):
                    read.value = Data("hi".utf8)
                    server.respond(to: read, withResult: .success)
                case .write(let writes):
                    server.respond(to: writes[0], withResult: .success)
                    guard writes[0].value == Data([0x01]) else { continue }
                    // More than the window of 2: later sends wait for room instead of failing.
                    for index in 0..<count {
                        try await server.updateValue(Data([UInt8(index)]), for: send, timeout: 10)
                        sent += 1
                    }
                    return sent
                }
            }
            return sent
        }
        let device = try await bench.manager.scan(AsyncScanRequest(matcher: { $0.advertisement.localName == "async-periph" }), timeout: 20) { _ in
            .connect
        }
        let services = try await device.discover(serviceUUIDs: [Self.service], timeout: 10)
        let characteristics = try await device.discover(characteristicUUIDs: nil, for: try #require(services.first), timeout: 10)
        let sendRemote = try #require(characteristics.first { $0.uuid == Self.send })
        let receiveRemote = try #require(characteristics.first { $0.uuid == Self.receive })
        #expect(try await device.read(for: sendRemote, timeout: 10) == Data("hi".utf8))
        let stream = try await device.subscribe(to: sendRemote, timeout: 10)
        try await device.write(Data([0x01]), to: receiveRemote, type: .withResponse, timeout: 10)
        var got: [Data] = []
        for try await value in stream {
            got.append(value)
            if got.count == count { break }
        }
        #expect(got == (0..<count).map { Data([UInt8($0)]) })
        #expect(try await serving.value == count)
        var seen = 0
        for await _ in watcher {
            seen += 1
            if seen == 2 { break }
        }
        #expect(seen == 2)
        #expect(await server.pendingCallCount == 0)
        #expect(server.hub.waitedForRoom > 0, "no updateValue had to wait: the test did not exercise flow control")
    }

    @Test func pairingRequestsArriveAsASequence() async throws {
        let bench = try await AsyncBench.start()
        defer { bench.tearDown() }
        bench.simulator.setPairing(PeerPairing(capability: "KeyboardDisplay"), for: Gadget.address)
        let agent = AsyncPairingAgent(manager: bench.manager, capability: .keyboardDisplay)
        let requests = agent.requests()
        agent.start()
        defer { agent.stop() }
        try await eventually("the agent is registered") { agent.agent.isRegistered }
        let answering = Task { @BleLoop () -> PairingRequest.Kind? in
            for await request in requests {
                request.accept()
                return request.kind
            }
            return nil
        }
        let device = try await bench.connected()
        try await device.pair(timeout: 20)
        #expect(device.peripheral.isPaired)
        guard case .confirmation? = await answering.value else {
            Issue.record("expected a numeric comparison request")
            return
        }
    }

    @Test func aCancelledPairingIsCancelledInBlueZ() async throws {
        let bench = try await AsyncBench.start()
        defer { bench.tearDown() }
        bench.simulator.setPairing(PeerPairing(capability: "KeyboardDisplay"), for: Gadget.address)
        let agent = AsyncPairingAgent(manager: bench.manager, capability: .keyboardDisplay)
        let requests = agent.requests()
        agent.start()
        defer { agent.stop() }
        try await eventually("the agent is registered") { agent.agent.isRegistered }
        let device = try await bench.connected()
        // Nobody answers: the pairing waits on the agent's question until the task is cancelled.
        let pairing = Task { await Outcome { try await device.pair(timeout: 20) } }
        for await _ in requests { break }
        pairing.cancel()
        #expect(await pairing.value.isCancelled)
        try await bench.waitForCall("CancelPairing")
        #expect(!device.peripheral.isPaired)
    }
}
