import BleDBus
import Foundation

extension Peripheral {
    @BleLoop func known(_ characteristic: Characteristic) -> Bool { characteristicsByPath[characteristic.path] === characteristic }

    // MARK: Characteristic read

    /// `completion` (BleAsync's per-call answer) runs after the delegates' callback is queued,
    /// with this read's own result: a read answer never reaches a notification listener.
    @BleLoop package func performRead(_ characteristic: Characteristic,
                                      completion: (@BleLoop (Result<Data, BleError>) -> Void)? = nil) {
        guard known(characteristic) else {
            emitValue(nil, for: characteristic, error: .attributeGone)
            completion?(.failure(.attributeGone))
            return
        }
        run(BlueZ.GattCharacteristic1.Method.readValue, on: characteristic.operationKey, start: { [weak self] operation in
            guard let self else { return }
            characteristic.readsAwaitingSignal += 1
            self.call(operation, characteristic.path, BlueZ.gattCharacteristic, BlueZ.GattCharacteristic1.Method.readValue, [GattOptions.none]) {
                body throws(BleError) in try ReplyShape.bytes(body, operation: BlueZ.GattCharacteristic1.Method.readValue)
            }
        }, completion: { [weak self] result in
            guard let self else { return }
            // The reply ends the read; its PropertiesChanged(Value), if any, came before it.
            if characteristic.readsAwaitingSignal > 0 { characteristic.readsAwaitingSignal -= 1 }
            switch result {
            case .success(let data):
                let value = data ?? Data()
                self.settleSignalsDuringRead(characteristic, readValue: value)
                characteristic.cachedValue = value
                self.emitValue(value, for: characteristic, error: nil)
                completion?(.success(value))
            case .failure(let error):
                self.settleSignalsDuringRead(characteristic, readValue: nil)
                self.emitValue(nil, for: characteristic, error: error)
                completion?(.failure(error))
            }
        })
    }

    // MARK: Descriptor read / write

    @BleLoop package func performRead(_ descriptor: Descriptor, completion: (@BleLoop (Result<Data, BleError>) -> Void)? = nil) {
        guard descriptorsByPath[descriptor.path] === descriptor else {
            emitValue(nil, for: descriptor, error: .attributeGone)
            completion?(.failure(.attributeGone))
            return
        }
        run(BlueZ.GattDescriptor1.Method.readValue, on: descriptor.operationKey, start: { [weak self] operation in
            self?.call(operation, descriptor.path, BlueZ.gattDescriptor, BlueZ.GattDescriptor1.Method.readValue, [GattOptions.none]) {
                body throws(BleError) in try ReplyShape.bytes(body, operation: BlueZ.GattDescriptor1.Method.readValue)
            }
        }, completion: { [weak self] result in
            guard let self else { return }
            switch result {
            case .success(let data):
                let value = data ?? Data()
                descriptor.cachedValue = value
                self.emitValue(value, for: descriptor, error: nil)
                completion?(.success(value))
            case .failure(let error):
                self.emitValue(nil, for: descriptor, error: error)
                completion?(.failure(error))
            }
        })
    }

    @BleLoop func performWrite(_ data: Data, _ descriptor: Descriptor) {
        guard descriptorsByPath[descriptor.path] === descriptor else {
            return emit { $0.peripheral(self, didWriteValueFor: descriptor, error: BleError.attributeGone) }
        }
        run(BlueZ.GattDescriptor1.Method.writeValue, on: descriptor.operationKey, start: { [weak self] operation in
            self?.call(operation, descriptor.path, BlueZ.gattDescriptor, BlueZ.GattDescriptor1.Method.writeValue, [.bytes(data), GattOptions.none])
        }, completion: { [weak self] result in
            guard let self else { return }
            let error = result.failureValue
            self.emit { $0.peripheral(self, didWriteValueFor: descriptor, error: error) }
        })
    }

    // MARK: Characteristic write

    /// A write that cannot be sent is reported through `didWriteValueFor` with its error, for
    /// writes without response too: a write must never vanish without a word.
    ///
    /// `completion` (BleAsync's per-call answer) gets this write's own outcome: for a write with
    /// response its acknowledgement; without response nil once queued, or why it was refused.
    @BleLoop package func performWrite(_ data: Data, _ characteristic: Characteristic, _ type: CharacteristicWriteType,
                                       completion: (@BleLoop (BleError?) -> Void)? = nil) {
        func refuse(_ error: BleError) {
            emitWritten(characteristic, error: error)
            completion?(error)
        }
        guard known(characteristic) else { return refuse(.attributeGone) }
        // Without a link there is no MTU to measure against: say what is really wrong.
        if type == .withoutResponse, !isLinkUp { return refuse(session.closedReason ?? .peripheralNotConnected) }
        let limit = writeLimit(for: type)
        guard data.count <= limit else { return refuse(.valueTooLong(length: data.count, maximum: limit)) }
        if type == .withoutResponse {
            writeWithoutResponse(data, characteristic)
            completion?(nil)
            return
        }
        writeWithResponse(data, characteristic, type, retried: false, completion: completion)
    }

    @BleLoop private func writeWithResponse(_ data: Data, _ characteristic: Characteristic, _ type: CharacteristicWriteType,
                                            retried: Bool, completion: (@BleLoop (BleError?) -> Void)? = nil) {
        // bluetoothd refuses WriteValue ("Write acquired") while our AcquireWrite socket is
        // open; an idle socket is given back first and re-acquired by the next command write.
        if case .acquired = characteristic.writer.mode, characteristic.writer.backlog.isEmpty {
            releaseWriteSocket(characteristic)
        }
        let options = type == .reliable ? GattOptions.reliable : GattOptions.request
        run(BlueZ.GattCharacteristic1.Method.writeValue, on: characteristic.operationKey, start: { [weak self] operation in
            self?.call(operation, characteristic.path, BlueZ.gattCharacteristic, BlueZ.GattCharacteristic1.Method.writeValue,
                       [.bytes(data), options])
        }, completion: { [weak self] result in
            guard let self else { return }
            let error = result.failureValue
            // The socket's close and the D-Bus call travel separately; bluetoothd may see the
            // call first. Once more is enough: by then it has handled the hang-up.
            if !retried, case .notPermitted(let text)? = error, text.contains("acquired") {
                return self.writeWithResponse(data, characteristic, type, retried: true, completion: completion)
            }
            self.emitWritten(characteristic, error: error)
            completion?(error)
        })
    }

    @BleLoop private func releaseWriteSocket(_ characteristic: Characteristic) {
        guard case .acquired(let socket) = characteristic.writer.mode else { return }
        socket.close()
        characteristic.writer.mode = .idle
    }

    // MARK: Write without response, with flow control

    @BleLoop package var hasWriteBacklog: Bool { characteristicsByPath.values.contains { $0.writer.isBusy } }

    /// Queues `data` and pumps: bluetoothd answers `type=command` as soon as it queued the PDU,
    /// so without flow control it buffers without bound (ble-serial #89). BleKit writes to the
    /// `AcquireWrite` socket (EAGAIN = not ready) or keeps one command in flight.
    @BleLoop func writeWithoutResponse(_ data: Data, _ characteristic: Characteristic) {
        guard isLinkUp else { return }
        characteristic.writer.backlog.append(data)
        if case .idle = characteristic.writer.mode {
            if characteristic.offersAcquireWrite {
                acquireWrite(characteristic)
            } else {
                characteristic.writer.mode = .commands
            }
        }
        pump(characteristic)
    }

    @BleLoop private func acquireWrite(_ characteristic: Characteristic) {

        characteristic.writer.mode = .acquiring
        let abandon = session.call(characteristic.path, BlueZ.gattCharacteristic, BlueZ.GattCharacteristic1.Method.acquireWrite, [GattOptions.none]) {
            [weak self] result in
            characteristic.writer.abandonAcquire = nil
            let acquired = result.flatMap { body in
                Result { () throws(BleError) in try ReplyShape.acquired(body, operation: BlueZ.GattCharacteristic1.Method.acquireWrite) }
            }
            guard let self, case .acquiring = characteristic.writer.mode else {
                if case .success(let reply) = acquired { reply.socket.close() }
                return
            }
            switch acquired {
            case .success(let reply):
                self.noteMTU(reply.mtu, from: characteristic.path)
                characteristic.writer.mode = .acquired(reply.socket)
            case .failure(let error):
                BleLog.debug("AcquireWrite unavailable on \(characteristic.path) (\(error)); pacing command writes")
                characteristic.writer.mode = .commands
            }
            self.pump(characteristic)
        }
        if case .acquiring = characteristic.writer.mode { characteristic.writer.abandonAcquire = abandon }
    }

    @BleLoop func pump(_ characteristic: Characteristic) {
        switch characteristic.writer.mode {
        case .idle, .acquiring:
            break
        case .acquired(let socket):
            while let packet = characteristic.writer.backlog.first {
                switch socket.send(packet) {
                case .sent:
                    characteristic.writer.backlog.removeFirst()
                    continue
                case .wouldBlock:
                    // The socket is full: not ready until it drains. Noted now, so that the
                    // drained socket's pump says ready again (it did not when the socket
                    // filled on writes made while it was ready).
                    socket.whenWritable { [weak self, weak characteristic] events in
                        guard let self, let characteristic else { return }
                        if events.contains(.hangUp) || events.contains(.error) { return self.writeSocketClosed(characteristic) }
                        self.pump(characteristic)
                    }
                    noteWriteReadiness()
                    return
                case .peerClosed, .failed:
                    // EPIPE and friends: bluetoothd closed it (disconnect); fall back to commands.
                    writeSocketClosed(characteristic)
                    return
                }
            }
        case .commands:
            guard !characteristic.writer.commandInFlight, let packet = characteristic.writer.backlog.first else { break }
            characteristic.writer.backlog.removeFirst()
            characteristic.writer.commandInFlight = true
            session.call(characteristic.path, BlueZ.gattCharacteristic, BlueZ.GattCharacteristic1.Method.writeValue,
                              [.bytes(packet), GattOptions.command]) { [weak self] result in
                guard let self else { return }
                characteristic.writer.commandInFlight = false
                if case .failure(let error) = result {
                    BleLog.warning("write without response on \(characteristic.path) failed: \(error)")
                    self.emitWritten(characteristic, error: error)
                }
                self.pump(characteristic)
            }
            return
        }
        noteWriteReadiness()
    }

    @BleLoop private func writeSocketClosed(_ characteristic: Characteristic) {
        if case .acquired(let socket) = characteristic.writer.mode { socket.close() }
        characteristic.writer.mode = isLinkUp ? .commands : .idle
        if isLinkUp { pump(characteristic) } else { characteristic.writer.backlog.removeAll() }
    }

    @BleLoop func noteWriteReadiness() {
        let ready = !hasWriteBacklog
        if ready, !wasReadyToWrite {
            wasReadyToWrite = true
            emitReadyToWrite()
        } else if !ready {
            wasReadyToWrite = false
        }
    }
}

extension Result {
    var failureValue: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
