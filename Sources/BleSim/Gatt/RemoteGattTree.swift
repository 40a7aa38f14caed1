import BleDBus
import Foundation
import Glibc

/// The GATT client objects bluetoothd exports under a device (`serviceXXXX/charYYYY/descZZZZ`),
/// with its per-characteristic rules: one write at a time, coalesced reads, notify sessions
/// per client, `AcquireWrite`/`AcquireNotify` sockets.
@BleLoop
final class RemoteGattTree {
    private(set) var layout: GattLayout
    private unowned let device: SimDevice
    private var services: [ObjectPath] = []
    private var characteristics: [RemoteCharacteristic] = []
    private var descriptors: [RemoteDescriptor] = []
    private var byValueHandle: [UInt16: RemoteCharacteristic] = [:]

    init(device: SimDevice, layout: GattLayout) {
        self.device = device
        self.layout = layout
        for service in layout.services {
            let servicePath = ObjectPath(built: device.path.rawValue + "/service" + RemoteGattTree.hex(service.handle))
            services.append(servicePath)
            for characteristic in service.characteristics {
                let remote = RemoteCharacteristic(tree: self, device: device, servicePath: servicePath, layout: characteristic)
                characteristics.append(remote)
                byValueHandle[characteristic.valueHandle] = remote
                for descriptor in characteristic.descriptors {
                    descriptors.append(RemoteDescriptor(device: device, characteristic: remote, layout: descriptor))
                }
            }
        }
    }

    static func hex(_ handle: UInt16) -> String {
        let digits = String(handle, radix: 16)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    var serviceUUIDs: [String] { layout.serviceUUIDs }

    private var objects: ObjectRegistry? { device.adapter.objects }

    /// Registers every object, in handle order (InterfacesAdded per object, as bluetoothd).
    func export() {
        guard let objects else { return }
        for (index, service) in layout.services.enumerated() {
            let path = services[index]
            objects.register(path, interfaces: [ExportedInterface("org.bluez.GattService1", properties: [
                ExportedProperty("UUID", .string) { .string(service.uuid) },
                ExportedProperty("Device", .objectPath) { [weak device] in device.map { .objectPath($0.path) } },
                ExportedProperty("Primary", .boolean) { .boolean(service.primary) },
                ExportedProperty("Includes", .array(.objectPath)) { .array(element: .objectPath, []) },
            ])])
            for characteristic in characteristics where characteristic.servicePath == path {
                characteristic.export()
                for descriptor in descriptors where descriptor.characteristic === characteristic { descriptor.export() }
            }
        }
    }

    /// Removes every object depth-first in handle order, descriptors before their
    /// characteristic and characteristics before their service, as bluetoothd's
    /// `unregister_service` walks its queues.
    func unexport() {
        guard let objects else { return }
        for characteristic in characteristics { characteristic.releaseAcquired(announce: false) }
        for (index, _) in layout.services.enumerated() {
            let path = services[index]
            for characteristic in characteristics where characteristic.servicePath == path {
                for descriptor in descriptors where descriptor.characteristic === characteristic {
                    objects.unregister(descriptor.path)
                }
                objects.unregister(characteristic.path)
            }
            objects.unregister(path)
        }
    }

    /// The peer's database lost these services while the link stayed up (a bridged app left the
    /// bus; bluetoothd's server then indicates Service Changed): their objects go in
    /// `unexport`'s order, and the other services stay as they are.
    func removeServices(handles: Set<UInt16>) {
        guard let objects else { return }
        var kept: [GattLayout.Service] = []
        var keptPaths: [ObjectPath] = []
        for (index, service) in layout.services.enumerated() {
            let path = services[index]
            guard handles.contains(service.handle) else {
                kept.append(service)
                keptPaths.append(path)
                continue
            }
            for characteristic in characteristics where characteristic.servicePath == path {
                characteristic.releaseAcquired(announce: false)
                for descriptor in descriptors where descriptor.characteristic === characteristic {
                    objects.unregister(descriptor.path)
                }
                objects.unregister(characteristic.path)
                byValueHandle[characteristic.layout.valueHandle] = nil
            }
            objects.unregister(path)
        }
        let removedPaths = Set(services).subtracting(keptPaths)
        // Descriptors first: they hold their characteristic unowned.
        descriptors.removeAll { removedPaths.contains($0.characteristic.servicePath) }
        characteristics.removeAll { removedPaths.contains($0.servicePath) }
        services = keptPaths
        layout.services = kept
    }

    func linkUp(_ link: SimLink) {
        for characteristic in characteristics { characteristic.linkUp(link) }
    }

    func linkDown() {
        for characteristic in characteristics { characteristic.linkDown() }
        for descriptor in descriptors { descriptor.linkDown() }
    }

    func clientLeft(_ client: String) {
        for characteristic in characteristics { characteristic.clientLeft(client) }
    }

    func notification(handle: UInt16, value: Data, link: SimLink) {
        byValueHandle[handle]?.notification(value, link: link)
    }
}

/// Runs an ATT request over the link after its cost, counting the packet for link-loss faults.
@BleLoop
private func overLink(_ device: SimDevice, cost: Duration, _ body: @escaping @BleLoop (SimLink) -> Void,
                      failed: @escaping @BleLoop () -> Void) {
    guard let link = device.link else { return failed() }
    device.adapter.simulator.clock.after(cost) {
        guard device.link === link, link.countPacket() else { return failed() }
        body(link)
    }
}

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
    private var notifyAcquired: AcquiredSocket?
    private var writeAcquired: AcquiredSocket?
    private var writeInFlight = false
    private var pendingRead: (offset: UInt16, calls: [IncomingCall])?

    init(tree: RemoteGattTree, device: SimDevice, servicePath: ObjectPath, layout: GattLayout.Characteristic) {
        self.tree = tree
        self.device = device
        self.servicePath = servicePath
        self.layout = layout
        path = ObjectPath(built: servicePath.rawValue + "/char" + RemoteGattTree.hex(layout.handle))
    }

    private var simulator: Simulator { device.adapter.simulator }
    private var objects: ObjectRegistry? { device.adapter.objects }
    private var canNotify: Bool { layout.has("notify") || layout.has("indicate") }
    private var mtu: UInt16 { device.link?.mtu ?? 517 }

    func changed(_ names: [String]) {
        objects?.emitPropertiesChanged(path: path, interface: "org.bluez.GattCharacteristic1", names: names)
    }

    func export() {
        var properties: [ExportedProperty] = [
            ExportedProperty("UUID", .string) { [layout] in .string(layout.uuid) },
            ExportedProperty("Service", .objectPath) { [servicePath] in .objectPath(servicePath) },
            ExportedProperty("Value", .array(.byte)) { [weak self] in self.map { .bytes($0.value) } },
            ExportedProperty("Notifying", .boolean) { [weak self] in
                guard let self, self.canNotify else { return nil }
                return .boolean(self.sessionsNotifying || self.notifyAcquired != nil)
            },
            ExportedProperty("Flags", .array(.string)) { [layout] in .array(element: .string, layout.flags.map { .string($0) }) },
            ExportedProperty("WriteAcquired", .boolean) { [weak self] in
                guard let self, self.layout.has("write-without-response") else { return nil }
                return .boolean(self.writeAcquired != nil)
            },
            ExportedProperty("NotifyAcquired", .boolean) { [weak self] in
                guard let self, self.layout.has("notify") else { return nil }
                return .boolean(self.notifyAcquired != nil)
            },
            ExportedProperty("MTU", .uint16) { [weak self] in self.map { .uint16($0.mtu) } },
        ]
        properties.sort { RemoteCharacteristic.order($0.name) < RemoteCharacteristic.order($1.name) }
        let options = ArgumentDescription("options", .dictionary(key: .string, value: .variant))
        objects?.register(path, interfaces: [ExportedInterface("org.bluez.GattCharacteristic1", methods: [
            ExportedMethod("ReadValue", in: [options], out: [ArgumentDescription("value", .array(.byte))]) { [weak self] call in
                self?.read(call)
            },
            ExportedMethod("WriteValue", in: [ArgumentDescription("value", .array(.byte)), options]) { [weak self] call in
                self?.write(call)
            },
            ExportedMethod("AcquireWrite", in: [options], out: [ArgumentDescription("fd", .unixFD), ArgumentDescription("mtu", .uint16)]) {
                [weak self] call in self?.acquireWrite(call)
            },
            ExportedMethod("AcquireNotify", in: [options], out: [ArgumentDescription("fd", .unixFD), ArgumentDescription("mtu", .uint16)]) {
                [weak self] call in self?.acquireNotify(call)
            },
            ExportedMethod("StartNotify") { [weak self] call in self?.startNotify(call) },
            ExportedMethod("StopNotify") { [weak self] call in self?.stopNotify(call) },
        ], properties: properties)])
    }

    private static func order(_ name: String) -> Int {
        ["UUID", "Service", "Value", "Notifying", "Flags", "WriteAcquired", "NotifyAcquired", "MTU"].firstIndex(of: name) ?? 99
    }

    // MARK: Read

    private func read(_ call: IncomingCall) {
        guard let options = OptionReader(call.arguments.first) else { return BlueZError.invalidArguments(call) }
        let offset: UInt16
        do {
            offset = try options.get("offset", UInt16.self) ?? 0
            _ = try options.get("device", ObjectPath.self)
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
            changed(["Value"])
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
            offset = try options.get("offset", UInt16.self) ?? 0
            requestedType = try options.get("type", String.self)
            _ = try options.get("prepare-authorize", Bool.self)
            _ = try options.get("device", ObjectPath.self)
        } catch {
            return BlueZError.invalidArguments(call)
        }
        let kind: WriteKind
        if let requestedType {
            guard let parsed = WriteKind(rawValue: requestedType) else { return BlueZError.notSupported(call) }
            kind = parsed
        } else if layout.has("reliable-write") {
            kind = .reliable
        } else if layout.has("write") {
            kind = .request
        } else if layout.has("write-without-response") {
            kind = .command
        } else {
            // Decided on the client side, before anything goes over the air.
            return BlueZError.notSupported(call)
        }
        guard writeAcquired == nil else { return BlueZError.notPermitted(call, "Write acquired") }
        guard device.isConnected, let link = device.link else { return BlueZError.notConnected(call) }
        switch kind {
        case .command:
            guard data.count <= Int(link.mtu) - 3, offset == 0 else {
                return BlueZError.failed(call, "Failed to initiate write")
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
        guard notifyAcquired == nil else { return BlueZError.notPermitted(call, "Notify acquired") }
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
            changed(["Notifying"])
        }
        call.reply()
    }

    private func stopNotify(_ call: IncomingCall) {
        guard let index = notifySessions.firstIndex(of: call.sender) else {
            return BlueZError.failed(call, "No notify session started")
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
        changed(["Notifying"])
    }

    // MARK: Acquire

    private func acquireNotify(_ call: IncomingCall) {
        guard layout.has("notify") else { return BlueZError.notSupported(call) }
        guard notifyAcquired == nil else { return BlueZError.notPermitted(call, "Notify acquired") }
        guard notifySessions.isEmpty else { return BlueZError.inProgress(call) }
        guard device.isConnected, let link = device.link else { return BlueZError.notConnected(call) }
        guard let pair = AcquiredSocket.make(onClose: { [weak self] in self?.notifySocketClosed() }, onPacket: nil) else {
            return BlueZError.failed(call, "Failed to create socket")
        }
        notifyAcquired = pair.ours
        link.server.subscriptionChanged(handle: layout.valueHandle, enabled: true, link: link)
        changed(["NotifyAcquired", "Notifying"])
        call.reply([.unixFD(pair.theirs), .uint16(link.mtu)])
    }

    private func notifySocketClosed() {
        guard notifyAcquired != nil else { return }
        notifyAcquired?.close()
        notifyAcquired = nil
        if let link = device.link { link.server.subscriptionChanged(handle: layout.valueHandle, enabled: false, link: link) }
        changed(["NotifyAcquired", "Notifying"])
    }

    private func acquireWrite(_ call: IncomingCall) {
        guard layout.has("write-without-response") else { return BlueZError.notSupported(call) }
        guard writeAcquired == nil else { return BlueZError.notPermitted(call, "Write acquired") }
        guard device.isConnected, let link = device.link else { return BlueZError.notConnected(call) }
        guard let pair = AcquiredSocket.make(onClose: { [weak self] in self?.writeSocketClosed() },
                                             onPacket: { [weak self] packet in self?.sendCommand(packet) }) else {
            return BlueZError.failed(call, "Failed to create socket")
        }
        writeAcquired = pair.ours
        changed(["WriteAcquired"])
        call.reply([.unixFD(pair.theirs), .uint16(link.mtu)])
    }

    private func writeSocketClosed() {
        guard writeAcquired != nil else { return }
        writeAcquired?.close()
        writeAcquired = nil
        changed(["WriteAcquired"])
    }

    /// Closes acquired sockets (the client sees HUP), as on disconnect.
    func releaseAcquired(announce: Bool) {
        if notifyAcquired != nil {
            notifyAcquired?.close()
            notifyAcquired = nil
            if announce { changed(["NotifyAcquired"]) }
        }
        if writeAcquired != nil {
            writeAcquired?.close()
            writeAcquired = nil
            if announce { changed(["WriteAcquired"]) }
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
            changed(["Notifying"])
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
        if layout.has("indicate") && !layout.has("notify") { link.server.confirmed(handle: layout.valueHandle, link: link) }
        if let socket = notifyAcquired {
            socket.send(data)
            return
        }
        guard !notifySessions.isEmpty else { return }
        value = data
        changed(["Value"])
    }
}

/// `org.bluez.GattDescriptor1` on the client side.
@BleLoop
final class RemoteDescriptor {
    let path: ObjectPath
    let layout: GattLayout.Descriptor
    unowned let characteristic: RemoteCharacteristic
    private unowned let device: SimDevice
    private var value = Data()
    private var busy = false

    init(device: SimDevice, characteristic: RemoteCharacteristic, layout: GattLayout.Descriptor) {
        self.device = device
        self.characteristic = characteristic
        self.layout = layout
        path = ObjectPath(built: characteristic.path.rawValue + "/desc" + RemoteGattTree.hex(layout.handle))
    }

    private var simulator: Simulator { device.adapter.simulator }

    func export() {
        let options = ArgumentDescription("options", .dictionary(key: .string, value: .variant))
        device.adapter.objects?.register(path, interfaces: [ExportedInterface("org.bluez.GattDescriptor1", methods: [
            ExportedMethod("ReadValue", in: [options], out: [ArgumentDescription("value", .array(.byte))]) { [weak self] call in
                self?.read(call)
            },
            ExportedMethod("WriteValue", in: [ArgumentDescription("value", .array(.byte)), options]) { [weak self] call in
                self?.write(call)
            },
        ], properties: [
            ExportedProperty("UUID", .string) { [layout] in .string(layout.uuid) },
            ExportedProperty("Characteristic", .objectPath) { [weak characteristic] in characteristic.map { .objectPath($0.path) } },
            ExportedProperty("Value", .array(.byte)) { [weak self] in self.map { .bytes($0.value) } },
        ])])
    }

    private func read(_ call: IncomingCall) {
        guard let options = OptionReader(call.arguments.first) else { return BlueZError.invalidArguments(call) }
        let offset: UInt16
        do { offset = try options.get("offset", UInt16.self) ?? 0 } catch { return BlueZError.invalidArguments(call) }
        guard device.isConnected else { return BlueZError.notConnected(call) }
        overLink(device, cost: simulator.timing.intervals(1), { [weak self] link in
            guard let self else { return }
            link.server.read(handle: self.layout.handle, offset: Int(offset), link: link) { [weak self] result in
                guard let self else { return }
                switch result {
                case .success(let data):
                    self.value = offset == 0 ? data : self.value.prefix(Int(offset)) + data
                    self.device.adapter.objects?.emitPropertiesChanged(path: self.path, interface: "org.bluez.GattDescriptor1",
                                                                       names: ["Value"])
                    call.reply([.bytes(data)])
                case .failure(let error):
                    BlueZError.att(call, error)
                }
            }
        }, failed: { BlueZError.notConnected(call) })
    }

    private func write(_ call: IncomingCall) {
        guard case .bytes(let data) = call.arguments[0], let options = OptionReader(call.arguments[1]) else {
            return BlueZError.invalidArguments(call)
        }
        let offset: UInt16
        do {
            offset = try options.get("offset", UInt16.self) ?? 0
            _ = try options.get("type", String.self)
        } catch {
            return BlueZError.invalidArguments(call)
        }
        // bluetoothd keeps the CCCD to itself: StartNotify/AcquireNotify are the way.
        guard layout.uuid != GattLayout.cccdUUID else { return BlueZError.notPermitted(call, "Write not permitted") }
        guard device.isConnected else { return BlueZError.notConnected(call) }
        guard !busy else { return BlueZError.inProgress(call) }
        busy = true
        overLink(device, cost: simulator.timing.transfer(length: data.count, mtu: device.link?.mtu ?? 23), { [weak self] link in
            guard let self else { return }
            link.server.write(handle: self.layout.handle, value: data, offset: Int(offset), withResponse: true, link: link) {
                [weak self] result in
                self?.busy = false
                switch result {
                case .success: call.reply()
                case .failure(let error): BlueZError.att(call, error)
                }
            }
        }, failed: { [weak self] in
            self?.busy = false
            BlueZError.notConnected(call)
        })
    }

    func linkDown() { busy = false }
}

/// Our end of an `AcquireWrite`/`AcquireNotify` socket pair (AF_UNIX, SOCK_SEQPACKET): one
/// datagram per ATT packet, as bluetoothd's `socketpair`.
@BleLoop
final class AcquiredSocket {
    private var descriptor: Int32
    private var watch: FileDescriptorWatch?

    private init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Makes the pair; `theirs` goes to the client in the reply.
    static func make(onClose: @escaping @BleLoop () -> Void,
                     onPacket: (@BleLoop (Data) -> Void)?) -> (ours: AcquiredSocket, theirs: UnixFileDescriptor)? {
        var pair: [Int32] = [-1, -1]
        let type = Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        guard socketpair(AF_UNIX, type, 0, &pair) == 0 else { return nil }
        let ours = AcquiredSocket(descriptor: pair[0])
        let theirs = UnixFileDescriptor(adopting: pair[1])
        let descriptor = pair[0]
        ours.watch = FileDescriptorWatch(descriptor: descriptor) { [weak ours] events in
            guard let ours, ours.descriptor >= 0 else { return }
            if events.contains(.readable) {
                var buffer = [UInt8](repeating: 0, count: 1024)
                while true {
                    let count = recv(descriptor, &buffer, buffer.count, Int32(MSG_DONTWAIT))
                    if count > 0 {
                        onPacket?(Data(buffer[0..<count]))
                        continue
                    }
                    if count == 0 || (errno != EAGAIN && errno != EWOULDBLOCK) {
                        onClose()
                        return
                    }
                    break
                }
            }
            if events.contains(.hangUp) || events.contains(.error) { onClose() }
        }
        return (ours, theirs)
    }

    /// Sends one packet; a full socket drops it, as a slow reader would lose notifications.
    func send(_ data: Data) {
        guard descriptor >= 0 else { return }
        _ = data.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
    }

    func close() {
        watch?.cancel()
        watch = nil
        if descriptor >= 0 {
            _ = Glibc.close(descriptor)
            descriptor = -1
        }
    }

    isolated deinit { close() }
}
