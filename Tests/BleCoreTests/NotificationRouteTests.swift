@testable import BleCore
import BleDBus
import BleSim
import BleTestSupport
import Foundation
import Testing

/// The session remembers where the last notification went, so a stream on one characteristic
/// skips the path lookups. These tests prove the memory never delivers to the wrong object:
/// notifications alternating between characteristics, and a GATT tree rebuilt at the same paths.
@Suite(.serialized) @BleLoop
struct NotificationRouteTests {
    private static func trigger(_ prefix: UInt8, notifies short: String) -> BehaviourRule {
        BehaviourRule(.write(characteristic: Sample.full("ff01"), prefix: Data([prefix])),
                      [.notify(characteristic: Sample.full(short), value: Data([prefix]), packets: 1)])
    }

    private static func values(of characteristic: Characteristic, in events: ArraySlice<Event>) -> [UInt8] {
        events.compactMap { event -> UInt8? in
            guard case .value(let target, let data?, nil) = event, target === characteristic else { return nil }
            return data.first
        }
    }

    private static func subscribeOverSignals(_ bench: Bench, _ peripheral: Peripheral, _ characteristic: Characteristic) async throws {
        characteristic.prefersStartNotify = true
        let mark = bench.recorder.mark
        peripheral.setNotifyValue(true, for: characteristic)
        try await bench.await("notifications on \(characteristic.uuid)", since: mark) {
            if case .notifyState(let target, true, nil) = $0 { return target === characteristic }
            return false
        }
    }

    @Test func notificationsAlternatingBetweenTwoCharacteristicsEachReachTheirOwn() async throws {
        let bench = try await Bench.start([Sample.spec(rules: [Self.trigger(0xA0, notifies: "ff02"), Self.trigger(0xB0, notifies: "ff04")])])
        defer { bench.tearDown() }
        let peripheral = try await bench.connected()
        let notify = bench.characteristic(peripheral, Sample.notify)
        let indicate = bench.characteristic(peripheral, Sample.indicate)
        try await Self.subscribeOverSignals(bench, peripheral, notify)
        try await Self.subscribeOverSignals(bench, peripheral, indicate)
        let writer = bench.characteristic(peripheral, Sample.readWrite)
        let mark = bench.recorder.mark
        let sequence: [UInt8] = [0xA0, 0xB0, 0xB0, 0xA0, 0xA0, 0xB0, 0xA0, 0xB0]
        for (index, prefix) in sequence.enumerated() {
            peripheral.writeValue(Data([prefix]), for: writer, type: .withResponse)
            // One at a time, so each notification's target is known when it arrives.
            try await bench.await("notification \(index + 1)", since: mark) { _ in
                Self.values(of: notify, in: bench.recorder.events[mark...]).count + Self.values(of: indicate, in: bench.recorder.events[mark...]).count == index + 1
            }
        }
        #expect(Self.values(of: notify, in: bench.recorder.events[mark...]) == sequence.filter { $0 == 0xA0 })
        #expect(Self.values(of: indicate, in: bench.recorder.events[mark...]) == sequence.filter { $0 == 0xB0 })
    }

    @Test func aGATTTreeRebuiltAtTheSamePathsDeliversToTheNewCharacteristicOnly() async throws {
        // After the reconnect the database differs (ff04 notifies instead of indicating) but
        // has the same layout: bluetoothd removes every object and adds them again at the same
        // paths, and BleKit makes new Characteristic objects for them.
        let rules = [Self.trigger(0xA0, notifies: "ff02"), Self.trigger(0xA1, notifies: "ff02")]
        var sameTree = Sample.spec().services
        sameTree[0].characteristics[3].flags = ["read", "notify"]
        let bench = try await Bench.start([Sample.spec(rules: rules, servicesAfterReconnect: sameTree)])
        defer { bench.tearDown() }
        let peripheral = try await bench.connected()
        let old = bench.characteristic(peripheral, Sample.notify)
        try await Self.subscribeOverSignals(bench, peripheral, old)
        var mark = bench.recorder.mark
        peripheral.writeValue(Data([0xA0]), for: bench.characteristic(peripheral, Sample.readWrite), type: .withResponse)
        try await bench.await("the first notification", since: mark) { _ in Self.values(of: old, in: bench.recorder.events[mark...]) == [0xA0] }

        mark = bench.recorder.mark
        bench.central.cancelPeripheralConnection(peripheral)
        try await bench.await("disconnect", since: mark) { if case .disconnected = $0 { return true }; return false }
        try await bench.connect(peripheral)
        try await bench.resolve(peripheral)
        let new = bench.characteristic(peripheral, Sample.notify)
        #expect(new !== old, "the rebuilt tree should give a new Characteristic object")
        #expect(new.path == old.path, "the rebuilt tree should keep the object path")
        try await Self.subscribeOverSignals(bench, peripheral, new)
        mark = bench.recorder.mark
        peripheral.writeValue(Data([0xA1]), for: bench.characteristic(peripheral, Sample.readWrite), type: .withResponse)
        try await bench.await("the notification after the rebuild", since: mark) { _ in Self.values(of: new, in: bench.recorder.events[mark...]) == [0xA1] }
        #expect(Self.values(of: old, in: bench.recorder.events[mark...]).isEmpty, "a notification reached the characteristic of the old tree")
    }
}
