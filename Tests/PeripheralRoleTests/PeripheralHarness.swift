import BleCore
import BleDBus
import BleSim
import BleTestSupport
import Foundation
import Testing

/// The UUIDs of the command/response service the tests serve.
enum Chat {
    static let service = BluetoothUUID(string: "12345678-1234-1234-1234-1234567890ab")
    static let receive = BluetoothUUID(string: "12345678-1234-1234-1234-1234567890ac")
    static let send = BluetoothUUID(string: "12345678-1234-1234-1234-1234567890ad")
    static let name = BluetoothUUID(string: "12345678-1234-1234-1234-1234567890ae")
    /// hci0's address in BleSim: where the peripheral serves.
    static let peripheralAddress = "00:AA:01:00:00:00"
}

/// Records a peripheral manager's events as text, keeps its requests, and runs an optional
/// handler for each (on the loop, where BleKit delivers without a queue).
final class PeripheralRecorder: PeripheralManagerDelegate, @unchecked Sendable {
    let events: EventRecorder<String>
    var reads: [ATTRequest] = []
    var writes: [ATTRequest] = []
    var onRead: ((PeripheralManager, ATTRequest) -> Void)?
    var onWrite: ((PeripheralManager, ATTRequest) -> Void)?
    var onReady: ((PeripheralManager) -> Void)?

    @BleLoop init() { events = EventRecorder<String>() }

    private func record(_ text: String) { BleLoop.assumeIsolated { events.append(text) } }

    func peripheralManagerDidUpdateState(_ peripheral: PeripheralManager) { record("state \(peripheral.state)") }
    func peripheralManager(_ peripheral: PeripheralManager, didAdd service: Service, error: Error?) {
        record("added \(service.uuid) \(error.map { "\($0)" } ?? "ok")")
    }
    func peripheralManagerDidStartAdvertising(_ peripheral: PeripheralManager, error: Error?) {
        record("advertising \(error.map { "\($0)" } ?? "ok")")
    }
    func peripheralManager(_ peripheral: PeripheralManager, central: Central, didSubscribeTo characteristic: Characteristic) {
        record("subscribed \(characteristic.uuid) \(central.address)")
    }
    func peripheralManager(_ peripheral: PeripheralManager, central: Central, didUnsubscribeFrom characteristic: Characteristic) {
        record("unsubscribed \(characteristic.uuid)")
    }
    func peripheralManagerIsReady(toUpdateSubscribers peripheral: PeripheralManager) {
        record("ready")
        onReady?(peripheral)
    }
    func peripheralManager(_ peripheral: PeripheralManager, didReceiveRead request: ATTRequest) {
        reads.append(request)
        record("read \(request.characteristic.uuid) \(request.offset)")
        onRead?(peripheral, request)
    }
    func peripheralManager(_ peripheral: PeripheralManager, didReceiveWrite requests: [ATTRequest]) {
        for request in requests {
            writes.append(request)
            record("write \(request.characteristic.uuid) \(request.value?.map { String(format: "%02x", $0) }.joined() ?? "")")
            onWrite?(peripheral, request)
        }
    }
    func peripheralManager(_ peripheral: PeripheralManager, centralDidConnect central: Central) { record("connected \(central.address)") }
    func peripheralManager(_ peripheral: PeripheralManager, centralDidDisconnect central: Central) { record("disconnected \(central.address)") }
    func peripheralManager(_ peripheral: PeripheralManager, advertisementDidUpdate registration: AdvertisementRegistration) {
        record("advertisement \(registration.state)")
    }
    func peripheralManager(_ peripheral: PeripheralManager, didReceiveConfirmationFor characteristic: Characteristic) {
        record("confirmed \(characteristic.uuid)")
    }
}

/// BleSim on a private bus with a `PeripheralManager` serving on it (its own bus connection,
/// as a second process would have).
@BleLoop
final class PeripheralHarness {
    let fixture: SimulatorFixture
    let recorder = PeripheralRecorder()
    let manager: PeripheralManager

    init(fixture: SimulatorFixture, options: PeripheralManagerOptions) {
        self.fixture = fixture
        manager = PeripheralManager(delegate: recorder, queue: nil, options: options)
    }

    static func start(requestTimeout: Duration = .seconds(5), acquireSockets: Bool = true,
                      window: Int = 32, adapter: String? = nil) async throws -> PeripheralHarness {
        let fixture = try await SimulatorFixture.start()
        let harness = PeripheralHarness(fixture: fixture, options: PeripheralManagerOptions(
            bus: .address(fixture.bus.address), adapter: adapter, requestTimeout: requestTimeout,
            acquireSockets: acquireSockets, notificationWindow: window))
        try await harness.recorder.events.wait("poweredOn", timeout: .seconds(10)) { $0.contains("state poweredOn") }
        return harness
    }

    /// The chat service: a write (and write-without-response) characteristic, a notify one and
    /// a static, readable name with a user description.
    static func chatService() -> (MutableService, receive: MutableCharacteristic, send: MutableCharacteristic) {
        let service = MutableService(type: Chat.service, primary: true)
        let receive = MutableCharacteristic(type: Chat.receive, properties: [.write, .writeWithoutResponse], value: nil, permissions: [.writeable])
        let send = MutableCharacteristic(type: Chat.send, properties: [.notify, .read], value: nil, permissions: [.readable])
        let name = MutableCharacteristic(type: Chat.name, properties: [.read], value: Data("chat".utf8), permissions: [.readable])
        name.descriptors = [MutableDescriptor.userDescription("Name")]
        service.characteristics = [receive, send, name]
        return (service, receive, send)
    }

    /// Adds `service` and waits until bluetoothd has it.
    func add(_ service: MutableService) async throws {
        manager.add(service)
        try await recorder.events.wait("service added", timeout: .seconds(10)) { $0.contains { $0.hasPrefix("added \(service.uuid)") } }
        #expect(recorder.events.events.contains("added \(service.uuid) ok"))
    }

    /// Starts advertising the chat service by name and waits until it is registered.
    func advertise(_ name: String = "chat-periph") async throws -> AdvertisementRegistration {
        var advertisement = Advertisement(localName: name, serviceUUIDs: [Chat.service])
        advertisement.manufacturerData = [0x0059: Data([0x01])]
        let registration = manager.startAdvertising(advertisement)
        try await recorder.events.wait("advertising", timeout: .seconds(10)) { $0.contains { $0.hasPrefix("advertising") } }
        #expect(registration.state == .active)
        return registration
    }

    /// A central on hci1 (through the fixture's own client) connected to the peripheral on hci0.
    func connectRawCentral() async throws -> ObjectPath {
        let device: ObjectPath = "/org/bluez/hci1/dev_00_AA_01_00_00_00"
        try await fixture.call("/org/bluez/hci1", "org.bluez.Adapter1", "StartDiscovery")
        try await fixture.waitForSignal { $0.addedObject == device }
        try await fixture.call("/org/bluez/hci1", "org.bluez.Adapter1", "StopDiscovery")
        try await fixture.call(device, "org.bluez.Device1", "Connect")
        try await fixture.waitForProperty(device, "ServicesResolved", .boolean(true))
        return device
    }

    /// The exported object of this manager whose path ends with `suffix` (`/service0000/char0001`).
    func exportedPath(_ suffix: String) throws -> ObjectPath {
        let paths = manager.dbusConnection?.objects.registeredPaths ?? []
        guard let path = paths.first(where: { $0.rawValue.hasSuffix(suffix) }) else {
            Issue.record("no exported object ends with \(suffix): \(paths)")
            throw PeripheralTestError.missing(suffix)
        }
        return path
    }

    func tearDown() {
        manager.close()
        fixture.tearDown()
    }
}

enum PeripheralTestError: Error {
    case missing(String)
}

extension DBusMessage {
    /// The object of an `InterfacesAdded`.
    var addedObject: ObjectPath? {
        guard member == "InterfacesAdded", case .objectPath(let path)? = body.first else { return nil }
        return path
    }
}
