@testable import BleCore
import BleDBus
import BleSim
import BleTestSupport
import Foundation
import Glibc
import Testing

@Suite(.timeLimit(.minutes(TestTime.minutes(1))))
@BleLoop
struct GattTests {
    @Test func readsAndWritesCharacteristicsAndDescriptors() async throws {
        let bench = try await Bench.start()
        defer { bench.tearDown() }
        let peripheral = try await bench.connected()
        let rw = bench.characteristic(peripheral, Sample.readWrite)
        #expect(rw.properties == CharacteristicProperties([.read, .write]))
        var mark = bench.recorder.mark
        peripheral.readValue(for: rw)
        let read = try await bench.await("read", since: mark) { $0.isValue }
        guard case .value(_, let data, nil) = read else { Issue.record("\(read)"); return }
        #expect(data == Data([0x01]))
        mark = bench.recorder.mark
        peripheral.writeValue(Data([0x42]), for: rw, type: .withResponse)
        try await bench.await("write", since: mark) { if case .wrote(_, nil) = $0 { return true }; return false }
        #expect(bench.simulator.peripheral(Sample.address)?.writes.last?.value == Data([0x42]))
        let descriptor = try #require(rw.discoveredDescriptors?.first { $0.uuid == Sample.userDescription })
        mark = bench.recorder.mark
        peripheral.readValue(for: descriptor)
        try await bench.await("descriptor read", since: mark) { if case .descriptorValue(_, _, nil) = $0 { return true }; return false }
        #expect(descriptor.value == Data("hello".utf8))
        mark = bench.recorder.mark
        peripheral.writeValue(Data("bye".utf8), for: descriptor)
        try await bench.await("descriptor write", since: mark) { if case .descriptorWrote(_, nil) = $0 { return true }; return false }
    }

    @Test func attErrorIsTyped() async throws {  // pain point #21
        let bench = try await Bench.start()
        defer { bench.tearDown() }
        let peripheral = try await bench.connected()
        bench.simulator.faults.injectAttError(Sample.address, characteristic: "ff01", operation: .read, error: .other(0x0e))
        let mark = bench.recorder.mark
        peripheral.readValue(for: bench.characteristic(peripheral, Sample.readWrite))
        let event = try await bench.await("read", since: mark) { $0.isValue }
        #expect(event.error == .att(.unlikelyError))
    }

    @Test func firstNotificationsAreNotLostWithAcquireNotify() async throws {  // pain point #10
        let rule = BehaviourRule(.subscribe(characteristic: Sample.full("ff02")), [.notify(characteristic: Sample.full("ff02"), value: Data([7]), packets: 1)])
        let bench = try await Bench.start([Sample.spec(rules: [rule])])
        defer { bench.tearDown() }
        let peripheral = try await bench.connected()
        let notify = bench.characteristic(peripheral, Sample.notify)
        let mark = bench.recorder.mark
        peripheral.setNotifyValue(true, for: notify)
        try await bench.await("value", since: mark) { if case .value(_, Data([7])?, nil) = $0 { return true }; return false }
        #expect(notify.isNotifying)
        #expect(bench.trace("AcquireNotify") == 1)
        #expect(bench.trace("StartNotify") == 0)
    }

    @Test func firstNotificationsAreNotLostWithStartNotify() async throws {  // pain point #10
        let rule = BehaviourRule(.subscribe(characteristic: Sample.full("ff02")), [.notify(characteristic: Sample.full("ff02"), value: Data([7]), packets: 1)])
        let bench = try await Bench.start([Sample.spec(rules: [rule])])
        defer { bench.tearDown() }
        let peripheral = try await bench.connected()
        let notify = bench.characteristic(peripheral, Sample.notify)
        notify.prefersStartNotify = true
        let mark = bench.recorder.mark
        peripheral.setNotifyValue(true, for: notify)
        try await bench.await("value", since: mark) { if case .value(_, Data([7])?, nil) = $0 { return true }; return false }
        try await bench.await("notify state", since: mark) { if case .notifyState(_, true, nil) = $0 { return true }; return false }
        #expect(bench.trace("StartNotify") == 1)
        #expect(bench.trace("AcquireNotify") == 0)
    }

    @Test func readReplyIsNotAlsoReportedAsNotification() async throws {  // pain point #12
        let bench = try await Bench.start()
        defer { bench.tearDown() }
        let peripheral = try await bench.connected()
        let notify = bench.characteristic(peripheral, Sample.notify)
        notify.prefersStartNotify = true
        var mark = bench.recorder.mark
        peripheral.setNotifyValue(true, for: notify)
        try await bench.await("notify state", since: mark) { if case .notifyState(_, true, nil) = $0 { return true }; return false }
        mark = bench.recorder.mark
        peripheral.readValue(for: notify)
        try await bench.await("read", since: mark) { $0.isValue }
        // bluetoothd sent PropertiesChanged(Value) before the reply; it must not count twice.
        bench.simulator.peripheral(Sample.address)?.notify(Sample.full("ff02"), value: Data([9]))
        try await bench.await("notification", since: mark) { if case .value(_, Data([9])?, nil) = $0 { return true }; return false }
        #expect(bench.recorder.count(since: mark) { $0.isValue } == 2)
    }

    @Test func noGhostOrDoubledNotificationsAcrossReconnects() async throws {  // pain point #9
        let bench = try await Bench.start()
        defer { bench.tearDown() }
        let peripheral = try await bench.connected()
        let virtual = try #require(bench.simulator.peripheral(Sample.address))
        var notify = bench.characteristic(peripheral, Sample.notify)
        notify.prefersStartNotify = true
        var mark = bench.recorder.mark
        peripheral.setNotifyValue(true, for: notify)
        try await bench.await("notify state", since: mark) { if case .notifyState(_, true, nil) = $0 { return true }; return false }
        mark = bench.recorder.mark
        bench.central.cancelPeripheralConnection(peripheral)
        try await bench.await("disconnect", since: mark) { if case .disconnected = $0 { return true }; return false }
        // The subscription belonged to the link and ended with it.
        #expect(!notify.isNotifying)
        mark = bench.recorder.mark
        try await bench.connect(peripheral)
        try await bench.resolve(peripheral)
        // The app asked for notifications and never turned them off: BleKit re-arms them once.
        try await bench.await("re-armed", since: mark) { if case .notifyState(_, true, nil) = $0 { return true }; return false }
        notify = bench.characteristic(peripheral, Sample.notify)
        #expect(notify.isNotifying)
        mark = bench.recorder.mark
        virtual.notify(Sample.full("ff02"), value: Data([1]))
        peripheral.readValue(for: bench.characteristic(peripheral, Sample.readWrite))  // a barrier
        try await bench.await("barrier", since: mark) { if case .value(let c, _, _) = $0 { return c.uuid == Sample.readWrite }; return false }
        // Once: neither a ghost of the old session nor a double through both paths.
        #expect(bench.recorder.count(since: mark) { if case .value(let c, _, _) = $0 { return c.uuid == Sample.notify }; return false } == 1)
        // Turning it off and on again (what an iOS app does after reconnecting) stays single.
        mark = bench.recorder.mark
        peripheral.setNotifyValue(false, for: notify)
        try await bench.await("off", since: mark) { if case .notifyState(_, false, nil) = $0 { return true }; return false }
        virtual.notify(Sample.full("ff02"), value: Data([9]))
        peripheral.setNotifyValue(true, for: notify)
        try await bench.await("notify state", since: mark) { if case .notifyState(_, true, nil) = $0 { return true }; return false }
        mark = bench.recorder.mark
        virtual.notify(Sample.full("ff02"), value: Data([2]))
        try await bench.await("notification", since: mark) { if case .value(_, Data([2])?, _) = $0 { return true }; return false }
        peripheral.readValue(for: bench.characteristic(peripheral, Sample.readWrite))
        try await bench.await("barrier", since: mark) { if case .value(let c, _, _) = $0 { return c.uuid == Sample.readWrite }; return false }
        #expect(bench.recorder.count(since: mark) { if case .value(let c, _, _) = $0 { return c.uuid == Sample.notify }; return false } == 1)
    }

    @Test func acquireNotifyEOFFallsBackToStartNotify() async throws {  // pain point #11
        let bench = try await Bench.start()
        defer { bench.tearDown() }
        let peripheral = try await bench.connected()
        let notify = bench.characteristic(peripheral, Sample.notify)
        var mark = bench.recorder.mark
        peripheral.setNotifyValue(true, for: notify)
        try await bench.await("notify state", since: mark) { if case .notifyState(_, true, nil) = $0 { return true }; return false }
        guard let descriptor = notify.subscription?.descriptor else { Issue.record("not acquired"); return }
        // EOF on our end of the socket, as when bluetoothd drops an early notification.
        shutdown(descriptor, Int32(SHUT_RDWR))
        try await bench.fixture.waitForSignal { $0.member == "PropertiesChanged" && SimulatorFixture.changedValue($0, "Notifying") == .boolean(true) && bench.trace("StartNotify") == 1 }
        mark = bench.recorder.mark
        bench.simulator.peripheral(Sample.address)?.notify(Sample.full("ff02"), value: Data([5]))
        try await bench.await("notification", since: mark) { if case .value(_, Data([5])?, nil) = $0 { return true }; return false }
        #expect(notify.isNotifying)
    }

    @Test func writeWithoutResponseHasFlowControl() async throws {  // pain point #13
        let bench = try await Bench.start()
        defer { bench.tearDown() }
        let peripheral = try await bench.connected()
        let virtual = try #require(bench.simulator.peripheral(Sample.address))
        let wwr = bench.characteristic(peripheral, Sample.writeNoResponse)
        let total = 3000
        var received = 0
        let allReceived = AsyncStream<Void>.makeStream()
        virtual.onWrite = { write, _ in
            guard write.uuid == Sample.full("ff03") else { return }
            received += 1
            if received == total { allReceived.continuation.yield() }
        }
        var sawNotReady = false
        for index in 0..<total {
            peripheral.performWrite(Data(repeating: UInt8(index & 0xff), count: 20), wwr, .withoutResponse)
            if !peripheral.canSendWriteWithoutResponse { sawNotReady = true }
        }
        #expect(sawNotReady)
        var iterator = allReceived.stream.makeAsyncIterator()
        _ = await iterator.next()
        try await bench.recorder.wait("ready") { if case .readyToWrite = $0 { return true }; return false }
        #expect(peripheral.canSendWriteWithoutResponse)
        #expect(bench.trace("AcquireWrite") == 1)
        #expect(virtual.writes.filter { $0.uuid == Sample.full("ff03") }.count == total)
    }

    @Test func writeWithoutResponseIsPacedWithoutAcquireWrite() async throws {  // pain point #13
        let bench = try await Bench.start()
        defer { bench.tearDown() }
        let peripheral = try await bench.connected()
        let rw = bench.characteristic(peripheral, Sample.readWrite)  // no WriteAcquired: command writes
        for index in 0..<5 { peripheral.performWrite(Data([UInt8(index)]), rw, .withoutResponse) }
        #expect(!peripheral.canSendWriteWithoutResponse)
        try await bench.recorder.wait("ready") { if case .readyToWrite = $0 { return true }; return false }
        _ = try await bench.fixture.call("/", "org.freedesktop.DBus.Peer", "Ping")
        #expect(bench.simulator.trace.filter { $0.member == "WriteValue" }.count == 5)
    }

    @Test func writesOnOneCharacteristicAreSerialised() async throws {
        let bench = try await Bench.start()
        defer { bench.tearDown() }
        let peripheral = try await bench.connected()
        let rw = bench.characteristic(peripheral, Sample.readWrite)
        let mark = bench.recorder.mark
        for index in 0..<5 { peripheral.writeValue(Data([UInt8(index)]), for: rw, type: .withResponse) }
        for _ in 0..<5 { try await bench.await("writes", since: mark) { _ in bench.recorder.count(since: mark) { if case .wrote = $0 { return true }; return false } == 5 } }
        // bluetoothd would answer a concurrent second write with InProgress.
        #expect(bench.recorder.count(since: mark) { if case .wrote(_, nil) = $0 { return true }; return false } == 5)
        #expect(bench.simulator.peripheral(Sample.address)?.writes.suffix(5).map(\.value) == (0..<5).map { Data([UInt8($0)]) })
    }

    @Test func readRSSIReportsTheCachedValue() async throws {
        let bench = try await Bench.start()
        defer { bench.tearDown() }
        let peripheral = try await bench.connected()
        bench.central.scanForPeripherals(withServices: nil, options: ScanOptions(allowDuplicates: true))
        // Wait until BleCore itself heard a report (its cache then holds the RSSI).
        let scanMark = bench.recorder.mark
        _ = try await bench.await("a report", since: scanMark) { if case .discovered = $0 { return true }; return false }
        let mark = bench.recorder.mark
        peripheral.readRSSI()
        let event = try await bench.await("rssi", since: mark) { if case .rssi = $0 { return true }; return false }
        #expect(event.description == "rssi(-60, nil)")
    }

    @Test func missingServiceIsReportedAfterWaitingForLateObjects() async throws {  // pain point #8
        let bench = try await Bench.start()
        defer { bench.tearDown() }
        let peripheral = try await bench.connected()
        let mark = bench.recorder.mark
        peripheral.discoverServices([BluetoothUUID(string: "abcd")])
        let event = try await bench.await("services", since: mark) { if case .services = $0 { return true }; return false }
        #expect(event.error == .serviceNotFound(BluetoothUUID(string: "abcd")))
    }

    @Test func changedGattTreeReportsModifiedServices() async throws {
        let newTree = [ServiceSpec(uuid: "ee00", characteristics: [CharacteristicSpec(uuid: "ee01", flags: ["read"])])]
        let bench = try await Bench.start([Sample.spec(servicesAfterReconnect: newTree)])
        defer { bench.tearDown() }
        let peripheral = try await bench.connected()
        let mark = bench.recorder.mark
        bench.central.cancelPeripheralConnection(peripheral)
        try await bench.await("disconnect", since: mark) { if case .disconnected = $0 { return true }; return false }
        try await bench.connect(peripheral)
        try await bench.await("modified", since: mark) { if case .modified(let s) = $0 { return s.map(\.uuid) == [Sample.service] }; return false }
        try await bench.resolve(peripheral)
        #expect(peripheral.services?.map(\.uuid).contains(BluetoothUUID("ee00")) == true)
        #expect(peripheral.services?.map(\.uuid).contains(Sample.service) == false)
    }
}
