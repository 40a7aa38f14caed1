import BleDBus
import BlueZVocabulary
import Foundation

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
    /// Value handles whose app object offers `AcquireWrite` / `AcquireNotify` (it has the
    /// `WriteAcquired` / `NotifyAcquired` property): bluetoothd 5.66 then uses a socket.
    private var acquireWriteHandles: Set<UInt16> = []
    private var acquireNotifyHandles: Set<UInt16> = []
    /// bluetoothd's ends of the sockets the app handed over with `AcquireWrite`/`AcquireNotify`:
    /// write commands go in, notifications come out; closing one is how bluetoothd tells the
    /// app it is done.
    private var writeSockets: [UInt16: SeqPacketSocket] = [:]
    private var notifySockets: [UInt16: SeqPacketSocket] = [:]
    /// Write commands that arrived while an `AcquireWrite` was on its way.
    private var pendingWrites: [UInt16: [Data]] = [:]

    var mtu: UInt16 { 517 }
    var gapName: String? { adapter.systemName }

    /// What a central sees of an app's flags: bluetoothd turns the security variants into the
    /// plain ATT property (the requirement becomes a permission, invisible to the client) and
    /// announces reliable writes and writable auxiliaries through the extended-properties bit.
    static func attributeFlags(_ flags: [String]) -> [String] {
        var result = flags
        func ensure(_ flag: String) { if !result.contains(flag) { result.append(flag) } }
        if flags.contains(where: { [BlueZ.GattFlag.encryptRead, BlueZ.GattFlag.encryptAuthenticatedRead, BlueZ.GattFlag.secureRead].contains($0) }) { ensure(BlueZ.GattFlag.read) }
        if flags.contains(where: { [BlueZ.GattFlag.encryptWrite, BlueZ.GattFlag.encryptAuthenticatedWrite, BlueZ.GattFlag.secureWrite].contains($0) }) { ensure(BlueZ.GattFlag.write) }
        if flags.contains(BlueZ.GattFlag.reliableWrite) || flags.contains(BlueZ.GattFlag.writableAuxiliaries) { ensure(BlueZ.GattFlag.extendedProperties) }
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
            guard let service = objects[path]?[BlueZ.GattService1.interface] else { continue }
            guard let uuid = service[BlueZ.GattService1.uuid], SimUUID.full(uuid) != nil else { return nil }
            var spec = ServiceSpec(uuid: uuid, primary: service[BlueZ.GattService1.primary] ?? true)
            // bluetoothd fails the registration when Includes is not `ao`, and takes each path
            // that names a service of this app it already put in its database (the app's
            // earlier services); any other path is logged ("include service not found" /
            // "include service attributes failed") and dropped, its handle still reserved.
            if BlueZ.GattService1.includes.isPresent(in: service) {
                guard let includes = service[BlueZ.GattService1.includes] else { return nil }
                for include in includes {
                    if let earlier = appPaths.firstIndex(where: { $0.service == include }) {
                        spec.includes.append(.index(earlier))
                    } else {
                        spec.unresolvedIncludes += 1
                    }
                }
            }
            var characteristicPaths: [(path: ObjectPath, descriptors: [ObjectPath])] = []
            for characteristicPath in paths {
                guard let characteristic = objects[characteristicPath]?[BlueZ.GattCharacteristic1.interface],
                      characteristic[BlueZ.GattCharacteristic1.service] == path else { continue }
                guard let characteristicUUID = characteristic[BlueZ.GattCharacteristic1.uuid], SimUUID.full(characteristicUUID) != nil,
                      let flags = characteristic[BlueZ.GattCharacteristic1.flags] else { return nil }
                var characteristicSpec = CharacteristicSpec(uuid: characteristicUUID, flags: Self.attributeFlags(flags),
                                                            value: characteristic[BlueZ.GattCharacteristic1.value] ?? Data())
                if flags.contains(BlueZ.GattFlag.reliableWrite) || flags.contains(BlueZ.GattFlag.writableAuxiliaries) {
                    // bluetoothd's server declares them in an Extended Properties descriptor, first.
                    characteristicSpec.descriptors.append(DescriptorSpec(uuid: "2900", flags: [BlueZ.GattFlag.read]))
                }
                var descriptorPaths: [ObjectPath] = []
                for descriptorPath in paths {
                    guard let descriptor = objects[descriptorPath]?[BlueZ.GattDescriptor1.interface],
                          descriptor[BlueZ.GattDescriptor1.characteristic] == characteristicPath,
                          let descriptorUUID = descriptor[BlueZ.GattDescriptor1.uuid], SimUUID.full(descriptorUUID) != nil else { continue }
                    characteristicSpec.descriptors.append(DescriptorSpec(uuid: descriptorUUID,
                                                                         flags: descriptor[BlueZ.GattDescriptor1.flags] ?? [BlueZ.GattFlag.read]))
                    descriptorPaths.append(descriptorPath)
                }
                spec.characteristics.append(characteristicSpec)
                characteristicPaths.append((characteristicPath, descriptorPaths))
            }
            specs.append(spec)
            appPaths.append((path, characteristicPaths))
        }
        var acquiringWrite: Set<ObjectPath> = []
        var acquiringNotify: Set<ObjectPath> = []
        for (path, interfaces) in objects {
            guard let characteristic = interfaces[BlueZ.GattCharacteristic1.interface] else { continue }
            if BlueZ.GattCharacteristic1.writeAcquired.isPresent(in: characteristic) { acquiringWrite.insert(path) }
            if BlueZ.GattCharacteristic1.notifyAcquired.isPresent(in: characteristic) { acquiringNotify.insert(path) }
        }
        layout = GattLayout(specs: specs, daemon: .bluetoothdServer)
        // The first services are those bluetoothd itself serves (GATT, Device Information).
        for (index, service) in layout.services.dropFirst(layout.daemonServiceCount).enumerated() where index < appPaths.count {
            for (characteristicIndex, characteristic) in service.characteristics.enumerated()
            where characteristicIndex < appPaths[index].characteristics.count {
                let entry = appPaths[index].characteristics[characteristicIndex]
                objectByHandle[characteristic.valueHandle] = entry.path
                handleByObject[entry.path] = characteristic.valueHandle
                if acquiringWrite.contains(entry.path) { acquireWriteHandles.insert(characteristic.valueHandle) }
                if acquiringNotify.contains(entry.path) { acquireNotifyHandles.insert(characteristic.valueHandle) }
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
                                                                       interface: FreedesktopDBus.Properties.interface,
                                                                       member: FreedesktopDBus.Properties.propertiesChanged)) { [weak self] message in
            guard let self, let path = message.path, let handle = self.handleByObject[path],
                  message.body.first == .string(BlueZ.GattCharacteristic1.interface),
                  case .bytes(let value)? = SimulatorFixtureless.changed(message, BlueZ.GattCharacteristic1.value.name) else { return }
            for link in self.links where link.subscriptions.contains(handle) {
                link.sendNotification(handle: handle, value: Data(value.prefix(Int(link.mtu) - 3)))
            }
        }
    }

    private func options(for link: SimLink, offset: Int?) -> DBusValue {
        let device = adapter.deviceForIncoming(address: link.centralAddress)
        var pairs: [(String, DBusValue)] = [("device", .objectPath(device.path))]
        if let offset, offset > 0 { pairs.append(("offset", .uint16(UInt16(clamping: offset)))) }
        pairs.append((BlueZ.GattCharacteristic1.Option.link, .string("LE")))
        pairs.append(("mtu", .uint16(link.mtu)))
        return BlueZShapes.propertyDictionary(pairs)
    }

    func linkUp(_ link: SimLink) {
        links.append(link)
        adapter.deviceForIncoming(address: link.centralAddress).incomingLinkChanged(up: true)
    }

    /// Links still up (to centrals that connected while this app was registered).
    var liveLinks: [SimLink] { links.filter(\.isUp) }

    /// Takes over a link from an app that left: the central stays connected throughout.
    func adopt(_ link: SimLink) {
        links.append(link)
        link.server = self
    }

    /// Gives a link up to the app that takes it over, without touching the connection.
    func release(_ link: SimLink) {
        links.removeAll { $0 === link }
        updateNotifying()
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
        let interface = isValue ? BlueZ.GattCharacteristic1.interface : BlueZ.GattDescriptor1.interface
        connection.call(destination: owner, path: path, interface: interface, member: BlueZ.GattCharacteristic1.Method.readValue,
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
        if isValue, !withResponse, offset == 0, acquireWriteHandles.contains(handle) {
            // bluetoothd 5.66 passes write commands through the app's AcquireWrite socket,
            // acquired on the first one.
            writeThroughSocket(handle: handle, path: path, value: value, link: link)
            return reply(.success(()))
        }
        let interface = isValue ? BlueZ.GattCharacteristic1.interface : BlueZ.GattDescriptor1.interface
        connection.call(destination: owner, path: path, interface: interface, member: BlueZ.GattCharacteristic1.Method.writeValue,
                        arguments: [.bytes(value), options(for: link, offset: offset)]) { result in
            BleLoop.assumeIsolated {
                switch result {
                case .success: reply(.success(()))
                case .failure(let error): reply(withResponse ? .failure(ApplicationPeripheral.attError(error)) : .success(()))
                }
            }
        }
    }

    private func writeThroughSocket(handle: UInt16, path: ObjectPath, value: Data, link: SimLink) {
        if let socket = writeSockets[handle], socket.isOpen {
            // A full socket drops it, as bluetoothd does.
            _ = socket.send(value)
            return
        }
        if pendingWrites[handle] != nil { pendingWrites[handle]?.append(value); return }
        pendingWrites[handle] = [value]
        guard let connection else { return }
        connection.call(destination: owner, path: path, interface: BlueZ.GattCharacteristic1.interface,
                        member: BlueZ.GattCharacteristic1.Method.acquireWrite, arguments: [options(for: link, offset: nil)]) { result in
            BleLoop.assumeIsolated { [weak self] in
                guard let self else { return }
                let queued = self.pendingWrites.removeValue(forKey: handle) ?? []
                guard case .success(let body) = result, case .unixFD(let handed)? = body.first, let descriptor = handed.take(),
                      let socket = try? SeqPacketSocket(adopting: descriptor) else {
                    // The app would not hand a socket over: the writes go through WriteValue.
                    self.acquireWriteHandles.remove(handle)
                    for data in queued {
                        self.connection?.call(destination: self.owner, path: path, interface: BlueZ.GattCharacteristic1.interface,
                                              member: BlueZ.GattCharacteristic1.Method.writeValue,
                                              arguments: [.bytes(data), self.options(for: link, offset: nil)]) { _ in }
                    }
                    return
                }
                socket.startReading { [weak self] received in
                    if case .peerClosed = received { self?.writeSockets[handle] = nil }
                }
                self.writeSockets[handle] = socket
                for data in queued { _ = socket.send(data) }
            }
        }
    }

    /// The first subscriber of a characteristic whose app offers `AcquireNotify`: bluetoothd
    /// acquires the socket (instead of `StartNotify`) and sends what the app writes there to
    /// every subscribed central.
    private func acquireNotify(handle: UInt16, path: ObjectPath) {
        guard let connection, let link = links.first(where: { $0.subscriptions.contains(handle) }) else { return }
        connection.call(destination: owner, path: path, interface: BlueZ.GattCharacteristic1.interface,
                        member: BlueZ.GattCharacteristic1.Method.acquireNotify, arguments: [options(for: link, offset: nil)]) { result in
            BleLoop.assumeIsolated { [weak self] in
                guard let self else { return }
                guard case .success(let body) = result, case .unixFD(let handed)? = body.first, let descriptor = handed.take(),
                      let socket = try? SeqPacketSocket(adopting: descriptor) else { return }
                guard self.notifying.contains(handle) else { return socket.close() }
                socket.startReading { [weak self] received in
                    guard let self else { return }
                    switch received {
                    case .packet(let value):
                        for link in self.links where link.subscriptions.contains(handle) {
                            link.sendNotification(handle: handle, value: Data(value.prefix(Int(link.mtu) - 3)))
                        }
                    case .tooLong: break
                    case .peerClosed: self.notifySockets[handle] = nil
                    }
                }
                self.notifySockets[handle] = socket
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
            if acquireNotifyHandles.contains(handle) {
                acquireNotify(handle: handle, path: path)
                continue
            }
            connection.call(destination: owner, path: path, interface: BlueZ.GattCharacteristic1.interface, member: BlueZ.GattCharacteristic1.Method.startNotify) { _ in }
        }
        for handle in notifying.subtracting(wanted) {
            guard let path = objectByHandle[handle] else { continue }
            if acquireNotifyHandles.contains(handle) {
                // Closing the socket is bluetoothd's StopNotify for an acquired characteristic.
                notifySockets.removeValue(forKey: handle)?.close()
                continue
            }
            connection.call(destination: owner, path: path, interface: BlueZ.GattCharacteristic1.interface, member: BlueZ.GattCharacteristic1.Method.stopNotify) { _ in }
        }
        notifying = wanted
    }

    func stopNotifyAll() {
        for link in links { link.subscriptions.removeAll() }
        updateNotifying()
    }

    func confirmed(handle: UInt16, link: SimLink) {
        guard let path = objectByHandle[handle], let connection else { return }
        var confirm = DBusMessage.methodCall(destination: owner, path: path, interface: BlueZ.GattCharacteristic1.interface, member: BlueZ.GattCharacteristic1.Method.confirm)
        confirm.noReplyExpected = true
        _ = try? connection.send(confirm)
    }

    func close() {
        valueSignals?.cancel()
        valueSignals = nil
        closeSockets()
        dropLinks()
    }

    private func closeSockets() {
        for socket in writeSockets.values { socket.close() }
        for socket in notifySockets.values { socket.close() }
        writeSockets.removeAll()
        notifySockets.removeAll()
        pendingWrites.removeAll()
    }

    /// The app left the bus while centrals were connected: bluetoothd takes its services out of
    /// the database and indicates Service Changed to each central, which then drops their
    /// objects; the links themselves stay, serving bluetoothd's own services.
    func ownerLeft() {
        valueSignals?.cancel()
        valueSignals = nil
        closeSockets()
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
        case BlueZ.ErrorName.notPermitted: return message.contains("Write") ? .writeNotPermitted : .readNotPermitted
        case BlueZ.ErrorName.invalidOffset: return .invalidOffset
        case BlueZ.ErrorName.invalidValueLength: return .invalidAttributeValueLength
        case BlueZ.ErrorName.notAuthorized: return .insufficientAuthorization
        case BlueZ.ErrorName.notSupported: return .requestNotSupported
        case BlueZ.ErrorName.failed:
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
