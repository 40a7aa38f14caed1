import BleDBus
import Foundation
import Glibc

extension Peripheral {
    @BleLoop func performSetNotify(_ enabled: Bool, _ characteristic: Characteristic) {
        guard known(characteristic) else {
            return emit { $0.peripheral(self, didUpdateNotificationStateFor: characteristic, error: BleError.attributeGone) }
        }
        if enabled, !characteristic.properties.contains(.notify), !characteristic.properties.contains(.indicate) {
            return emit {
                $0.peripheral(self, didUpdateNotificationStateFor: characteristic,
                              error: BleError.operationNotSupported("the characteristic has neither notify nor indicate"))
            }
        }
        run(enabled ? "enable notifications" : "disable notifications", on: characteristic.path, start: { [weak self] operation in
            guard let self else { return }
            if enabled { self.enableNotify(characteristic, operation) } else { self.disableNotify(characteristic, operation) }
        }, completion: { [weak self] result in
            guard let self else { return }
            if case .failure = result, enabled {
                // Ended by deadline or disconnect: we do not know what bluetoothd did; clean up.
                self.teardownCharacteristic(characteristic, releaseSession: true)
            }
            let error = result.failureValue
            self.emit { $0.peripheral(self, didUpdateNotificationStateFor: characteristic, error: error) }
        })
    }

    @BleLoop private func enableNotify(_ characteristic: Characteristic, _ operation: GattOperation) {
        if characteristic.notify.isOn { return operation.finish(.success(nil)) }
        let useAcquire = characteristic.offersAcquireNotify && !characteristic.prefersStartNotify && !characteristic.notify.acquireFailed
        // Values may arrive before the reply (a fast peripheral, bleak #374): accept them from now.
        characteristic.notify.mode = .enabling
        if useAcquire {
            manager?.callBlueZ(characteristic.path, BlueZ.gattCharacteristic, "AcquireNotify", [BlueZShapes.propertyDictionary([])],
                               timeout: manager!.options.operationTimeout + .seconds(1)) { [weak self] result in
                guard let self, !operation.finished else { return }
                if case .success(let body) = result, case .unixFD(let handle)? = body.first, let descriptor = handle.take() {
                    self.adoptNotifySocket(descriptor, characteristic)
                    operation.finish(.success(nil))
                } else {
                    // NotPermitted / InProgress (a StartNotify session exists) / NotSupported: use StartNotify.
                    BleLog.debug("AcquireNotify on \(characteristic.path) failed (\(result.failureValue.map { "\($0)" } ?? "no fd")); using StartNotify")
                    self.startNotify(characteristic, operation)
                }
            }
        } else {
            startNotify(characteristic, operation)
        }
    }

    @BleLoop private func startNotify(_ characteristic: Characteristic, _ operation: GattOperation?) {
        characteristic.notify.mode = .enabling
        characteristic.notify.hasStartSession = true
        manager?.callBlueZ(characteristic.path, BlueZ.gattCharacteristic, "StartNotify") { [weak self] result in
            guard let self else { return }
            if let operation, operation.finished { return }
            switch result {
            case .success, .failure(.inProgress):
                // InProgress: our session from before a disconnect lingers in bluetoothd (observed
                // on 5.66) and was re-armed on reconnect; it delivers to us, so we are subscribed.
                characteristic.notify.mode = .started
                operation?.finish(.success(nil))
            case .failure(let error):
                characteristic.notify.mode = .off
                characteristic.notify.hasStartSession = false
                if let operation {
                    operation.finish(.failure(error))
                } else {
                    self.emit { $0.peripheral(self, didUpdateNotificationStateFor: characteristic, error: error) }
                }
            }
        }
    }

    @BleLoop private func adoptNotifySocket(_ descriptor: Int32, _ characteristic: Characteristic) {
        let watch = FileDescriptorWatch(descriptor: descriptor) { [weak self, weak characteristic] events in
            guard let self, let characteristic else { return }
            self.notifySocketReadable(characteristic, descriptor: descriptor, events: events)
        }
        characteristic.notify.mode = .acquired(descriptor: descriptor, watch: watch)
    }

    @BleLoop private func notifySocketReadable(_ characteristic: Characteristic, descriptor: Int32, events: FileDescriptorWatch.Events) {
        guard case .acquired(let current, _) = characteristic.notify.mode, current == descriptor else { return }
        var buffer = [UInt8](repeating: 0, count: 1024)
        while true {
            let count = recv(descriptor, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if count > 0 {
                deliverNotification(Data(buffer[0..<count]), characteristic)
                continue
            }
            if count < 0, errno == EAGAIN || errno == EWOULDBLOCK {
                if events.contains(.hangUp) || events.contains(.error) { break }
                return
            }
            break
        }
        // EOF or hang-up. On some devices AcquireNotify ends this way while the link stays up
        // (bleak #1885): fall back to StartNotify. If the link went down, teardown handles it.
        closeNotifySocket(characteristic)
        characteristic.notify.mode = .off
        guard isLinkUp, deviceProperties?.bool("Connected") == true else { return }
        BleLog.warning("AcquireNotify socket of \(characteristic.path) closed while connected; falling back to StartNotify")
        characteristic.notify.acquireFailed = true
        startNotify(characteristic, nil)
    }

    @BleLoop func closeNotifySocket(_ characteristic: Characteristic) {
        if case .acquired(let descriptor, let watch) = characteristic.notify.mode {
            watch.cancel()
            Glibc.close(descriptor)
            characteristic.notify.mode = .off
        }
    }

    @BleLoop private func disableNotify(_ characteristic: Characteristic, _ operation: GattOperation) {
        switch characteristic.notify.mode {
        case .acquired:
            // Closing the fd releases AcquireNotify (NotifyAcquired=false follows, observed).
            closeNotifySocket(characteristic)
            operation.finish(.success(nil))
        case .started, .enabling:
            characteristic.notify.mode = .off
            characteristic.notify.hasStartSession = false
            manager?.callBlueZ(characteristic.path, BlueZ.gattCharacteristic, "StopNotify") { result in
                switch result {
                case .success, .failure(.failed): operation.finish(.success(nil))  // "No notify session started"
                case .failure(let error): operation.finish(.failure(error))
                }
            }
        case .off:
            operation.finish(.success(nil))
        }
    }

    @BleLoop private func deliverNotification(_ data: Data, _ characteristic: Characteristic) {
        characteristic.cachedValue = data
        emit { $0.peripheral(self, didUpdateValueFor: characteristic, error: nil) }
    }

    /// A `PropertiesChanged` on one of our characteristics or descriptors.
    @BleLoop func attributeChanged(_ path: ObjectPath, interface: String, changed: PropertyMap) {
        if interface == BlueZ.gattDescriptor {
            if let descriptor = descriptorsByPath[path], let value = changed.bytes("Value") { descriptor.cachedValue = Data(value) }
            return
        }
        guard let characteristic = characteristicsByPath[path], let value = changed.bytes("Value") else { return }
        if characteristic.readsAwaitingSignal > 0 {
            // bluetoothd announces a read's value before the ReadValue reply: it belongs to the read.
            characteristic.readsAwaitingSignal -= 1
            characteristic.cachedValue = Data(value)
            return
        }
        // Only our own enabled session counts: a StartNotify session left from before a reconnect
        // would deliver ghost values (bleak #2002), and AcquireNotify values come on the fd.
        guard characteristic.notify.acceptsSignals, isLinkUp else { return }
        deliverNotification(Data(value), characteristic)
    }

    /// Resets a characteristic's notify and write channels (link down, daemon gone, removal).
    /// `releaseSession`: also StopNotify a StartNotify session, which bluetoothd would otherwise
    /// keep and re-arm on the next connection (ghost notifications, bleak #2002).
    @BleLoop func teardownCharacteristic(_ characteristic: Characteristic, releaseSession: Bool) {
        closeNotifySocket(characteristic)
        if characteristic.notify.hasStartSession, releaseSession {
            manager?.callBlueZ(characteristic.path, BlueZ.gattCharacteristic, "StopNotify") { _ in }
        }
        characteristic.notify = NotifyChannel()
        characteristic.readsAwaitingSignal = 0
        if case .acquired(let descriptor) = characteristic.writer.mode { Glibc.close(descriptor) }
        characteristic.writer.writableWatch?.cancel()
        characteristic.writer = WriteChannel()
    }
}
