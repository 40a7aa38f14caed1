import BleAsync
import BleCore
import BleDBus
import Foundation

/// The central role written with BleAsync (async/await) against the peer: the calls an app
/// ported from FXBlueToothAsync makes, streams with two subscribers, the DSL's engine through
/// `execute`, and cancellation that undoes BlueZ's side. Registered for the VM; they run against
/// BleSim in BleAsyncTests until the VM run records their bluetoothd transcripts for the parity check.
public enum AsyncScenarios {
    /// Every BleAsync scenario.
    public static let all: [IntegrationScenario] = [centralFlow, cancellation]

    @BleLoop static func manager(_ context: ScenarioContext) -> AsyncBleManager {
        let manager = AsyncBleManager(configuration: CentralManagerOptions(bus: context.backend.bleBus, adapter: context.backend.centralAdapter,
                                                                           operationTimeout: .seconds(20), connectTimeout: .seconds(30)))
        context.onCleanup { manager.close() }
        return manager
    }

    /// The peer by name; btvirt reports an advertisement once per scan start, and the kernel drops
    /// a report it handles before its discovery is on, so each attempt is a new scan stream (which
    /// restarts the radio scan) and the peer sends its advertisement again once discovery is on.
    @BleLoop static func findPeer(_ manager: AsyncBleManager, _ context: ScenarioContext) async throws -> AsyncDiscoveredPeripheral {
        let request = AsyncScanRequest(serviceUUIDs: [PeerProtocol.service], matcher: { $0.advertisement.localName == PeerProtocol.name })
        for _ in 0..<6 {
            try await context.refreshAdvertisementsWhenDiscovering()
            do {
                for try await discovered in manager.discoveries(request, timeout: 5) { return discovered }
            } catch AsyncBleClientError.timeout {
                continue
            }
        }
        throw ScenarioFailure("the peer was not found by a BleAsync scan")
    }

    /// The calls of a ported FXBlueToothAsync app, end to end.
    public static let centralFlow = IntegrationScenario(
        "async.centralFlow", "BleAsync: scan with a matcher and connect, discover, read, write, two notification subscribers, a DSL command, disconnect."
    ) { context in
        _ = try await context.peer()
        let manager = manager(context)
        let state = try await manager.getState(timeout: 30)
        context.step("getState \(state)")
        var events = manager.connectionEvents().makeAsyncIterator()
        let discovered = try await findPeer(manager, context)
        context.step("discovered \(discovered.advertisement.localName ?? "?") advertising the peer service")
        let device = try await manager.connect(discovered.peripheral, timeout: 30)
        context.step("connected, state \(device.state)")
        if case .connected(let peripheral)? = await events.next() {
            context.step("event connected \(peripheral === device.peripheral ? "this peripheral" : "another peripheral")")
        }
        let services = try await device.discover(serviceUUIDs: [PeerProtocol.service], timeout: 20)
        try context.expect(services.count == 1, "discover(serviceUUIDs:) found \(services.count) peer services")
        let characteristics = try await device.discover(characteristicUUIDs: nil, for: services[0], timeout: 20)
        func characteristic(_ uuid: BluetoothUUID) throws -> Characteristic {
            guard let found = characteristics.first(where: { $0.uuid == uuid }) else { throw ScenarioFailure("no characteristic \(uuid)") }
            return found
        }
        context.step("characteristics \(characteristics.count)")
        let readOnly = try await device.read(for: try characteristic(PeerProtocol.readOnly), timeout: 20)
        try context.expect(readOnly == PeerProtocol.readOnlyValue, "read-only value \(Array(readOnly))")
        context.step("read read-only ok")
        let data = try characteristic(PeerProtocol.data)
        try await device.write(Data([0x42, 0x43]), to: data, type: .withResponse, timeout: 20)
        try context.expect(try await device.read(for: data, timeout: 20) == Data([0x42, 0x43]), "the written value did not read back")
        context.step("write with response, read back ok")

        let command = try characteristic(PeerProtocol.command)
        let response = try characteristic(PeerProtocol.response)
        let first = try await device.subscribe(to: response, timeout: 20)
        let second = try await device.subscribe(to: response, timeout: 20)
        try await device.write(Data([PeerProtocol.Opcode.burst.rawValue, 5]), to: command, type: .withResponse, timeout: 20)
        for (label, stream) in [("first", first), ("second", second)] {
            var got: [Data] = []
            for try await value in stream {
                got.append(value)
                if got.count == 5 { break }
            }
            let expected = (0..<5).map { PeerProtocol.burstPacket(UInt8($0), of: 5) }
            try context.expect(got == expected, "the \(label) subscriber got \(got.count) packets, not the burst in order")
            context.step("\(label) subscriber: burst of 5 in order")
        }

        device.useCommandCharacteristics(write: command, read: response)
        let echo = try await device.execute(PeerEcho(payload: Data([1, 2, 3])), timeout: 20)
        try context.expect(echo == [Data([0x81, 1, 2, 3])], "execute answered \(echo)")
        context.step("execute echo ok")

        try await manager.disconnect(device, timeout: 30)
        context.step("disconnected, state \(device.state)")
        if case .disconnected(_, let error)? = await events.next() {
            context.step("event disconnected, error \(error.map { "\($0)" } ?? "none")")
        }
    }

    /// Timeouts and cancellations, and what they leave behind.
    public static let cancellation = IntegrationScenario(
        "async.cancellation", "BleAsync: a cancelled scan stops discovery, a cancelled connect ends BlueZ's attempt, a scan timeout is not a cancellation."
    ) { context in
        _ = try await context.peer()
        let manager = manager(context)
        _ = try await manager.getState(timeout: 30)
        let nothing = AsyncScanRequest(serviceUUIDs: [BluetoothUUID(UInt16(0xFEED))])
        do {
            _ = try await manager.scan(nothing, timeout: 2) { _ in .connect }
            throw ScenarioFailure("a scan for a service nobody advertises returned")
        } catch AsyncBleClientError.timeout(let operation) {
            context.step("scan timeout: \(operation)")
        }
        let scanning = Task { try await manager.scan(nothing) { _ in .connect } }
        scanning.cancel()
        do {
            _ = try await scanning.value
            throw ScenarioFailure("a cancelled scan returned")
        } catch is CancellationError {
            context.step("cancelled scan: CancellationError")
        }
        let discovered = try await findPeer(manager, context)
        let connecting = Task { try await manager.connect(discovered.peripheral, timeout: 30) }
        connecting.cancel()
        do {
            let device = try await connecting.value
            // Cancelled too late: the link was up first; the caller owns it.
            context.step("cancelled connect: connected before the cancel")
            try await manager.disconnect(device, timeout: 30)
        } catch is CancellationError {
            context.step("cancelled connect: CancellationError")
        }
        // Returns at once when the cancel ended the attempt; otherwise when the link is down.
        try await manager.disconnect(discovered.peripheral, timeout: 30)
        let pending = await manager.pendingCallCount
        try context.expect(discovered.peripheral.state == .disconnected && pending == 0,
                           "after the cancelled connect: state \(discovered.peripheral.state), \(pending) calls pending")
        context.step("no link and no pending call left")
    }
}

/// The peer's echo command (`01 payload…` → `81 payload…`) as a DSL command.
struct PeerEcho: PeripheralOperationCommand {
    let payload: Data
    var cmdData: Data { Data([PeerProtocol.Opcode.echo.rawValue]) + payload }
    var writeType: CharacteristicWriteType? { .withResponse }
    func checkResponse(_ dataGroup: [Data], data: Data) -> CheckResponseResult {
        data.first == 0x81 ? .success(data: [data]) : .goon(data: dataGroup)
    }
}
