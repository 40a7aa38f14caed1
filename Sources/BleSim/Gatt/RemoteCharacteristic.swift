import BleDBus
import BlueZVocabulary
import Foundation

/// `org.bluez.GattCharacteristic1` on the client side.
@BleLoop
final class RemoteCharacteristic {
    let path: ObjectPath
    let servicePath: ObjectPath
    let layout: GattLayout.Characteristic
    private unowned let device: SimDevice
    private unowned let tree: RemoteGattTree
    private var value = Data()
    /// Clients with a StartNotify session, in order.
    private var notifySessions: [String] = []
    /// The `Notifying` of the sessions: bluetoothd sets it once the CCCD is written, so a
    /// session started while disconnected leaves it false until the next connection.
    private var sessionsNotifying = false
    /// Our ends of the `AcquireNotify`/`AcquireWrite` socket pairs, as bluetoothd's `socketpair`.
    private var notifyAcquired: SeqPacketSocket?
    private var writeAcquired: SeqPacketSocket?
    private var writeInFlight = false
    private var pendingRead: (offset: UInt16, calls: [IncomingCall])?

    init(tree: RemoteGattTree, device: SimDevice, servicePath: ObjectPath, layout: GattLayout.Characteristic) {
        self.tree = tree
        self.device = device
        self.servicePath = servicePath
        self.layout = layout
        path = BlueZ.Paths.characteristic(service: servicePath, handle: layout.handle)
    }

    private var simulator: Simulator { device.adapter.simulator }
    private var objects: ObjectRegistry? { device.adapter.objects }
    private var canNotify: Bool { layout.has(BlueZ.GattFlag.notify) || layout.has(BlueZ.GattFlag.indicate) }
    /// bluetoothd 5.66 has `MTU` only while it has a GATT client for the device, from the
    /// ATT connection to its loss (src/gatt-client.c, `characteristic_mtu_exists`).
    private var mtu: UInt16? { device.link?.mtu }

    func changed(_ names: [String]) {
        objects?.emitPropertiesChanged(path: path, interface: BlueZ.GattCharacteristic1.interface, names: names)
    }

    func export() {
        var properties: [ExportedProperty] = [
            ExportedProperty(BlueZ.GattCharacteristic1.uuid) { [layout] in .string(layout.uuid) },
            ExportedProperty(BlueZ.GattCharacteristic1.service) { [servicePath] in .objectPath(servicePath) },
            ExportedProperty(BlueZ.GattCharacteristic1.value) { [weak self] in self.map { .bytes($0.value) } },
            ExportedProperty(BlueZ.GattCharacteristic1.notifying) { [weak self] in
                guard let self, self.canNotify else { return nil }
                return .boolean(self.sessionsNotifying || self.notifyAcquired != nil)
            },
            ExportedProperty(BlueZ.GattCharacteristic1.flags) { [layout] in .array(element: .string, layout.flags.map { .string($0) }) },
            ExportedProperty(BlueZ.GattCharacteristic1.writeAcquired) { [weak self] in
                guard let self, self.layout.has(BlueZ.GattFlag.writeWithoutResponse) else { return nil }
                return .boolean(self.writeAcquired != nil)
            },
            ExportedProperty(BlueZ.GattCharacteristic1.notifyAcquired) { [weak self] in
                guard let self, self.layout.has(BlueZ.GattFlag.notify) else { return nil }
                return .boolean(self.notifyAcquired != nil)
            },
            ExportedProperty(BlueZ.GattCharacteristic1.mtu) { [weak self] in self?.mtu.map { .uint16($0) } },
        ]
        properties.sort { RemoteCharacteristic.order($0.name) < RemoteCharacteristic.order($1.name) }
        let options = ArgumentDescription("options", .dictionary(key: .string, value: .variant))
        objects?.register(path, interfaces: [ExportedInterface(BlueZ.GattCharacteristic1.interface, methods: [
            ExportedMethod(BlueZ.GattCharacteristic1.Method.readValue, in: [options], out: [ArgumentDescription("value", .array(.byte))]) { [weak self] call in
                self?.read(call)
            },
            ExportedMethod(BlueZ.GattCharacteristic1.Method.writeValue, in: [ArgumentDescription("value", .array(.byte)), options]) { [weak self] call in
                self?.write(call)
            },
            ExportedMethod(BlueZ.GattCharacteristic1.Method.acquireWrite, in: [options], out: [ArgumentDescription("fd", .unixFD), ArgumentDescription("mtu", .uint16)]) {
                [weak self] call in self?.acquireWrite(call)
            },
            ExportedMethod(BlueZ.GattCharacteristic1.Method.acquireNotify, in: [options], out: [ArgumentDescription("fd", .unixFD), ArgumentDescription("mtu", .uint16)]) {
                [weak self] call in self?.acquireNotify(call)
            },
            ExportedMethod(BlueZ.GattCharacteristic1.Method.startNotify) { [weak self] call in self?.startNotify(call) },
            ExportedMethod(BlueZ.GattCharacteristic1.Method.stopNotify) { [weak self] call in self?.stopNotify(call) },
        ], properties: properties)])
    }

    private static func order(_ name: String) -> Int {
        // GetAll order of bluetoothd 5.66 (device_service0015_char001d.xml).
        let names = [BlueZ.GattCharacteristic1.uuid.name, BlueZ.GattCharacteristic1.service.name, BlueZ.GattCharacteristic1.value.name, BlueZ.GattCharacteristic1.notifying.name, BlueZ.GattCharacteristic1.flags.name,
                     BlueZ.GattCharacteristic1.writeAcquired.name, BlueZ.GattCharacteristic1.notifyAcquired.name, BlueZ.GattCharacteristic1.mtu.name]
        return names.firstIndex(of: name) ?? 99
    }

    // MARK: Read

    private func read(_ call: IncomingCall) {
        guard let options = OptionReader(call.arguments.first) else { return BlueZError.invalidArguments(call) }
        let offset: UInt16
        do {
            offset = try options.get(BlueZ.GattCharacteristic1.Option.offset, UInt16.self) ?? 0
            _ = try options.get(BlueZ.GattCharacteristic1.Option.device, ObjectPath.self)
        } catch {
            return BlueZError.invalidArguments(call)
        }
        guard device.isConnected else { return BlueZError.notConnected(call) }
        if let pending = pendingRead {
            // bluetoothd merges a read with the same offset into the outstanding one.
            guard pending.offset == offset else { return BlueZError.inProgress(call) }
            pendingRead?.calls.append(call)
            return
        }
        pendingRead = (offset, [call])
        overLink(device, cost: simulator.timing.intervals(1), { [weak self] link in
            guard let self else { return }
            link.server.read(handle: self.layout.valueHandle, offset: Int(offset), link: link) { [weak self] result in
                self?.finishRead(result, offset: offset)
            }
        }, failed: { [weak self] in self?.finishRead(.failure(.other(0)), offset: offset, notConnected: true) })
    }

    private func finishRead(_ result: Result<Data, AttError>, offset: UInt16, notConnected: Bool = false) {
        let calls = pendingRead?.calls ?? []
        pendingRead = nil
        switch result {
        case .success(let data):
            value = offset == 0 ? data : value.prefix(Int(offset)) + data
            // The cached value is announced (whole) before the reply, even when unchanged.
            changed([BlueZ.GattCharacteristic1.value.name])
            for call in calls { call.reply([.bytes(data)]) }
        case .failure(let error):
            for call in calls {
                if notConnected { BlueZError.notConnected(call) } else { BlueZError.att(call, error) }
            }
        }
    }

    // MARK: Write

    private enum WriteKind: String { case command, request, reliable }

    private func write(_ call: IncomingCall) {
        guard case .bytes(let data) = call.arguments[0], let options = OptionReader(call.arguments[1]) else {
            return BlueZError.invalidArguments(call)
        }
        let offset: UInt16
        let requestedType: String?
        do {
            offset = try options.get(BlueZ.GattCharacteristic1.Option.offset, UInt16.self) ?? 0
            requestedType = try options.get(BlueZ.GattCharacteristic1.Option.type, String.self)
            _ = try options.get(BlueZ.GattCharacteristic1.Option.prepareAuthorize, Bool.self)
            _ = try options.get(BlueZ.GattCharacteristic1.Option.device, ObjectPath.self)
        } catch {
            return BlueZError.invalidArguments(call)
        }
        let kind: WriteKind
        if let requestedType {
            guard let parsed = WriteKind(rawValue: requestedType) else { return BlueZError.notSupported(call) }
            kind = parsed
        } else if layout.has(BlueZ.GattFlag.reliableWrite) {
            kind = .reliable
        } else if layout.has(BlueZ.GattFlag.write) {
            kind = .request
        } else if layout.has(BlueZ.GattFlag.writeWithoutResponse) {
            kind = .command
        } else {
            // Decided on the client side, before anything goes over the air.
            return BlueZError.notSupported(call)
        }
        guard writeAcquired == nil else { return BlueZError.notPermitted(call, BlueZ.ErrorMessage.writeAcquired) }
        guard device.isConnected, let link = device.link else { return BlueZError.notConnected(call) }
        switch kind {
        case .command:
            guard data.count <= Int(link.mtu) - 3, offset == 0 else {
                return BlueZError.failed(call, BlueZ.ErrorMessage.writeNotInitiated)
            }
            // bluetoothd answers once the command is queued; nothing comes back from the peer.
            call.reply()
            sendCommand(data)
        case .request, .reliable:
            guard !writeInFlight else { return BlueZError.inProgress(call) }
            writeInFlight = true
            overLink(device, cost: simulator.timing.transfer(length: data.count, mtu: link.mtu), { [weak self] link in
                guard let self else { return }
                link.server.write(handle: self.layout.valueHandle, value: data, offset: Int(offset), withResponse: true,
                                  link: link) { [weak self] result in
                    self?.writeInFlight = false
                    switch result {
                    case .success: call.reply()
                    case .failure(let error): BlueZError.att(call, error)
                    }
                }
            }, failed: { [weak self] in
                self?.writeInFlight = false
                BlueZError.notConnected(call)
            })
        }
    }

    private func sendCommand(_ data: Data) {
        guard let link = device.link else { return }
        overLink(device, cost: simulator.timing.transfer(length: data.count, mtu: link.mtu), { [weak self] link in
            guard let self else { return }
            // Commands longer than an attribute may hold are dropped by the peer's server.
            guard data.count <= 512 else { return }
            link.server.write(handle: self.layout.valueHandle, value: data, offset: 0, withResponse: false, link: link) { _ in }
        }, failed: {})
    }

    // MARK: Notify sessions

    private func startNotify(_ call: IncomingCall) {
        guard canNotify else { return BlueZError.notSupported(call) }
        guard notifyAcquired == nil else { return BlueZError.notPermitted(call, BlueZ.ErrorMessage.notifyAcquired) }
        if notifySessions.contains(call.sender) {
            // After a disconnect the session lingers and a new StartNotify is refused.
            return device.isConnected ? call.reply() : BlueZError.inProgress(call)
        }
        let first = notifySessions.isEmpty
        notifySessions.append(call.sender)
        // Disconnected: bluetoothd 5.66 replies at once and writes the CCCD on the next
        // connection, which is when `Notifying` turns true (seen in the VM).
        if first, let link = device.link {
            link.server.subscriptionChanged(handle: layout.valueHandle, enabled: true, link: link)
            sessionsNotifying = true
            changed([BlueZ.GattCharacteristic1.notifying.name])
        }
        call.reply()
    }

    private func stopNotify(_ call: IncomingCall) {
        guard let index = notifySessions.firstIndex(of: call.sender) else {
            return BlueZError.failed(call, BlueZ.ErrorMessage.noNotifySession)
        }
        notifySessions.remove(at: index)
        if notifySessions.isEmpty { endSessions() }
        call.reply()
    }

    func clientLeft(_ client: String) {
        guard notifySessions.contains(client) else { return }
        notifySessions.removeAll { $0 == client }
        if notifySessions.isEmpty { endSessions() }
    }

    private func endSessions() {
        if let link = device.link { link.server.subscriptionChanged(handle: layout.valueHandle, enabled: false, link: link) }
        guard sessionsNotifying else { return }
        sessionsNotifying = false
        changed([BlueZ.GattCharacteristic1.notifying.name])
    }

    // MARK: Acquire

    private func acquireNotify(_ call: IncomingCall) {
        guard layout.has(BlueZ.GattFlag.notify) else { return BlueZError.notSupported(call) }
        guard notifyAcquired == nil else { return BlueZError.notPermitted(call, BlueZ.ErrorMessage.notifyAcquired) }
        guard notifySessions.isEmpty else { return BlueZError.inProgress(call) }
        guard device.isConnected, let link = device.link else { return BlueZError.notConnected(call) }
        guard let pair = try? SeqPacketSocket.makePair() else {
            return BlueZError.failed(call, BlueZ.ErrorMessage.socketFailed)
        }
        pair.ours.startReading { [weak self] received in
            if case .peerClosed = received { self?.notifySocketClosed() }
        }
        notifyAcquired = pair.ours
        link.server.subscriptionChanged(handle: layout.valueHandle, enabled: true, link: link)
        changed([BlueZ.GattCharacteristic1.notifyAcquired.name, BlueZ.GattCharacteristic1.notifying.name])
        call.reply([.unixFD(UnixFileDescriptor(adopting: pair.theirs)), .uint16(link.mtu)])
    }

    private func notifySocketClosed() {
        guard notifyAcquired != nil else { return }
        notifyAcquired?.close()
        notifyAcquired = nil
        if let link = device.link { link.server.subscriptionChanged(handle: layout.valueHandle, enabled: false, link: link) }
        changed([BlueZ.GattCharacteristic1.notifyAcquired.name, BlueZ.GattCharacteristic1.notifying.name])
    }

    private func acquireWrite(_ call: IncomingCall) {
        guard layout.has(BlueZ.GattFlag.writeWithoutResponse) else { return BlueZError.notSupported(call) }
        guard writeAcquired == nil else { return BlueZError.notPermitted(call, BlueZ.ErrorMessage.writeAcquired) }
        guard device.isConnected, let link = device.link else { return BlueZError.notConnected(call) }
        guard let pair = try? SeqPacketSocket.makePair() else {
            return BlueZError.failed(call, BlueZ.ErrorMessage.socketFailed)
        }
        pair.ours.startReading { [weak self] received in
            switch received {
            case .packet(let packet): self?.sendCommand(packet)
            case .tooLong: break
            case .peerClosed: self?.writeSocketClosed()
            }
        }
        writeAcquired = pair.ours
        changed([BlueZ.GattCharacteristic1.writeAcquired.name])
        call.reply([.unixFD(UnixFileDescriptor(adopting: pair.theirs)), .uint16(link.mtu)])
    }

    private func writeSocketClosed() {
        guard writeAcquired != nil else { return }
        writeAcquired?.close()
        writeAcquired = nil
        changed([BlueZ.GattCharacteristic1.writeAcquired.name])
    }

    /// Closes acquired sockets (the client sees HUP), as on disconnect.
    func releaseAcquired(announce: Bool) {
        if notifyAcquired != nil {
            notifyAcquired?.close()
            notifyAcquired = nil
            if announce { changed([BlueZ.GattCharacteristic1.notifyAcquired.name]) }
        }
        if writeAcquired != nil {
            writeAcquired?.close()
            writeAcquired = nil
            if announce { changed([BlueZ.GattCharacteristic1.writeAcquired.name]) }
        }
    }

    // MARK: Link

    func linkUp(_ link: SimLink) {
        // StartNotify sessions survive a disconnect and are re-armed on reconnect; one started
        // while disconnected becomes `Notifying` now.
        guard !notifySessions.isEmpty else { return }
        link.server.subscriptionChanged(handle: layout.valueHandle, enabled: true, link: link)
        if !sessionsNotifying {
            sessionsNotifying = true
            changed([BlueZ.GattCharacteristic1.notifying.name])
        }
    }

    func linkDown() {
        releaseAcquired(announce: true)
        writeInFlight = false
        if let pending = pendingRead {
            pendingRead = nil
            for call in pending.calls { BlueZError.notConnected(call) }
        }
    }

    func notification(_ data: Data, link: SimLink) {
        if layout.has(BlueZ.GattFlag.indicate) && !layout.has(BlueZ.GattFlag.notify) { link.server.confirmed(handle: layout.valueHandle, link: link) }
        if let socket = notifyAcquired {
            // A full socket drops it, as a slow reader would lose notifications.
            _ = socket.send(data)
            return
        }
        guard !notifySessions.isEmpty else { return }
        value = data
        changed([BlueZ.GattCharacteristic1.value.name])
    }
}
