import BleDBus
import BlueZVocabulary
import Foundation

/// How many `PropertiesChanged` notifications are on their way to bluetoothd: a `Peer.Ping`
/// to bluetoothd after them comes back once it has read them (the bus keeps order), which
/// is when the window opens again.
struct NotificationFlow {
    /// Notifications emitted so far.
    var sent = 0
    /// Notifications bluetoothd has certainly read.
    var acknowledged = 0
    /// A ping is on its way.
    var pinging = false
    /// `updateValue` returned false; the delegates hear `isReady` when there is room again.
    var waiting = false

    var outstanding: Int { sent - acknowledged }

    mutating func reset() {
        acknowledged = sent
        pinging = false
    }
}

/// Subscriptions, notifications and indications.
extension PeripheralManager {
    @BleLoop func startNotify(_ record: ExportedCharacteristic, _ call: IncomingCall) {
        call.reply()
        subscriptionStarted(record, central: nil)
    }

    @BleLoop func stopNotify(_ record: ExportedCharacteristic, _ call: IncomingCall) {
        call.reply()
        subscriptionEnded(record)
    }

    /// bluetoothd started notifications: `central` when it said who (AcquireNotify's
    /// `device`), else the only connected central, else `Central.unidentified`.
    @BleLoop func subscriptionStarted(_ record: ExportedCharacteristic, central known: Central?) {
        let central: Central
        if let known, known.isIdentified {
            central = known
        } else {
            let candidates = centralsByPath.values.filter { candidate in
                candidate.isConnected && !record.subscribers.contains { $0 === candidate }
            }
            central = candidates.count == 1 ? candidates[0] : Central.unidentified
        }
        let wasNotifying = record.notifying
        record.notifying = true
        if !record.subscribers.contains(where: { $0 === central }) { record.subscribers.append(central) }
        if !wasNotifying {
            session.connection?.objects.emitPropertiesChanged(path: record.path, interface: BlueZ.GattCharacteristic1.interface,
                                                             names: [BlueZ.GattCharacteristic1.notifying.name])
        }
        let characteristic = record.characteristic
        emit { $0.peripheralManager(self, central: central, didSubscribeTo: characteristic) }
    }

    /// bluetoothd stopped notifications: the last subscriber left.
    @BleLoop func subscriptionEnded(_ record: ExportedCharacteristic) {
        guard record.notifying else { return }
        record.notifying = false
        record.awaitingConfirmation = false
        record.notifySocket?.close()
        record.notifySocket = nil
        let leaving = record.subscribers
        record.subscribers = []
        session.connection?.objects.emitPropertiesChanged(path: record.path, interface: BlueZ.GattCharacteristic1.interface,
                                                         names: [BlueZ.GattCharacteristic1.notifying.name])
        let characteristic = record.characteristic
        for central in leaving.isEmpty ? [Central.unidentified] : leaving {
            emit { $0.peripheralManager(self, central: central, didUnsubscribeFrom: characteristic) }
        }
    }

    /// bluetoothd's `Confirm`: the central confirmed the indication in flight. One that
    /// confirms nothing (no indication is waiting, or its deadline passed) is not reported:
    /// the app would count a confirmation the central never gave.
    @BleLoop func confirmationArrived(_ record: ExportedCharacteristic) {
        guard record.awaitingConfirmation else {
            BleLog.warning("Confirm on \(record.path), which has no indication awaiting confirmation: ignored")
            return
        }
        record.awaitingConfirmation = false
        record.confirmationDeadline?.cancel()
        record.confirmationDeadline = nil
        let characteristic = record.characteristic
        emit { $0.peripheralManager(self, didReceiveConfirmationFor: characteristic) }
        becameReady()
    }

    @BleLoop func record(for characteristic: MutableCharacteristic) -> ExportedCharacteristic? {
        for service in services {
            if let record = service.characteristics.first(where: { $0.characteristic === characteristic }) { return record }
        }
        return nil
    }

    @BleLoop func sendUpdate(_ value: Data, for characteristic: MutableCharacteristic, to centrals: [Central]?) -> Bool {
        guard let record = record(for: characteristic), let connection = session.connection else {
            BleLog.error("updateValue for \(characteristic.uuid), which is not in an added service: nothing sent")
            return false
        }
        if let centrals, record.subscribers.contains(where: { subscriber in !centrals.contains { $0 === subscriber } }) {
            if !warnedAboutSubsets {
                warnedAboutSubsets = true
                BleLog.warning("bluetoothd 5.66 sends each value to every subscribed central; an update for some of them only is refused")
            }
            return false
        }
        record.lastValue = value
        guard record.notifying else { return true }
        if record.indicates {
            // One indication at a time: the next waits for the central's confirmation.
            guard !record.awaitingConfirmation else {
                flow.waiting = true
                return false
            }
            record.awaitingConfirmation = true
            record.confirmationDeadline = LoopTimer.scheduled(after: options.requestTimeout) { [weak self, weak record] in
                guard let self, let record, record.awaitingConfirmation else { return }
                BleLog.warning("no confirmation of the indication of \(record.characteristic.uuid) within \(self.options.requestTimeout)")
                record.awaitingConfirmation = false
                self.becameReady()
            }
        }
        if let socket = record.notifySocket {
            switch socket.send(value) {
            case .sent:
                return true
            case .wouldBlock:
                flow.waiting = true
                // A hang-up alone is the reader's to report.
                socket.whenWritable { [weak self] events in if events.contains(.writable) { self?.becameReady() } }
                return false
            case .peerClosed, .failed:
                // bluetoothd hung up between the subscription and now: fall back to the bus.
                if socket.isOpen { notifySocketClosed(record) }
            }
        }
        guard flow.outstanding < options.notificationWindow else {
            flow.waiting = true
            return false
        }
        connection.objects.emitPropertiesChanged(path: record.path, interface: BlueZ.GattCharacteristic1.interface,
                                                 changed: [DBusDictionaryEntry(key: .string(BlueZ.GattCharacteristic1.value.name), value: .variant(.bytes(value)))],
                                                 invalidated: [])
        flow.sent += 1
        pingIfNeeded()
        return true
    }

    @BleLoop private func pingIfNeeded() {
        guard !flow.pinging, flow.outstanding > 0 else { return }
        flow.pinging = true
        let mark = flow.sent
        session.call(.root, FreedesktopDBus.Peer.interface, FreedesktopDBus.Peer.ping) { [weak self] result in
            guard let self else { return }
            self.flow.pinging = false
            if case .failure(let error) = result { BleLog.debug("flow-control ping: \(error)") }
            self.flow.acknowledged = max(self.flow.acknowledged, mark)
            self.becameReady()
            self.pingIfNeeded()
        }
    }

    /// Room again: the delegates that got false hear `isReady` once.
    @BleLoop func becameReady() {
        guard flow.waiting, flow.outstanding < options.notificationWindow else { return }
        flow.waiting = false
        emit { $0.peripheralManagerIsReady(toUpdateSubscribers: self) }
    }
}
