import Foundation
import BleDBus

extension Peripheral {
    @BleLoop func beginConnect() {
        guard session.isOpen else {
            let error = session.closedReason ?? .cancelled
            return emitCentral { $0.centralManager($1, didFailToConnect: self, error: error) }
        }
        if currentState == .connected { return emitCentral { $0.centralManager($1, didConnect: self) } }
        guard attempt == nil else { return }
        let attempt = ConnectAttempt(retriesLeft: max(0, session.options.connectRetries))
        self.attempt = attempt
        currentState = .connecting
        attempt.deadline = LoopTimer.scheduled(after: session.options.connectTimeout) { [weak self, weak attempt] in
            guard let self, let attempt, !attempt.finished else { return }
            // Disconnect also cancels a pending Connect; without it the next attempt gets InProgress.
            attempt.cancelling = true
            self.session.call(self.devicePath, BlueZ.device, BlueZ.Device1.Method.disconnect) { _ in }
            self.finishAttempt(attempt, .failure(.connectionTimeout))
        }
        sendConnect(attempt)
    }

    @BleLoop private func sendConnect(_ attempt: ConnectAttempt) {
        guard !attempt.finished else { return }
        attempt.attemptNumber += 1
        attempt.linkUp = false
        attempt.retryWhenDown = false
        BleLog.info("connecting \(address) (attempt \(attempt.attemptNumber))")
        session.call(devicePath, BlueZ.device, BlueZ.Device1.Method.connect, timeout: session.options.connectTimeout + .seconds(5),
                          address: address) { [weak self] result in
            guard let self, !attempt.finished, self.attempt === attempt else { return }
            switch result {
            case .success:
                attempt.linkUp = true
                self.checkReady()
            case .failure(let error):
                self.connectFailed(attempt, error)
            }
        }
    }

    @BleLoop private func connectFailed(_ attempt: ConnectAttempt, _ error: BleError) {
        if attempt.cancelling { return }
        let transient: Bool
        switch error {
        case .inProgress, .connectionFailed(.abortByLocal), .busy: transient = true
        default: transient = false
        }
        guard transient, attempt.retriesLeft > 0 else {
            return finishAttempt(attempt, .failure(error))
        }
        attempt.retriesLeft -= 1
        if case .inProgress = error {
            // A connect is stuck in bluetoothd (device.c returns InProgress while pending):
            // cancel it with Disconnect, back off, retry (bleak #1689).
            session.call(devicePath, BlueZ.device, BlueZ.Device1.Method.disconnect) { _ in }
            let used = session.options.connectRetries - attempt.retriesLeft
            let pause = session.options.retryBackoff * (1 << min(used - 1, 5))
            BleLog.warning("Connect \(address): InProgress; retrying in \(pause)")
            attempt.backoff = LoopTimer.scheduled(after: pause) { [weak self, weak attempt] in
                guard let self, let attempt else { return }
                self.sendConnect(attempt)
            }
        } else if deviceProperties?[BlueZ.Device1.connected] == true {
            // abort-by-local: the link was up for a moment; retry once Connected=false arrives.
            BleLog.warning("Connect \(address): \(error); retrying after Connected=false")
            attempt.retryWhenDown = true
        } else {
            BleLog.warning("Connect \(address): \(error); retrying")
            sendConnect(attempt)
        }
    }

    /// Ready = Connected, ServicesResolved, and GATT objects exported (ServicesResolved can come
    /// before the objects, bluez #1489 / observed with Pair), or the grace period over.
    @BleLoop func checkReady() {
        guard let attempt, !attempt.finished, let properties = deviceProperties else { return }
        let connected = properties[BlueZ.Device1.connected] == true
        if attempt.retryWhenDown {
            if !connected { sendConnect(attempt) }
            return
        }
        guard attempt.linkUp || connected else { return }
        guard connected, properties[BlueZ.Device1.servicesResolved] == true else { return }
        let hasObjects = !(cache?.children(of: devicePath, with: BlueZ.gattService).isEmpty ?? true)
        // bluetoothd sets Modalias from the peer's PnP ID just after ServicesResolved; the
        // write limit depends on it (a BlueZ peer takes 510 bytes, not 512), so a device that
        // has a PnP ID is ready once Modalias is known, or the grace period is over.
        let awaitingModalias = hasObjects && properties[BlueZ.Device1.modalias] == nil && exposesPnPID
        if (hasObjects && !awaitingModalias) || attempt.graceExpired {
            return finishAttempt(attempt, .success(()))
        }
        if attempt.graceTimer == nil {
            BleLog.debug("\(address): ServicesResolved before any GATT object; waiting for InterfacesAdded")
            attempt.graceTimer = LoopTimer.scheduled(after: session.options.servicesResolvedGrace) { [weak self, weak attempt] in
                guard let self, let attempt else { return }
                attempt.graceExpired = true
                self.checkReady()
            }
        }
    }

    /// The device's GATT database has the Device Information PnP ID (0x2A50).
    @BleLoop var exposesPnPID: Bool {
        guard let cache else { return false }
        let pnpID = BluetoothUUID(UInt16(0x2a50))
        return cache.children(of: devicePath, with: BlueZ.gattCharacteristic).contains { path in
            cache.properties(path, BlueZ.gattCharacteristic)?[BlueZ.GattCharacteristic1.uuid].flatMap(BluetoothUUID.init) == pnpID
        }
    }

    @BleLoop func finishAttempt(_ attempt: ConnectAttempt, _ result: Result<Void, BleError>) {
        guard !attempt.finished else { return }
        attempt.finished = true
        attempt.cancelTimers()
        if self.attempt === attempt { self.attempt = nil }
        switch result {
        case .success:
            currentState = .connected
            linkGeneration += 1
            BleLog.info("connected \(address)")
            emitCentral { $0.centralManager($1, didConnect: self) }
            rearmSubscriptions()
            refreshMTU()
        case .failure(let error):
            currentState = .disconnected
            BleLog.info("connect \(address) failed: \(error)")
            emitCentral { $0.centralManager($1, didFailToConnect: self, error: error) }
        }
    }

    /// `Connected=false` or `ServicesResolved=false` from BlueZ.
    @BleLoop func linkWentDown() {
        if let attempt {
            if attempt.retryWhenDown { return }
            if attempt.linkUp || deviceProperties?[BlueZ.Device1.servicesResolved] == false && deviceProperties?[BlueZ.Device1.connected] == false {
                // Lost while discovering services: an abort-by-local in disguise; retry if allowed.
                if attempt.linkUp, attempt.retriesLeft > 0 {
                    attempt.retriesLeft -= 1
                    attempt.linkUp = false
                    if deviceProperties?[BlueZ.Device1.connected] == false { sendConnect(attempt) } else { attempt.retryWhenDown = true }
                    return
                }
                if attempt.linkUp { finishAttempt(attempt, .failure(.disconnected)) }
            }
            return
        }
        switch currentState {
        case .connected:
            linkLost(error: .disconnected, report: true)
        case .disconnecting:
            if deviceProperties?[BlueZ.Device1.connected] == false { linkLost(error: nil, report: true) }
        default:
            break
        }
    }

    /// The link is gone: every pending operation fails at once, notify state resets, and the
    /// delegates hear `didDisconnectPeripheral` (or `didFailToConnect` for a pending connect).
    @BleLoop func linkLost(error: BleError?, report: Bool) {
        if let attempt {
            finishAttempt(attempt, .failure(error ?? .cancelled))
        }
        let wasUp = currentState == .connected || currentState == .disconnecting
        currentState = .disconnected
        // The next link negotiates its own MTU (issue 25: a 512-byte write without response was
        // accepted on a 247-MTU link, the first link's 517 still in use).
        knownMTU = nil
        cachedMTUMayBeStale = true
        failAllOperations(with: error ?? .disconnected)
        failServiceWaits(error ?? .disconnected)
        // The link's channels end with it; what the app asked for stays wanted and is re-armed
        // on the next link. bluetoothd that left took its sessions along: nothing to release.
        let release = error != .bluetoothRestarted && session.isOpen
        // Writes without response still waiting for the socket or flow control never leave:
        // say so (once per characteristic) instead of dropping them without a word.
        let unsent = characteristicsByPath.values.filter { !$0.writer.backlog.isEmpty }
        for characteristic in characteristicsByPath.values { teardownCharacteristic(characteristic, releaseSession: release) }
        for characteristic in unsent { emitWritten(characteristic, error: error ?? .disconnected) }
        if wasUp {
            for observer in loopObservers.compactMap(\.value) { observer.peripheral(self, didLoseLink: error) }
        }
        if report, wasUp {
            BleLog.info("disconnected \(address)\(error.map { ": \($0)" } ?? "")")
            // When the link went down, not when the callback runs (iOS 17's timestamp).
            let timestamp: CFAbsoluteTime = Date().timeIntervalSinceReferenceDate
            emitCentral { $0.centralManager($1, didDisconnectPeripheral: self, timestamp: timestamp, isReconnecting: false, error: error) }
        }
        if !wasReadyToWrite {
            wasReadyToWrite = true
        }
    }

    @BleLoop func cancelConnection() {

        if let attempt {
            attempt.cancelling = true
            session.call(devicePath, BlueZ.device, BlueZ.Device1.Method.disconnect) { _ in }
            return finishAttempt(attempt, .failure(.cancelled))
        }
        guard currentState == .connected else { return }
        currentState = .disconnecting
        // The user asked: pending operations end now, not after bluetoothd's ~2 s Disconnect.
        failAllOperations(with: .disconnected)
        failServiceWaits(.disconnected)
        session.call(devicePath, BlueZ.device, BlueZ.Device1.Method.disconnect, address: address) { [weak self] result in
            guard let self, self.currentState == .disconnecting else { return }
            switch result {
            case .success, .failure(.notConnected):
                // The reply comes between ServicesResolved=false and Connected=false (observed).
                if self.deviceProperties?[BlueZ.Device1.connected] != true { self.linkLost(error: nil, report: true) }
            case .failure(let error):
                BleLog.warning("Disconnect \(self.address) failed: \(error)")
                self.linkLost(error: nil, report: true)
            }
        }
    }
}
