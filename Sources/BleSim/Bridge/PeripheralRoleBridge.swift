import BleDBus
import Foundation

/// `GattManager1` and `LEAdvertisingManager1` of one adapter: an app that registers a GATT
/// application and an advertisement here becomes a peripheral in the simulated air, which
/// centrals on the other adapters discover, connect to and use. Their reads, writes and
/// subscriptions are forwarded to the app's objects with bluetoothd's option dictionaries, and
/// the app's `PropertiesChanged(Value)` becomes notifications.
@BleLoop
final class PeripheralRoleBridge {
    weak var adapter: SimAdapter?
    private var applications: [ApplicationPeripheral] = []
    private var advertisements: [RegisteredAdvertisement] = []
    /// bluetoothd offers five advertising instances on the emulated controller.
    static let maximumAdvertisements = 5

    init() {}

    var applicationServiceUUIDs: [String] {
        applications.flatMap { $0.layout.services.dropFirst($0.layout.daemonServiceCount).map(\.uuid) }
    }

    private var simulator: Simulator? { adapter?.simulator }

    // MARK: GattManager1

    func gattManagerInterface() -> ExportedInterface {
        let options = ArgumentDescription("options", .dictionary(key: .string, value: .variant))
        return ExportedInterface("org.bluez.GattManager1", methods: [
            ExportedMethod("RegisterApplication", in: [ArgumentDescription("application", .objectPath), options]) { [weak self] call in
                self?.registerApplication(call)
            },
            ExportedMethod("UnregisterApplication", in: [ArgumentDescription("application", .objectPath)]) { [weak self] call in
                guard let self, case .objectPath(let path) = call.arguments[0],
                      let index = self.applications.firstIndex(where: { $0.owner == call.sender && $0.root == path }) else {
                    return BlueZError.doesNotExist(call)
                }
                let application = self.applications.remove(at: index)
                // As when the app leaves the bus (seen in the VM): `{UUIDs}`, the reply, then
                // the connected centrals lose its services; links and advertisement stay.
                self.adapter?.changed(["UUIDs"])
                call.reply()
                self.updateAir()
                application.ownerLeft()
            },
        ])
    }

    private func registerApplication(_ call: IncomingCall) {
        guard let adapter, let connection = simulator?.connection, case .objectPath(let root) = call.arguments[0] else { return }
        guard !applications.contains(where: { $0.owner == call.sender && $0.root == root }) else {
            return BlueZError.alreadyExists(call)
        }
        let owner = call.sender
        // bluetoothd reads the whole tree through the app's ObjectManager before it replies.
        connection.call(destination: owner, path: root, interface: "org.freedesktop.DBus.ObjectManager",
                        member: "GetManagedObjects") { result in
            BleLoop.assumeIsolated { [weak self, weak adapter] in
                guard let self, let adapter else { return }
                guard case .success(let body) = result, let first = body.first,
                      let objects = try? BlueZShapes.managedObjects(first) else {
                    return BlueZError.failed(call, "Failed to read application object tree")
                }
                guard let application = ApplicationPeripheral(owner: owner, root: root, objects: objects, adapter: adapter) else {
                    return BlueZError.invalidArguments(call)
                }
                self.applications.append(application)
                call.reply()
                adapter.changed(["UUIDs"])
                self.updateAir()
            }
        }
    }

    // MARK: LEAdvertisingManager1

    func advertisingManagerInterface() -> ExportedInterface {
        let options = ArgumentDescription("options", .dictionary(key: .string, value: .variant))
        return ExportedInterface("org.bluez.LEAdvertisingManager1", methods: [
            ExportedMethod("RegisterAdvertisement", in: [ArgumentDescription("advertisement", .objectPath), options]) {
                [weak self] call in self?.registerAdvertisement(call)
            },
            ExportedMethod("UnregisterAdvertisement", in: [ArgumentDescription("service", .objectPath)]) { [weak self] call in
                guard let self, case .objectPath(let path) = call.arguments[0],
                      let index = self.advertisements.firstIndex(where: { $0.owner == call.sender && $0.path == path }) else {
                    return BlueZError.doesNotExist(call)
                }
                self.advertisements.remove(at: index)
                self.countsChanged()
                call.reply()
                self.updateAir()
            },
        ], properties: [
            ExportedProperty("ActiveInstances", .byte) { [weak self] in .byte(UInt8(self?.advertisements.count ?? 0)) },
            // bluetoothd counts the free slots here.
            ExportedProperty("SupportedInstances", .byte) { [weak self] in
                .byte(UInt8(PeripheralRoleBridge.maximumAdvertisements - (self?.advertisements.count ?? 0)))
            },
            ExportedProperty("SupportedIncludes", .array(.string)) {
                .array(element: .string, [.string("tx-power"), .string("appearance"), .string("local-name")])
            },
            ExportedProperty("SupportedSecondaryChannels", .array(.string)) { nil },
        ])
    }

    private func countsChanged() {
        guard let adapter else { return }
        adapter.objects?.emitPropertiesChanged(path: adapter.path, interface: "org.bluez.LEAdvertisingManager1",
                                               names: ["SupportedInstances", "ActiveInstances"])
    }

    private func registerAdvertisement(_ call: IncomingCall) {
        guard let connection = simulator?.connection, case .objectPath(let path) = call.arguments[0] else { return }
        guard !advertisements.contains(where: { $0.owner == call.sender && $0.path == path }) else {
            return BlueZError.alreadyExists(call)
        }
        guard advertisements.count < PeripheralRoleBridge.maximumAdvertisements else {
            return BlueZError.notPermitted(call, "Maximum advertisements reached")
        }
        let owner = call.sender
        // bluetoothd first tries the advertisement's ObjectManager (apps answer UnknownMethod),
        // then reads LEAdvertisement1's properties.
        connection.call(destination: owner, path: path, interface: "org.freedesktop.DBus.ObjectManager",
                        member: "GetManagedObjects") { _ in
            connection.call(destination: owner, path: path, interface: "org.freedesktop.DBus.Properties", member: "GetAll",
                            arguments: [.string("org.bluez.LEAdvertisement1")]) { result in
                BleLoop.assumeIsolated { [weak self] in
                    guard let self else { return }
                    guard case .success(let body) = result, let first = body.first,
                          let properties = try? BlueZShapes.propertyMap(first),
                          let advertisement = RegisteredAdvertisement(owner: owner, path: path, properties: properties) else {
                        return BlueZError.invalidArguments(call)
                    }
                    guard advertisement.legacyLength <= 31 else {
                        return call.fail(name: "org.bluez.Error.InvalidLength", message: "Advertising data too long")
                    }
                    self.advertisements.append(advertisement)
                    self.countsChanged()
                    call.reply()
                    self.updateAir()
                }
            }
        }
    }

    /// The adapter's advertising peripheral is in the air while an advertisement is active.
    private func updateAir() {
        guard let simulator, let adapter else { return }
        let current = simulator.airPeripheral(adapter.address) as? ApplicationAdvertiser
        if let advertisement = advertisements.first {
            if let current {
                current.advertisement = advertisement
                current.application = applications.first
            } else {
                simulator.addToAir(ApplicationAdvertiser(adapter: adapter, advertisement: advertisement,
                                                         application: applications.first))
            }
        } else if let current {
            // Off the air, but links already made stay up: advertising has no say over them
            // (seen on bluetoothd 5.66: `peripheral.advertisingEndsLinkStays`).
            simulator.removeFromAir(current)
        }
        if let current, advertisements.first != nil { current.application = applications.first }
    }

    // MARK: Lifetime

    /// The adapter serving the applications went off: every central's link to them drops, as
    /// when a controller stops (bluetoothd keeps the registrations).
    func adapterPoweredOff() {
        for application in applications { application.dropLinks(reason: "peripheral adapter powered off") }
    }

    func clientLeft(_ client: String) {
        let leaving = applications.filter { $0.owner == client }
        applications.removeAll { $0.owner == client }
        let hadAdvertisement = advertisements.contains { $0.owner == client }
        advertisements.removeAll { $0.owner == client }
        // bluetoothd 5.66 (VM, app SIGTERMed or SIGKILLed): the adapter's UUIDs and counts
        // first, then the connected centrals lose the app's services; their links stay up.
        if !leaving.isEmpty { adapter?.changed(["UUIDs"]) }
        if hadAdvertisement { countsChanged() }
        if !leaving.isEmpty || hadAdvertisement { updateAir() }
        for application in leaving { application.ownerLeft() }
    }

    /// SIGTERM: advertisements get `Release()`, notifying characteristics `StopNotify()`; the
    /// application itself gets no call.
    func daemonStopping() {
        guard let connection = simulator?.connection else { return }
        for application in applications { application.stopNotifyAll() }
        for advertisement in advertisements {
            var release = DBusMessage.methodCall(destination: advertisement.owner, path: advertisement.path,
                                                 interface: "org.bluez.LEAdvertisement1", member: "Release")
            release.noReplyExpected = true
            _ = try? connection.send(release)
        }
        forget()
    }

    func forget() {
        for application in applications { application.close() }
        applications.removeAll()
        advertisements.removeAll()
        if let simulator, let adapter, let current = simulator.airPeripheral(adapter.address) as? ApplicationAdvertiser {
            simulator.removeFromAir(current)
        }
    }
}

/// An app's `LEAdvertisement1`, as read at registration.
struct RegisteredAdvertisement {
    let owner: String
    let path: ObjectPath
    let type: String
    let serviceUUIDs: [String]
    let manufacturerData: [UInt16: Data]
    let serviceData: [String: Data]
    let localName: String?
    let includesTxPower: Bool

    init?(owner: String, path: ObjectPath, properties: PropertyMap) {
        self.owner = owner
        self.path = path
        guard let type = properties["Type"]?.as(String.self), ["broadcast", "peripheral"].contains(type) else { return nil }
        self.type = type
        var uuids: [String] = []
        for uuid in properties["ServiceUUIDs"]?.as([String].self) ?? [] {
            guard let full = SimUUID.full(uuid) else { return nil }
            uuids.append(full)
        }
        serviceUUIDs = uuids
        manufacturerData = properties["ManufacturerData"].flatMap { try? BlueZShapes.manufacturerData($0) } ?? [:]
        var serviceData: [String: Data] = [:]
        let advertisedServiceData: [String: Data] = properties["ServiceData"].flatMap { try? BlueZShapes.serviceData($0) } ?? [:]
        for (uuid, data) in advertisedServiceData {
            guard let full = SimUUID.full(uuid) else { return nil }
            serviceData[full] = data
        }
        self.serviceData = serviceData
        let includes = properties["Includes"]?.as([String].self) ?? []
        localName = properties["LocalName"]?.as(String.self) ?? (includes.contains("local-name") ? "BleSim" : nil)
        includesTxPower = includes.contains("tx-power")
    }

    /// Bytes in the 31-byte legacy advertising PDU; the local name goes to the scan response.
    var legacyLength: Int {
        var length = 3
        let short = serviceUUIDs.filter { SimUUID.short($0) != nil }
        let long = serviceUUIDs.filter { SimUUID.short($0) == nil }
        if !short.isEmpty { length += 2 + 2 * short.count }
        if !long.isEmpty { length += 2 + 16 * long.count }
        for (_, data) in manufacturerData { length += 4 + data.count }
        for (uuid, data) in serviceData { length += 2 + (SimUUID.short(uuid) != nil ? 2 : 16) + data.count }
        if includesTxPower { length += 3 }
        return length
    }
}

/// The adapter's own advertiser in the air.
@BleLoop
final class ApplicationAdvertiser: AirPeripheral {
    unowned let adapter: SimAdapter
    var advertisement: RegisteredAdvertisement
    var application: ApplicationPeripheral?
    private let emptyServer: ApplicationPeripheral

    init(adapter: SimAdapter, advertisement: RegisteredAdvertisement, application: ApplicationPeripheral?) {
        self.adapter = adapter
        self.advertisement = advertisement
        self.application = application
        emptyServer = ApplicationPeripheral(emptyOn: adapter)
    }

    var address: String { adapter.address }
    var isAdvertising: Bool { adapter.powered }
    var advertisingInterval: Double { 100 }
    var hostAdapter: SimAdapter? { adapter }
    var server: SimGattServer { application ?? emptyServer }

    func nextReport() -> AdvertisingReport {
        AdvertisingReport(address: adapter.address, addressType: "public", name: advertisement.localName, rssi: -40,
                          txPower: advertisement.includesTxPower ? 0 : nil, manufacturerData: advertisement.manufacturerData,
                          serviceData: advertisement.serviceData, serviceUUIDs: advertisement.serviceUUIDs,
                          connectable: advertisement.type == "peripheral")
    }
}

/// A registered GATT application acting as the server end of links from other adapters.
@BleLoop
final class ApplicationPeripheral: SimGattServer {
    let owner: String
    let root: ObjectPath
    let layout: GattLayout
    private unowned let adapter: SimAdapter
    /// App object path by ATT handle (value handles and descriptor handles).
    private var objectByHandle: [UInt16: ObjectPath] = [:]
    private var handleByObject: [ObjectPath: UInt16] = [:]
    private var links: [SimLink] = []
    private var valueSignals: SignalSubscription?
    private var notifying: Set<UInt16> = []

    var mtu: UInt16 { 517 }
    var gapName: String? { adapter.systemName }

    /// What a central sees of an app's flags: bluetoothd turns the security variants into the
    /// plain ATT property (the requirement becomes a permission, invisible to the client) and
    /// announces reliable writes and writable auxiliaries through the extended-properties bit.
    static func attributeFlags(_ flags: [String]) -> [String] {
        var result = flags
        func ensure(_ flag: String) { if !result.contains(flag) { result.append(flag) } }
        if flags.contains(where: { ["encrypt-read", "encrypt-authenticated-read", "secure-read"].contains($0) }) { ensure("read") }
        if flags.contains(where: { ["encrypt-write", "encrypt-authenticated-write", "secure-write"].contains($0) }) { ensure("write") }
        if flags.contains("reliable-write") || flags.contains("writable-auxiliaries") { ensure("extended-properties") }
        return result
    }

    init?(owner: String, root: ObjectPath, objects: ManagedObjects, adapter: SimAdapter) {
        self.owner = owner
        self.root = root
        self.adapter = adapter
        let paths = objects.keys.filter { $0.isDescendant(of: root) }.sorted()
        var specs: [ServiceSpec] = []
        var appPaths: [(service: ObjectPath, characteristics: [(path: ObjectPath, descriptors: [ObjectPath])])] = []
        for path in paths {
            guard let service = objects[path]?["org.bluez.GattService1"] else { continue }
            guard let uuid = service["UUID"]?.as(String.self), SimUUID.full(uuid) != nil else { return nil }
            var spec = ServiceSpec(uuid: uuid, primary: service["Primary"]?.as(Bool.self) ?? true)
            var characteristicPaths: [(path: ObjectPath, descriptors: [ObjectPath])] = []
            for characteristicPath in paths {
                guard let characteristic = objects[characteristicPath]?["org.bluez.GattCharacteristic1"],
                      characteristic["Service"]?.as(ObjectPath.self) == path else { continue }
                guard let characteristicUUID = characteristic["UUID"]?.as(String.self), SimUUID.full(characteristicUUID) != nil,
                      let flags = characteristic["Flags"]?.as([String].self) else { return nil }
                var characteristicSpec = CharacteristicSpec(uuid: characteristicUUID, flags: Self.attributeFlags(flags),
                                                            value: characteristic["Value"]?.as(Data.self) ?? Data())
                if flags.contains("reliable-write") || flags.contains("writable-auxiliaries") {
                    // bluetoothd's server declares them in an Extended Properties descriptor, first.
                    characteristicSpec.descriptors.append(DescriptorSpec(uuid: "2900", flags: ["read"]))
                }
                var descriptorPaths: [ObjectPath] = []
                for descriptorPath in paths {
                    guard let descriptor = objects[descriptorPath]?["org.bluez.GattDescriptor1"],
                          descriptor["Characteristic"]?.as(ObjectPath.self) == characteristicPath,
                          let descriptorUUID = descriptor["UUID"]?.as(String.self), SimUUID.full(descriptorUUID) != nil else { continue }
                    characteristicSpec.descriptors.append(DescriptorSpec(uuid: descriptorUUID,
                                                                         flags: descriptor["Flags"]?.as([String].self) ?? ["read"]))
                    descriptorPaths.append(descriptorPath)
                }
                spec.characteristics.append(characteristicSpec)
                characteristicPaths.append((characteristicPath, descriptorPaths))
            }
            specs.append(spec)
            appPaths.append((path, characteristicPaths))
        }
        layout = GattLayout(specs: specs, daemon: .bluetoothdServer)
        // The first services are those bluetoothd itself serves (GATT, Device Information).
        for (index, service) in layout.services.dropFirst(layout.daemonServiceCount).enumerated() where index < appPaths.count {
            for (characteristicIndex, characteristic) in service.characteristics.enumerated()
            where characteristicIndex < appPaths[index].characteristics.count {
                let entry = appPaths[index].characteristics[characteristicIndex]
                objectByHandle[characteristic.valueHandle] = entry.path
                handleByObject[entry.path] = characteristic.valueHandle
                // An automatic CCCD, when added, comes first; the app's own descriptors follow.
                let appDescriptors = characteristic.descriptors.suffix(entry.descriptors.count)
                for (descriptor, path) in zip(appDescriptors, entry.descriptors) { objectByHandle[descriptor.handle] = path }
            }
        }
        subscribeToValues()
    }

    /// A server with no database, for an advertisement without an application.
    init(emptyOn adapter: SimAdapter) {
        owner = ""
        root = .root
        layout = GattLayout(specs: [])
        self.adapter = adapter
    }

    private var connection: Connection? { adapter.simulator.connection }

    private func subscribeToValues() {
        valueSignals = try? connection?.signals.subscribe(SignalMatch(sender: owner, pathNamespace: root,
                                                                       interface: "org.freedesktop.DBus.Properties",
                                                                       member: "PropertiesChanged")) { [weak self] message in
            guard let self, let path = message.path, let handle = self.handleByObject[path],
                  message.body.first == .string("org.bluez.GattCharacteristic1"),
                  case .bytes(let value)? = SimulatorFixtureless.changed(message, "Value") else { return }
            for link in self.links where link.subscriptions.contains(handle) {
                link.sendNotification(handle: handle, value: Data(value.prefix(Int(link.mtu) - 3)))
            }
        }
    }

    private func options(for link: SimLink, offset: Int?) -> DBusValue {
        let device = adapter.deviceForIncoming(address: link.centralAddress)
        var pairs: [(String, DBusValue)] = [("device", .objectPath(device.path))]
        if let offset, offset > 0 { pairs.append(("offset", .uint16(UInt16(clamping: offset)))) }
        pairs.append(("link", .string("LE")))
        pairs.append(("mtu", .uint16(link.mtu)))
        return BlueZShapes.propertyDictionary(pairs)
    }

    func linkUp(_ link: SimLink) {
        links.append(link)
        adapter.deviceForIncoming(address: link.centralAddress).incomingLinkChanged(up: true)
    }

    func linkDown(_ link: SimLink) {
        links.removeAll { $0 === link }
        adapter.devices[link.centralAddress]?.incomingLinkChanged(up: false)
        updateNotifying()
    }

    func dropLinks(reason: String = "peripheral stopped advertising") {
        for link in links { link.device?.linkLost(reason: reason) }
    }

    func read(handle: UInt16, offset: Int, link: SimLink, reply: @escaping @BleLoop (Result<Data, AttError>) -> Void) {
        if let daemonValue = layout.daemonValue(handle: handle) {
            return reply(offset <= daemonValue.count ? .success(Data(daemonValue.dropFirst(offset))) : .failure(.invalidOffset))
        }
        guard let path = objectByHandle[handle], let connection else { return reply(.failure(.readNotPermitted)) }
        let characteristic = layout.characteristic(handle: handle)
        let isValue = characteristic?.valueHandle == handle
        // bluetoothd's server checks the permissions the flags give before it asks the app.
        if let characteristic, isValue, !characteristic.isReadable { return reply(.failure(.readNotPermitted)) }
        let interface = isValue ? "org.bluez.GattCharacteristic1" : "org.bluez.GattDescriptor1"
        connection.call(destination: owner, path: path, interface: interface, member: "ReadValue",
                        arguments: [options(for: link, offset: offset)]) { result in
            BleLoop.assumeIsolated {
                switch result {
                case .success(let body):
                    guard case .bytes(let value)? = body.first else { return reply(.failure(.other(0x0e))) }
                    reply(.success(value))
                case .failure(let error):
                    reply(.failure(ApplicationPeripheral.attError(error)))
                }
            }
        }
    }

    func write(handle: UInt16, value: Data, offset: Int, withResponse: Bool, link: SimLink,
               reply: @escaping @BleLoop (Result<Void, AttError>) -> Void) {
        guard let path = objectByHandle[handle], let connection else { return reply(.failure(.writeNotPermitted)) }
        // The 5.66 server counts the 2-byte handle in its length check.
        guard offset + value.count <= 510 else { return reply(withResponse ? .failure(.invalidAttributeValueLength) : .success(())) }
        let characteristic = layout.characteristic(handle: handle)
        let isValue = characteristic?.valueHandle == handle
        // bluetoothd's server checks the permissions before it asks the app; a Write Command it
        // refuses is dropped without an answer.
        if let characteristic, isValue, !characteristic.isWritable {
            return reply(withResponse ? .failure(.writeNotPermitted) : .success(()))
        }
        let interface = isValue ? "org.bluez.GattCharacteristic1" : "org.bluez.GattDescriptor1"
        connection.call(destination: owner, path: path, interface: interface, member: "WriteValue",
                        arguments: [.bytes(value), options(for: link, offset: offset)]) { result in
            BleLoop.assumeIsolated {
                switch result {
                case .success: reply(.success(()))
                case .failure(let error): reply(withResponse ? .failure(ApplicationPeripheral.attError(error)) : .success(()))
                }
            }
        }
    }

    func subscriptionChanged(handle: UInt16, enabled: Bool, link: SimLink) {
        if enabled { link.subscriptions.insert(handle) } else { link.subscriptions.remove(handle) }
        updateNotifying()
    }

    /// StartNotify on the app when the first central subscribes, StopNotify after the last.
    private func updateNotifying() {
        guard let connection else { return }
        let wanted = Set(links.flatMap(\.subscriptions))
        for handle in wanted.subtracting(notifying) {
            guard let path = objectByHandle[handle] else { continue }
            connection.call(destination: owner, path: path, interface: "org.bluez.GattCharacteristic1", member: "StartNotify") { _ in }
        }
        for handle in notifying.subtracting(wanted) {
            guard let path = objectByHandle[handle] else { continue }
            connection.call(destination: owner, path: path, interface: "org.bluez.GattCharacteristic1", member: "StopNotify") { _ in }
        }
        notifying = wanted
    }

    func stopNotifyAll() {
        for link in links { link.subscriptions.removeAll() }
        updateNotifying()
    }

    func confirmed(handle: UInt16, link: SimLink) {
        guard let path = objectByHandle[handle], let connection else { return }
        var confirm = DBusMessage.methodCall(destination: owner, path: path, interface: "org.bluez.GattCharacteristic1", member: "Confirm")
        confirm.noReplyExpected = true
        _ = try? connection.send(confirm)
    }

    func close() {
        valueSignals?.cancel()
        valueSignals = nil
        dropLinks()
    }

    /// The app left the bus while centrals were connected: bluetoothd takes its services out of
    /// the database and indicates Service Changed to each central, which then drops their
    /// objects; the links themselves stay, serving bluetoothd's own services.
    func ownerLeft() {
        valueSignals?.cancel()
        valueSignals = nil
        let appServices = layout.services.dropFirst(layout.daemonServiceCount)
        let handles = Set(appServices.map(\.handle))
        let valueHandles = Set(appServices.flatMap { $0.characteristics.map(\.valueHandle) })
        objectByHandle.removeAll()
        handleByObject.removeAll()
        for link in links {
            link.subscriptions.subtract(valueHandles)
            link.device?.peerServicesRemoved(handles: handles)
        }
        notifying.removeAll()
    }

    /// An app's error reply as the ATT error bluetoothd sends to the central.
    static func attError(_ error: DBusError) -> AttError {
        guard case .remote(let name, let message) = error else { return .other(0x0e) }
        switch name {
        case "org.bluez.Error.NotPermitted": return message.contains("Write") ? .writeNotPermitted : .readNotPermitted
        case "org.bluez.Error.InvalidOffset": return .invalidOffset
        case "org.bluez.Error.InvalidValueLength": return .invalidAttributeValueLength
        case "org.bluez.Error.NotAuthorized": return .insufficientAuthorization
        case "org.bluez.Error.NotSupported": return .requestNotSupported
        case "org.bluez.Error.Failed":
            // Apps pick their own ATT code with a "0x80".."0x9f" message (5.66).
            let trimmed = message.hasPrefix("0x") ? String(message.dropFirst(2)) : message
            if let code = UInt8(trimmed, radix: 16), (0x80...0x9f).contains(code) { return .other(code) }
            return .other(0x0e)
        default: return .other(0x0e)
        }
    }
}

/// Reads a value out of a `PropertiesChanged` signal.
enum SimulatorFixtureless {
    static func changed(_ message: DBusMessage, _ name: String) -> DBusValue? {
        guard message.body.count == 3, let map = try? BlueZShapes.propertyMap(message.body[1]) else { return nil }
        return map[name]
    }
}
