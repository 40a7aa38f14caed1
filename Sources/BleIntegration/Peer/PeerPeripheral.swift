import BleCore
import BleDBus
import BlueZVocabulary
import Foundation

/// The peripheral the scenarios talk to: a GATT application and an advertisement that this
/// process exports on its own bus connection and registers with `GattManager1` and
/// `LEAdvertisingManager1` of the peripheral adapter, as any BlueZ peripheral app does. On
/// real bluetoothd it is served over the air from one controller to the other; on BleSim the
/// peripheral-role bridge puts it in the simulated air. Either way the central side cannot
/// tell it from a device.
@BleLoop
public final class PeerPeripheral {
    /// Why the peer could not be put on the air.
    public enum PeerError: Error, CustomStringConvertible {
        /// BlueZ refused the application or the advertisement.
        case registrationFailed(String, DBusError)

        /// A readable explanation.
        public var description: String {
            switch self {
            case .registrationFailed(let what, let error): return "registering the peer's \(what) failed: \(error)"
            }
        }
    }

    let connection: Connection
    private(set) var adapter: ObjectPath
    private(set) var data = PeerProtocol.initialData
    /// Every method bluetoothd called on the application, in order (`ReadValue data`, …).
    private(set) var calls: [String] = []
    private var streamTimer: LoopTimer?
    private var streamSequence: UInt8 = 0
    private(set) var isRegistered = false
    /// Hears every value written to `data` (after it is stored).
    var onDataWritten: (@BleLoop (Data) -> Void)?

    static let root: ObjectPath = "/org/blekit/peer"
    static let servicePath: ObjectPath = "/org/blekit/peer/service0"
    static let dataPath: ObjectPath = "/org/blekit/peer/service0/char0"
    static let dataDescriptionPath: ObjectPath = "/org/blekit/peer/service0/char0/desc0"
    static let commandPath: ObjectPath = "/org/blekit/peer/service0/char1"
    static let responsePath: ObjectPath = "/org/blekit/peer/service0/char2"
    static let readOnlyPath: ObjectPath = "/org/blekit/peer/service0/char3"
    static let advertisementPath: ObjectPath = "/org/blekit/peer/advertisement0"

    /// Exports the peer's objects on `connection` (not registered yet).
    public init(connection: Connection, adapter: ObjectPath) {
        self.connection = connection
        self.adapter = adapter
        exportObjects()
    }

    /// Registers the application, then the advertisement, with the adapter.
    public func register() async throws(PeerError) {
        try await adapterCall("GATT application", BlueZ.GattManager1.interface, BlueZ.GattManager1.Method.registerApplication,
                              [.objectPath(Self.root), BlueZShapes.propertyDictionary([])])
        try await adapterCall("advertisement", BlueZ.LEAdvertisingManager1.interface, BlueZ.LEAdvertisingManager1.Method.registerAdvertisement,
                              [.objectPath(Self.advertisementPath), BlueZShapes.propertyDictionary([])])
        isRegistered = true
    }

    /// Advertises again (after a power cycle of the adapter ended the advertisement), keeping
    /// the application as it was registered.
    public func registerAdvertisementAgain() async throws(PeerError) {
        try? await unregisterAdvertisement()
        try await adapterCall("advertisement", "org.bluez.LEAdvertisingManager1", "RegisterAdvertisement",
                              [.objectPath(Self.advertisementPath), BlueZShapes.propertyDictionary([])])
    }

    /// Has bluetoothd put the advertisement on the air again (a changed property makes it
    /// refresh the instance, which re-enables advertising). btvirt sends an advertisement to a
    /// scanning controller once per scan start and once per advertising enable, and the
    /// kernel drops a report that arrives before its discovery is on: a central that missed
    /// the one at its scan start hears this one.
    public func refreshAdvertisement() {
        guard isRegistered else { return }
        connection.objects.emitPropertiesChanged(path: Self.advertisementPath, interface: BlueZ.LEAdvertisement1.interface,
                                                 names: [BlueZ.LEAdvertisement1.localName.name])
    }

    /// Stops advertising and keeps serving the application (and its links).
    public func unregisterAdvertisement() async throws(PeerError) {
        try await adapterCall("advertisement (unregistering)", BlueZ.LEAdvertisingManager1.interface, BlueZ.LEAdvertisingManager1.Method.unregisterAdvertisement,
                              [.objectPath(Self.advertisementPath)])
    }

    /// Takes the advertisement and the application off the air; errors are ignored because
    /// a restarted daemon has forgotten them already.
    public func unregister() async {
        isRegistered = false
        stopStream()
        try? await unregisterAdvertisement()
        try? await adapterCall("GATT application (unregistering)", BlueZ.GattManager1.interface, BlueZ.GattManager1.Method.unregisterApplication,
                               [.objectPath(Self.root)])
    }

    private func adapterCall(_ what: String, _ interface: String, _ member: String, _ arguments: [DBusValue]) async throws(PeerError) {
        do {
            _ = try await connection.call(destination: BlueZ.busName, path: adapter, interface: interface, member: member, arguments: arguments)
        } catch {
            throw .registrationFailed(what, error)
        }
    }

    /// Ends the peer as its process exiting would: no unregistering, the bus connection just
    /// closes, and bluetoothd notices the application and the advertisement gone.
    public func exitProcess() {
        isRegistered = false
        stopStream()
        connection.close()
    }

    /// Stops streaming; the objects stay exported until the connection closes.
    public func close() {
        stopStream()
    }

    // MARK: Objects

    private func exportObjects() {
        let objects = connection.objects
        objects.addObjectManager(at: Self.root)
        objects.register(Self.servicePath, interfaces: [ExportedInterface(BlueZ.GattService1.interface, properties: [
            ExportedProperty(BlueZ.GattService1.uuid) { .string(PeerProtocol.service.uuidString128) },
            ExportedProperty(BlueZ.GattService1.primary) { .boolean(true) },
        ])])
        objects.register(Self.dataPath, interfaces: [characteristic(
            uuid: PeerProtocol.data, flags: ["read", "write", "write-without-response"],
            read: { [weak self] offset in
                guard let self else { return .failure(PeerCallFailure(name: BlueZ.ErrorName.failed, message: "Peer gone")) }
                self.calls.append("ReadValue data offset=\(offset)")
                guard offset <= self.data.count else { return .failure(PeerCallFailure(name: BlueZ.ErrorName.invalidOffset, message: BlueZ.ErrorMessage.invalidOffset)) }
                return .success(Data(self.data.dropFirst(offset)))
            },
            write: { [weak self] value, offset in
                guard let self else { return nil }
                self.calls.append("WriteValue data offset=\(offset) length=\(value.count)")
                guard offset <= self.data.count else { return PeerCallFailure(name: BlueZ.ErrorName.invalidOffset, message: BlueZ.ErrorMessage.invalidOffset) }
                self.data = Data(self.data.prefix(offset)) + value
                self.onDataWritten?(self.data)
                return nil
            })])
        objects.register(Self.dataDescriptionPath, interfaces: [ExportedInterface(BlueZ.GattDescriptor1.interface, methods: [
            ExportedMethod(BlueZ.GattCharacteristic1.Method.readValue, in: [Self.optionsArgument], out: [ArgumentDescription("value", .array(.byte))]) { call in
                call.reply([.bytes(Data(PeerProtocol.dataDescription.utf8))])
            },
        ], properties: [
            ExportedProperty(BlueZ.GattDescriptor1.uuid) { .string("00002901-0000-1000-8000-00805f9b34fb") },
            ExportedProperty(BlueZ.GattDescriptor1.characteristic) { .objectPath(Self.dataPath) },
            ExportedProperty(BlueZ.GattDescriptor1.flags) { .array(element: .string, [.string("read")]) },
        ])])
        objects.register(Self.commandPath, interfaces: [characteristic(
            uuid: PeerProtocol.command, flags: ["write", "write-without-response"], read: nil,
            write: { [weak self] value, _ in
                self?.handleCommand(value)
                return nil
            })])
        objects.register(Self.responsePath, interfaces: [ExportedInterface(BlueZ.GattCharacteristic1.interface, methods: [
            ExportedMethod(BlueZ.GattCharacteristic1.Method.startNotify) { [weak self] call in
                self?.calls.append("StartNotify response")
                call.reply()
            },
            ExportedMethod(BlueZ.GattCharacteristic1.Method.stopNotify) { [weak self] call in
                self?.calls.append("StopNotify response")
                self?.stopStream()
                call.reply()
            },
        ], properties: [
            ExportedProperty(BlueZ.GattCharacteristic1.uuid) { .string(PeerProtocol.response.uuidString128) },
            ExportedProperty(BlueZ.GattCharacteristic1.service) { .objectPath(Self.servicePath) },
            ExportedProperty(BlueZ.GattCharacteristic1.flags) { .array(element: .string, [.string("notify")]) },
        ])])
        objects.register(Self.readOnlyPath, interfaces: [characteristic(
            uuid: PeerProtocol.readOnly, flags: ["read"],
            read: { offset in .success(Data(PeerProtocol.readOnlyValue.dropFirst(offset))) }, write: nil)])
        objects.register(Self.advertisementPath, interfaces: [ExportedInterface(BlueZ.LEAdvertisement1.interface, methods: [
            ExportedMethod(BlueZ.LEAdvertisement1.Method.release) { call in call.reply() },
        ], properties: [
            ExportedProperty(BlueZ.LEAdvertisement1.type) { .string("peripheral") },
            ExportedProperty(BlueZ.LEAdvertisement1.serviceUUIDs) {
                .array(element: .string, [.string(PeerProtocol.service.uuidString128)])
            },
            ExportedProperty(BlueZ.LEAdvertisement1.localName) { .string(PeerProtocol.name) },
        ])])
    }

    private static let optionsArgument = ArgumentDescription("options", .dictionary(key: .string, value: .variant))

    private func characteristic(uuid: BluetoothUUID, flags: [String],
                                read: (@BleLoop (Int) -> Result<Data, PeerCallFailure>)?,
                                write: (@BleLoop (Data, Int) -> PeerCallFailure?)?) -> ExportedInterface {
        var methods: [ExportedMethod] = []
        if let read {
            methods.append(ExportedMethod(BlueZ.GattCharacteristic1.Method.readValue, in: [Self.optionsArgument], out: [ArgumentDescription("value", .array(.byte))]) { call in
                switch read(Self.offset(in: call)) {
                case .success(let value): call.reply([.bytes(value)])
                case .failure(let failure): call.fail(name: failure.name, message: failure.message)
                }
            })
        }
        if let write {
            methods.append(ExportedMethod(BlueZ.GattCharacteristic1.Method.writeValue, in: [ArgumentDescription("value", .array(.byte)), Self.optionsArgument]) { call in
                guard case .bytes(let value)? = call.arguments.first else {
                    return call.fail(name: BlueZ.ErrorName.invalidArguments, message: BlueZ.ErrorMessage.invalidArguments)
                }
                if let failure = write(value, Self.offset(in: call)) {
                    call.fail(name: failure.name, message: failure.message)
                } else {
                    call.reply()
                }
            })
        }
        let path: ObjectPath = Self.servicePath
        return ExportedInterface(BlueZ.GattCharacteristic1.interface, methods: methods, properties: [
            ExportedProperty(BlueZ.GattCharacteristic1.uuid) { .string(uuid.uuidString128) },
            ExportedProperty(BlueZ.GattCharacteristic1.service) { .objectPath(path) },
            ExportedProperty(BlueZ.GattCharacteristic1.flags) { .array(element: .string, flags.map { .string($0) }) },
        ])
    }

    private static func offset(in call: IncomingCall) -> Int {
        guard call.arguments.count >= 1, let options = try? BlueZShapes.propertyMap(call.arguments[call.arguments.count - 1]) else { return 0 }
        switch options["offset"] {
        case .uint16(let value)?: return Int(value)
        case .uint32(let value)?: return Int(value)
        default: return 0
        }
    }

    // MARK: The command protocol

    private func handleCommand(_ value: Data) {
        guard let first = value.first, let opcode = PeerProtocol.Opcode(rawValue: first) else {
            calls.append("WriteValue command unknown")
            return
        }
        calls.append("WriteValue command \(opcode)")
        switch opcode {
        case .echo:
            notify(Data([0x81]) + value.dropFirst())
        case .burst:
            let count = value.count > 1 ? value[value.startIndex + 1] : 1
            for index in 0..<count { notify(PeerProtocol.burstPacket(index, of: count)) }
        case .startStream:
            stopStream()
            streamSequence = 0
            streamTimer = LoopTimer.scheduled(after: .milliseconds(50), repeating: .milliseconds(50)) { [weak self] in
                guard let self else { return }
                self.notify(Data([0x83, self.streamSequence]))
                self.streamSequence &+= 1
            }
        case .stopStream:
            stopStream()
            notify(Data([0x84]))
        }
    }

    private func stopStream() {
        streamTimer?.cancel()
        streamTimer = nil
    }

    private func notify(_ value: Data) {
        connection.objects.emitPropertiesChanged(path: Self.responsePath, interface: BlueZ.GattCharacteristic1.interface,
                                                 changed: [DBusDictionaryEntry(key: .string(BlueZ.GattCharacteristic1.value.name), value: .variant(.bytes(value)))],
                                                 invalidated: [])
    }
}

/// A D-Bus error the peer answers a call with.
struct PeerCallFailure: Error {
    var name: String
    var message: String
}
