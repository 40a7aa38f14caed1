@testable import BleCore
import BleDBus
import BleSim
import BleTestSupport
import Foundation
import Testing

@Suite(.timeLimit(.minutes(TestTime.minutes(1))))
@BleLoop
struct CentralTests {
    @Test func stateFollowsTheAdapterPoweringOffAndOn() async throws {  // pain point #17
        let bench = try await Bench.start()
        defer { bench.tearDown() }
        let mark = bench.recorder.mark
        bench.simulator.adapter("hci0")?.setPowered(false)
        try await bench.recorder.wait(since: mark, "poweredOff") { if case .state(.poweredOff) = $0 { return true }; return false }
        bench.simulator.adapter("hci0")?.setPowered(true)
        try await bench.recorder.wait(since: mark, "poweredOn") { if case .state(.poweredOn) = $0 { return true }; return false }
        #expect(bench.central.state == .poweredOn)
    }

    @Test func noAdapterMeansUnsupported() async throws {
        let bench = try await Bench.start(configuration: .init(adapters: []), expectPoweredOn: false)
        defer { bench.tearDown() }
        try await bench.recorder.wait("unsupported") { if case .state(.unsupported) = $0 { return true }; return false }
    }

    @Test func accessDeniedMeansUnauthorizedWithAHint() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [])
        fixture.simulator.faults.denyAccessToEveryone()
        let bench = Bench(fixture: fixture)
        bench.central = bench.makeCentral()
        defer { bench.tearDown() }
        try await bench.recorder.wait("unauthorized") { if case .state(.unauthorized) = $0 { return true }; return false }
        guard case .accessDenied? = bench.central.stateError else { Issue.record("stateError \(String(describing: bench.central.stateError))"); return }
        #expect(bench.central.stateError!.description.contains("bluetooth' group"))
    }

    @Test func unreachableBusMeansUnsupportedWithNoBusError() async throws {
        let recorder = Recorder()
        let central = CentralManager(delegate: recorder, queue: nil,
                                     options: CentralManagerOptions(bus: .address("unix:path=/nonexistent/blekit-test-bus")))
        defer { central.close() }
        try await recorder.wait("unsupported") { if case .state(.unsupported) = $0 { return true }; return false }
        guard case .noBus? = central.stateError else { Issue.record("stateError \(String(describing: central.stateError))"); return }
    }

    @Test func unpoweredAdapterIsPoweredOnWhenAsked() async throws {
        let bench = try await Bench.start(configuration: .init(adapters: [.init(index: 0, powered: false)])) { $0.powerOnAdapter = true }
        defer { bench.tearDown() }
        #expect(bench.simulator.adapter("hci0")?.powered == true)
    }

    @Test func scanReportsAdvertisementDataAndRefiltersByService() async throws {
        let plain = PeripheralSpec(address: Sample.other, name: "Plain")
        let bench = try await Bench.start([Sample.spec(), plain])
        defer { bench.tearDown() }
        bench.central.scanForPeripherals(withServices: [Sample.service])
        let event = try await bench.recorder.wait("discovery") { if case .discovered = $0 { return true }; return false }
        guard case .discovered(let peripheral, let advertisement, let rssi) = event else { return }
        #expect(peripheral.address == Sample.address)
        #expect(advertisement.localName == "Sample")
        #expect(advertisement.manufacturerData[0x004c] == Data([1, 2]))
        #expect(advertisement.serviceData[Sample.service] == Data([9]))
        #expect(advertisement.serviceUUIDs.contains(Sample.service))
        #expect(rssi == -60)
        #expect(bench.central.isScanning)
        // Another client's wider filter is OR-merged by BlueZ: BleKit still reports only matches.
        try await bench.fixture.call("/org/bluez/hci0", "org.bluez.Adapter1", "StartDiscovery")
        try await bench.fixture.waitForSignal { $0.member == "InterfacesAdded" && $0.body.first == .objectPath("/org/bluez/hci0/dev_C0_FF_EE_00_00_02") }
        let round = bench.recorder.mark
        bench.central.stopScan()
        bench.central.scanForPeripherals(withServices: [Sample.service], options: ScanOptions(allowDuplicates: true))
        try await bench.recorder.wait(since: round, "rediscovery") { if case .discovered = $0 { return true }; return false }
        #expect(bench.recorder.count { if case .discovered(let p, _, _) = $0 { return p.address == Sample.other }; return false } == 0)
    }

    @Test func scanRefiltersByRSSIAndPattern() async throws {
        let weak = PeripheralSpec(address: Sample.other, name: "Weak", rssi: -95)
        let bench = try await Bench.start([Sample.spec(), weak, PeripheralSpec(address: "C0:FF:EE:00:00:03", name: "Zed", rssi: -40)])
        defer { bench.tearDown() }
        bench.central.scanForPeripherals(withServices: nil, options: ScanOptions(rssiThreshold: -80, pattern: "Sam"))
        try await bench.recorder.wait("discovery") { if case .discovered = $0 { return true }; return false }
        // Another client scans unfiltered; BlueZ OR-merges, so the others' reports reach us too.
        try await bench.fixture.call("/org/bluez/hci0", "org.bluez.Adapter1", "StartDiscovery")
        try await bench.fixture.waitForSignal { $0.member == "InterfacesAdded" && $0.body.first == .objectPath("/org/bluez/hci0/dev_C0_FF_EE_00_00_03") }
        try await bench.fixture.waitForSignal { $0.member == "InterfacesAdded" && $0.body.first == .objectPath("/org/bluez/hci0/dev_C0_FF_EE_00_00_02") }
        _ = try await bench.fixture.call("/", "org.freedesktop.DBus.Peer", "Ping")
        #expect(bench.recorder.count { if case .discovered(let p, _, _) = $0 { return p.address != Sample.address }; return false } == 0)
    }

    @Test func stopScanToleratesNotReady() async throws {  // pain point #17
        let bench = try await Bench.start()
        defer { bench.tearDown() }
        bench.central.scanForPeripherals(withServices: nil)
        try await bench.recorder.wait("discovery") { if case .discovered = $0 { return true }; return false }
        bench.simulator.adapter("hci0")?.setPowered(false)
        try await bench.recorder.wait("poweredOff") { if case .state(.poweredOff) = $0 { return true }; return false }
        bench.central.stopScan()
        _ = try await bench.fixture.call("/", "org.freedesktop.DBus.Peer", "Ping")  // the call hops to the loop first
        #expect(!bench.central.isScanning)
        bench.simulator.adapter("hci0")?.setPowered(true)
        try await bench.recorder.wait(since: 2, "poweredOn") { if case .state(.poweredOn) = $0 { return true }; return false }
        #expect(bench.central.state == .poweredOn)
    }

    @Test func connectWaitsForServicesResolvedAndReadsMTU() async throws {  // pain point #6
        let bench = try await Bench.start([Sample.spec(mtu: 247)])
        defer { bench.tearDown() }
        let peripheral = try await bench.connected()
        #expect(peripheral.state == .connected)
        #expect(peripheral.services?.map(\.uuid).contains(Sample.service) == true)
        #expect(peripheral.maximumWriteValueLength(for: .withoutResponse) == 244)
        #expect(peripheral.maximumWriteValueLength(for: .withResponse) == 512)
        #expect(peripheral.name == "Sample")
    }

    @Test func connectRetriesAfterInProgress() async throws {  // pain point #1
        let bench = try await Bench.start()
        defer { bench.tearDown() }
        let peripheral = try await bench.discover()
        bench.simulator.faults.failConnect(Sample.address, with: .inProgress, times: 1)
        bench.simulator.clearTrace()
        try await bench.connect(peripheral)
        #expect(bench.trace("Connect") == 2)
        #expect(bench.trace("Disconnect") == 1)  // cancels the stuck connect before retrying
    }

    @Test func connectRetriesAfterAbortByLocal() async throws {  // pain point #3
        let bench = try await Bench.start()
        defer { bench.tearDown() }
        let peripheral = try await bench.discover()
        bench.simulator.faults.failConnect(Sample.address, with: .abortByLocal, times: 2)
        bench.simulator.clearTrace()
        try await bench.connect(peripheral)
        #expect(bench.trace("Connect") == 3)
    }

    @Test func connectGivesUpAfterBoundedRetries() async throws {  // pain point #3
        let bench = try await Bench.start { $0.connectRetries = 1 }
        defer { bench.tearDown() }
        let peripheral = try await bench.discover()
        bench.simulator.faults.failConnect(Sample.address, with: .abortByLocal, times: nil)
        bench.central.connect(peripheral)
        let event = try await bench.recorder.wait("failure") { if case .failedToConnect = $0 { return true }; return false }
        #expect(event.error == .connectionFailed(.abortByLocal))
    }

    @Test func connectTimeoutCancelsWithDisconnect() async throws {  // pain point #14
        // The first connect is never answered and must run out; the second must succeed within
        // the same deadline, so it is at the tests' clock.
        let bench = try await Bench.start { $0.connectTimeout = TestTime.scaled(.milliseconds(1500)) }
        defer { bench.tearDown() }
        let peripheral = try await bench.discover()
        bench.simulator.faults.failConnect(Sample.address, with: .neverAnswer, times: 1)
        bench.simulator.clearTrace()
        bench.central.connect(peripheral)
        let event = try await bench.recorder.wait("failure") { if case .failedToConnect = $0 { return true }; return false }
        #expect(event.error == .connectionTimeout)
        #expect(peripheral.state == .disconnected)
        _ = try await bench.fixture.call("/", "org.freedesktop.DBus.Peer", "Ping")
        #expect(bench.trace("Disconnect") == 1)
        // The next attempt is not stuck behind the cancelled one.
        try await bench.connect(peripheral)
    }

    @Test func expiredDeviceGivesDeviceGoneError() async throws {  // pain point #5
        let bench = try await Bench.start(configuration: .init(temporaryTimeoutSeconds: 0.2))
        defer { bench.tearDown() }
        let peripheral = try await bench.discover()
        bench.simulator.removePeripheral(Sample.address)
        try await bench.fixture.waitForSignal { $0.member == "InterfacesRemoved" && $0.body.first == .objectPath("/org/bluez/hci0/dev_C0_FF_EE_00_00_01") }
        bench.central.connect(peripheral)
        let event = try await bench.recorder.wait("failure") { if case .failedToConnect = $0 { return true }; return false }
        #expect(event.error == .deviceGone(address: Sample.address))
        #expect(event.error!.description.contains("Scan again"))
    }

    @Test func cancelPeripheralConnectionReportsDisconnectWithoutError() async throws {
        let bench = try await Bench.start()
        defer { bench.tearDown() }
        let peripheral = try await bench.connected()
        let mark = bench.recorder.mark
        bench.central.cancelPeripheralConnection(peripheral)
        let event = try await bench.recorder.wait(since: mark, "disconnect") { if case .disconnected = $0 { return true }; return false }
        #expect(event.error == nil)
        #expect(peripheral.state == .disconnected)
    }

    @Test func retrievesConnectedPeripheralsAndByIdentifier() async throws {
        let bench = try await Bench.start()
        defer { bench.tearDown() }
        let peripheral = try await bench.connected()
        #expect(bench.central.retrieveConnectedPeripherals(withServices: [Sample.service]).first === peripheral)
        #expect(bench.central.retrieveConnectedPeripherals(withServices: [BluetoothUUID(string: "abcd")]).isEmpty)
        #expect(bench.central.retrievePeripherals(withIdentifiers: [peripheral.identifier]).first === peripheral)
        #expect(peripheral.identifier == PeripheralIdentifier.make(adapterAddress: "00:AA:01:00:00:00", deviceAddress: Sample.address))
    }

    @Test func restorationAdoptsAlreadyConnectedDevices() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Sample.spec()])
        let device: ObjectPath = "/org/bluez/hci0/dev_C0_FF_EE_00_00_01"
        try await fixture.call("/org/bluez/hci0", "org.bluez.Adapter1", "StartDiscovery")
        try await fixture.waitForSignal { $0.member == "InterfacesAdded" && $0.body.first == .objectPath(device) }
        try await fixture.call(device, "org.bluez.Device1", "Connect")
        try await fixture.waitForProperty(device, "ServicesResolved", .boolean(true))
        let bench = Bench(fixture: fixture)
        bench.central = bench.makeCentral { $0.restoreConnectedPeripherals = true }
        defer { bench.tearDown() }
        let event = try await bench.recorder.wait("restore") { if case .restored = $0 { return true }; return false }
        guard case .restored(let peripherals) = event else { return }
        #expect(peripherals.map(\.address) == [Sample.address])
        #expect(peripherals.first?.state == .connected)
    }

    @Test func twoAdaptersGiveTwoIndependentCentrals() async throws {
        let bench = try await Bench.start { $0.adapter = "hci0" }
        defer { bench.tearDown() }
        let second = Recorder()
        let other = bench.makeCentral(recorder: second) { $0.adapter = "00:AA:01:00:00:01" }
        defer { other.close() }
        try await second.wait("poweredOn") { if case .state(.poweredOn) = $0 { return true }; return false }
        #expect(other.adapterName == "hci1")
        let first = try await bench.connected()
        other.scanForPeripherals(withServices: nil)
        let event = try await second.wait("discovery") { if case .discovered = $0 { return true }; return false }
        guard case .discovered(let peripheral, _, _) = event else { return }
        other.stopScan()
        other.connect(peripheral)
        try await second.wait("connect") { if case .connected = $0 { return true }; return false }
        #expect(peripheral.identifier != first.identifier)
        #expect(first.state == .connected && peripheral.state == .connected)
    }
}
