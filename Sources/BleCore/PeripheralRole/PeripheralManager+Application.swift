import BleDBus
import BlueZVocabulary
import Foundation

/// The GATT application: exporting the services' objects, registering them with bluetoothd,
/// and answering bluetoothd's calls on them.
extension PeripheralManager {
    private static let optionsArgument = ArgumentDescription("options", .dictionary(key: .string, value: .variant))
    private static let valueArgument = ArgumentDescription("value", .array(.byte))

    // MARK: Services

    @BleLoop func addService(_ service: MutableService) {
        guard !closed else { return emit { $0.peripheralManager(self, didAdd: service, error: BleError.cancelled) } }
        guard let connection = session.connection else {
            // The bus opens asynchronously: the service is exported once it is there.
            queuedServices.append(service)
            return
        }
        guard !services.contains(where: { $0.service === service }) else {
            return emit { $0.peripheralManager(self, didAdd: service, error: BleError.alreadyExists) }
        }
        if let problem = servingProblem(service) {
            return emit { $0.peripheralManager(self, didAdd: service, error: BleError.invalidLocalAttribute(problem)) }
        }
        connection.objects.addObjectManager(at: applicationRoot)
        let exported = export(service, on: connection)
        services.append(exported)
        application.pendingAdds.append(service)
        registerApplication()
    }

    /// Why `service` cannot be served as it is, or nil. iOS's types let any `CBCharacteristic`
    /// into a service's `characteristics`; only the mutable ones have something to serve.
    @BleLoop private func servingProblem(_ service: MutableService) -> String? {
        for (index, characteristic) in (service.characteristics ?? []).enumerated() {
            guard let served = characteristic as? MutableCharacteristic else {
                return "characteristics[\(index)] (\(characteristic.uuid)) is a discovered Characteristic, not a MutableCharacteristic"
            }
            for (descriptorIndex, descriptor) in (served.descriptors ?? []).enumerated() where !(descriptor is MutableDescriptor) {
                return "characteristics[\(index)].descriptors[\(descriptorIndex)] (\(descriptor.uuid)) is a discovered Descriptor, not a MutableDescriptor"
            }
        }
        for (index, included) in (service.includedServices ?? []).enumerated() {
            guard included !== service else { return "includedServices[\(index)] is the service itself" }
            guard services.contains(where: { $0.service === included }) else {
                return "includedServices[\(index)] (\(included.uuid)) was not added to this peripheral manager before the service that includes it"
            }
        }
        return nil
    }

    @BleLoop func removeServices(_ matching: (MutableService) -> Bool) {
        guard let connection = session.connection else { return }
        let leaving = services.filter { matching($0.service) }
        guard !leaving.isEmpty else { return }
        services.removeAll { matching($0.service) }
        for service in leaving {
            service.closeSockets()
            for descriptor in service.descriptors { connection.objects.unregister(descriptor.path) }
            for characteristic in service.characteristics { connection.objects.unregister(characteristic.path) }
            connection.objects.unregister(service.path)
        }
        if services.isEmpty { unregisterApplication() } else { registerApplication() }
    }

    /// `service0007`: bluetoothd 5.66 builds its database in the order of the application's
    /// object paths, so the numbers are of one width (`service10` sorted before `service2`
    /// put an eleventh service or characteristic out of place and dropped includes of it).
    static func element(_ kind: String, _ index: Int) -> String {
        let digits = String(index)
        return kind + String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    @BleLoop private func export(_ service: MutableService, on connection: Connection) -> ExportedService {
        let servicePath = (try? ObjectPath(applicationRoot.rawValue + "/" + Self.element("service", nextServiceIndex))) ?? applicationRoot
        nextServiceIndex += 1
        let exported = ExportedService(service: service, path: servicePath)
        let uuid = service.uuid.uuidString128
        let primary = service.isPrimary
        let includes = (service.includedServices ?? []).compactMap { included in self.services.first { $0.service === included }?.path }
        connection.objects.register(servicePath, interfaces: [ExportedInterface(BlueZ.GattService1.interface, properties: [
            ExportedProperty(BlueZ.GattService1.uuid) { .string(uuid) },
            ExportedProperty(BlueZ.GattService1.primary) { .boolean(primary) },
            ExportedProperty(BlueZ.GattService1.includes) { .array(element: .objectPath, includes.map { .objectPath($0) }) },
        ])])
        for (index, characteristic) in service.mutableCharacteristics.enumerated() {
            let path = (try? ObjectPath(servicePath.rawValue + "/" + Self.element("char", index))) ?? servicePath
            let record = ExportedCharacteristic(characteristic: characteristic, path: path)
            exported.characteristics.append(record)
            connection.objects.register(path, interfaces: [characteristicInterface(record, servicePath: servicePath)])
            for (descriptorIndex, descriptor) in characteristic.mutableDescriptors.enumerated() {
                let descriptorPath = (try? ObjectPath(path.rawValue + "/" + Self.element("desc", descriptorIndex))) ?? path
                exported.descriptors.append((descriptor, descriptorPath, path))
                connection.objects.register(descriptorPath, interfaces: [descriptorInterface(descriptor, characteristicPath: path)])
            }
        }
        return exported
    }

    @BleLoop private func characteristicInterface(_ record: ExportedCharacteristic, servicePath: ObjectPath) -> ExportedInterface {
        let characteristic = record.characteristic
        let uuid = characteristic.uuid.uuidString128
        let flags = characteristic.bluezFlags
        var properties: [ExportedProperty] = [
            ExportedProperty(BlueZ.GattCharacteristic1.uuid) { .string(uuid) },
            ExportedProperty(BlueZ.GattCharacteristic1.service) { .objectPath(servicePath) },
            ExportedProperty(BlueZ.GattCharacteristic1.flags) { .array(element: .string, flags.map { .string($0) }) },
            ExportedProperty(BlueZ.GattCharacteristic1.value) { [weak record] in .bytes(record?.lastValue ?? Data()) },
        ]
        var methods: [ExportedMethod] = [
            ExportedMethod(BlueZ.GattCharacteristic1.Method.readValue, in: [Self.optionsArgument], out: [Self.valueArgument]) { [weak self, weak record] call in
                guard let self, let record else { return }
                self.read(record, call)
            },
            ExportedMethod(BlueZ.GattCharacteristic1.Method.writeValue, in: [Self.valueArgument, Self.optionsArgument]) { [weak self, weak record] call in
                guard let self, let record else { return }
                self.write(record, call)
            },
        ]
        let notifies = characteristic.properties.contains(.notify) || characteristic.properties.contains(.indicate)
        if notifies {
            properties.append(ExportedProperty(BlueZ.GattCharacteristic1.notifying) { [weak record] in .boolean(record?.notifying ?? false) })
            methods.append(ExportedMethod(BlueZ.GattCharacteristic1.Method.startNotify) { [weak self, weak record] call in
                guard let self, let record else { return }
                self.startNotify(record, call)
            })
            methods.append(ExportedMethod(BlueZ.GattCharacteristic1.Method.stopNotify) { [weak self, weak record] call in
                guard let self, let record else { return }
                self.stopNotify(record, call)
            })
            methods.append(ExportedMethod(BlueZ.GattCharacteristic1.Method.confirm) { [weak self, weak record] call in
                guard let self, let record else { return }
                call.reply()
                self.confirmationArrived(record)
            })
        }
        if options.acquireSockets, characteristic.properties.contains(.writeWithoutResponse) {
            properties.append(ExportedProperty(BlueZ.GattCharacteristic1.writeAcquired) { [weak record] in .boolean(record?.writeSocket != nil) })
            methods.append(ExportedMethod(BlueZ.GattCharacteristic1.Method.acquireWrite, in: [Self.optionsArgument],
                                          out: [ArgumentDescription("fd", .unixFD), ArgumentDescription("mtu", .uint16)]) { [weak self, weak record] call in
                guard let self, let record else { return }
                self.acquireWrite(record, call)
            })
        }
        if options.acquireSockets, characteristic.properties.contains(.notify) {
            properties.append(ExportedProperty(BlueZ.GattCharacteristic1.notifyAcquired) { [weak record] in .boolean(record?.notifySocket != nil) })
            methods.append(ExportedMethod(BlueZ.GattCharacteristic1.Method.acquireNotify, in: [Self.optionsArgument],
                                          out: [ArgumentDescription("fd", .unixFD), ArgumentDescription("mtu", .uint16)]) { [weak self, weak record] call in
                guard let self, let record else { return }
                self.acquireNotify(record, call)
            })
        }
        return ExportedInterface(BlueZ.GattCharacteristic1.interface, methods: methods, properties: properties)
    }

    @BleLoop private func descriptorInterface(_ descriptor: MutableDescriptor, characteristicPath: ObjectPath) -> ExportedInterface {
        let uuid = descriptor.uuid.uuidString128
        let flags = descriptor.bluezFlags
        return ExportedInterface(BlueZ.GattDescriptor1.interface, methods: [
            ExportedMethod(BlueZ.GattDescriptor1.Method.readValue, in: [Self.optionsArgument], out: [Self.valueArgument]) { call in
                guard let admitted = Self.admitted(call, canRead: descriptor.canRead, canWrite: descriptor.permissions.allowsWrite) else { return }
                guard let answer = Self.readAnswer(descriptor.servedValue, offset: admitted.options.offset) else {
                    return call.fail(name: BlueZ.ErrorName.invalidOffset, message: BlueZ.ErrorMessage.invalidOffset)
                }
                call.reply([.bytes(answer)])
            },
            ExportedMethod(BlueZ.GattDescriptor1.Method.writeValue, in: [Self.valueArgument, Self.optionsArgument]) { call in
                guard let admitted = Self.admitted(call, canRead: descriptor.canRead, canWrite: descriptor.permissions.allowsWrite),
                      case .write(let bytes) = admitted.access else { return }
                guard let value = Self.writeResult(descriptor.servedValue, offset: admitted.options.offset, bytes: bytes) else {
                    return call.fail(name: BlueZ.ErrorName.invalidOffset, message: BlueZ.ErrorMessage.invalidOffset)
                }
                descriptor.servedValue = value
                call.reply()
            },
        ], properties: [
            ExportedProperty(BlueZ.GattDescriptor1.uuid) { .string(uuid) },
            ExportedProperty(BlueZ.GattDescriptor1.characteristic) { .objectPath(characteristicPath) },
            ExportedProperty(BlueZ.GattDescriptor1.flags) { .array(element: .string, flags.map { .string($0) }) },
        ])
    }

    // MARK: Registration

    /// Registers the application (again, when it changed: bluetoothd reads it only once).
    @BleLoop func registerApplication() {
        guard !closed, currentState == .poweredOn, let adapterPath else { return }
        if application.inFlight {
            application.dirty = true
            return
        }
        if application.registered {
            application.inFlight = true
            session.call(adapterPath, BlueZ.GattManager1.interface, BlueZ.GattManager1.Method.unregisterApplication,
                         [.objectPath(applicationRoot)]) { [weak self] _ in
                guard let self else { return }
                self.application.inFlight = false
                self.application.registered = false
                self.registerApplication()
            }
            return
        }
        guard !services.isEmpty else { return }
        application.inFlight = true
        application.dirty = false
        let added = application.pendingAdds
        application.pendingAdds.removeAll()
        session.call(adapterPath, BlueZ.GattManager1.interface, BlueZ.GattManager1.Method.registerApplication,
                     [.objectPath(applicationRoot), BlueZShapes.propertyDictionary([])]) { [weak self] result in
            guard let self else { return }
            self.application.inFlight = false
            switch result {
            case .success:
                self.application.registered = true
                BleLog.info("GATT application \(self.applicationRoot) registered on \(adapterPath)")
                for service in added { self.emit { $0.peripheralManager(self, didAdd: service, error: nil) } }
            case .failure(let error):
                BleLog.error("RegisterApplication failed: \(error)")
                for service in added { self.emit { $0.peripheralManager(self, didAdd: service, error: error) } }
            }
            if self.application.dirty || !self.application.pendingAdds.isEmpty {
                self.application.dirty = false
                self.registerApplication()
            }
        }
    }

    @BleLoop func unregisterApplication() {
        guard application.registered, let adapterPath else { return }
        application.registered = false
        session.call(adapterPath, BlueZ.GattManager1.interface, BlueZ.GattManager1.Method.unregisterApplication,
                     [.objectPath(applicationRoot)]) { result in
            if case .failure(let error) = result { BleLog.debug("UnregisterApplication: \(error)") }
        }
    }

    // MARK: Requests

    /// The call checked by `RequestAdmission`, or nil once it was refused (and answered).
    @BleLoop static func admitted(_ call: IncomingCall, canRead: Bool, canWrite: Bool) -> RequestAdmission.Admitted? {
        switch RequestAdmission.admit(call.member, call.arguments, canRead: canRead, canWrite: canWrite) {
        case .success(let admitted):
            return admitted
        case .failure(let refusal):
            BleLog.warning("refused \(call.member) on \(call.path) with \(refusal.name): \(refusal.detail)")
            call.fail(name: refusal.name, message: refusal.message)
            return nil
        case nil:
            call.fail(name: BlueZ.ErrorName.notSupported, message: BlueZ.ErrorMessage.notSupported)
            return nil
        }
    }

    /// What a characteristic lets a central do, as its flags say (bluetoothd checks the same).
    nonisolated static func access(of characteristic: MutableCharacteristic) -> (canRead: Bool, canWrite: Bool) {
        let properties = characteristic.properties
        let writes: CharacteristicProperties = [.write, .writeWithoutResponse, .authenticatedSignedWrites, .reliableWrite]
        return (properties.contains(.read), !properties.isDisjoint(with: writes) && !characteristic.isStatic)
    }

    /// What a read at `offset` of a served `value` answers; nil (Invalid Offset) past its end.
    package nonisolated static func readAnswer(_ value: Data, offset: Int) -> Data? {
        guard offset >= 0, offset <= value.count else { return nil }
        return Data(value.dropFirst(offset))
    }

    /// A served value after a write of `bytes` at `offset`; nil (Invalid Offset) past its end.
    package nonisolated static func writeResult(_ value: Data, offset: Int, bytes: Data) -> Data? {
        guard offset >= 0, offset <= value.count else { return nil }
        return Data(value.prefix(offset)) + bytes
    }

    @BleLoop private func central(for options: RequestOptions) -> Central {
        guard let device = options.device, let central = knownCentral(device) else { return Central.unidentified }
        if let mtu = options.mtu { central.setMTU(mtu) }
        return central
    }

    /// Checks a call on a served characteristic against its flags and options.
    @BleLoop private func admitted(_ record: ExportedCharacteristic, _ call: IncomingCall) -> RequestAdmission.Admitted? {
        let access = Self.access(of: record.characteristic)
        return Self.admitted(call, canRead: access.canRead, canWrite: access.canWrite)
    }

    @BleLoop private func read(_ record: ExportedCharacteristic, _ call: IncomingCall) {
        guard let parsed = admitted(record, call)?.options else { return }
        let central = central(for: parsed)
        if let value = record.characteristic.value {
            // Static: served without asking the app, as CoreBluetooth does.
            guard let answer = Self.readAnswer(value, offset: parsed.offset) else {
                return call.fail(name: BlueZ.ErrorName.invalidOffset, message: BlueZ.ErrorMessage.invalidOffset)
            }
            return call.reply([.bytes(answer)])
        }
        let request = ATTRequest(central: central, characteristic: record.characteristic, offset: parsed.offset, value: nil,
                                 mtu: parsed.mtu ?? central.mtu, link: parsed.link, needsResponse: true, isRead: true, call: call)
        startDeadline(request)
        emit { $0.peripheralManager(self, didReceiveRead: request) }
    }

    @BleLoop private func write(_ record: ExportedCharacteristic, _ call: IncomingCall) {
        guard let admitted = admitted(record, call), case .write(let value) = admitted.access else { return }
        let parsed = admitted.options
        let central = central(for: parsed)
        let request = ATTRequest(central: central, characteristic: record.characteristic, offset: parsed.offset, value: value,
                                 mtu: parsed.mtu ?? central.mtu, link: parsed.link, needsResponse: true, isRead: false, call: call)
        startDeadline(request)
        emit { $0.peripheralManager(self, didReceiveWrite: [request]) }
    }

    @BleLoop private func startDeadline(_ request: ATTRequest) {
        let limit = options.requestTimeout
        unansweredRequestCount += 1
        request.deadline = LoopTimer.scheduled(after: limit) { [weak self, weak request] in
            guard let self, let request, !request.answered else { return }
            BleLog.warning("\(request) was not answered within \(limit): answering Unlikely Error")
            _ = self.answer(request, .unlikelyError)
        }
    }

    @BleLoop func answer(_ request: ATTRequest, _ result: ATTResult) -> Bool {
        guard !request.answered else {
            BleLog.debug("\(request) was already answered; the second answer is ignored")
            return false
        }
        request.answered = true
        unansweredRequestCount -= 1
        request.deadline?.cancel()
        request.deadline = nil
        guard request.needsResponse, let call = request.call.value else { return true }
        if let error = result.dbusError(isRead: request.isRead) {
            call.fail(name: error.name, message: error.message)
        } else if request.isRead {
            call.reply([.bytes(request.value ?? Data())])
        } else {
            call.reply()
        }
        return true
    }

    // MARK: Acquired sockets

    @BleLoop private func acquireWrite(_ record: ExportedCharacteristic, _ call: IncomingCall) {
        guard let parsed = admitted(record, call)?.options else { return }
        let central = central(for: parsed)
        record.writeSocket?.close()
        let characteristic = record.characteristic
        let mtu = parsed.mtu ?? central.mtu
        // Records of the MTU bluetoothd said (it writes at most MTU - 3 bytes of value; when it
        // said none, of the largest MTU there is), so a longer datagram is reported, never cut
        // to a head that looks like a whole value.
        let recordSize = parsed.mtu ?? RequestOptions.mtuRange.upperBound
        guard let made = try? SeqPacketSocket.makePair() else {
            return call.fail(name: BlueZ.ErrorName.failed, message: "socketpair failed")
        }
        made.ours.startReading(into: SeqPacketRecords(recordSize: recordSize, reportsTooLong: true)) { [weak self, weak record] received in
            if case .peerClosed = received { record?.writeSocket = nil }
            guard let self else { return }
            switch received {
            case .packet(let packet):
                let request = ATTRequest(central: central, characteristic: characteristic, offset: 0, value: packet, mtu: mtu,
                                         link: parsed.link, needsResponse: false, isRead: false, call: nil)
                request.answered = true
                self.emit { $0.peripheralManager(self, didReceiveWrite: [request]) }
            case .tooLong(let length):
                self.discardedWrites += 1
                let error = BleError.valueTooLong(length: length, maximum: recordSize)
                BleLog.error("a write of \(length) bytes to \(characteristic.uuid) through its AcquireWrite socket is longer than the MTU \(recordSize) "
                             + "bluetoothd was given; it was discarded (not delivered cut short)")
                self.emit { $0.peripheralManager(self, didDiscardWriteTo: characteristic, from: central, error: error) }
            case .peerClosed:
                break
            }
        }
        record.writeSocket = made.ours
        call.reply([.unixFD(UnixFileDescriptor(adopting: made.theirs)), .uint16(UInt16(clamping: mtu))])
    }

    @BleLoop private func acquireNotify(_ record: ExportedCharacteristic, _ call: IncomingCall) {
        guard let parsed = admitted(record, call)?.options else { return }
        let central = central(for: parsed)
        record.notifySocket?.close()
        let mtu = parsed.mtu ?? central.mtu
        guard let made = try? SeqPacketSocket.makePair() else {
            return call.fail(name: BlueZ.ErrorName.failed, message: "socketpair failed")
        }
        // bluetoothd writes nothing into it: the reader is there to hear the hang-up.
        made.ours.startReading { [weak self, weak record] received in
            guard case .peerClosed = received, let self, let record else { return }
            self.notifySocketClosed(record)
        }
        record.notifySocket = made.ours
        call.reply([.unixFD(UnixFileDescriptor(adopting: made.theirs)), .uint16(UInt16(clamping: mtu))])
        subscriptionStarted(record, central: central)
    }

    /// bluetoothd closed its end of `record`'s AcquireNotify socket: it does so when the last
    /// central unsubscribes (or the link drops).
    @BleLoop func notifySocketClosed(_ record: ExportedCharacteristic) {
        record.notifySocket?.close()
        record.notifySocket = nil
        subscriptionEnded(record)
    }
}
