import BleDBus
import Foundation

extension Peripheral {
    @BleLoop package func performSetNotify(_ enabled: Bool, _ characteristic: Characteristic) {
        guard known(characteristic) else { return emitNotificationState(characteristic, error: .attributeGone) }
        if enabled, !characteristic.properties.contains(.notify), !characteristic.properties.contains(.indicate) {
            return emitNotificationState(characteristic, error: .operationNotSupported("the characteristic has neither notify nor indicate"))
        }
        characteristic.notifyWanted = enabled
        characteristic.pendingNotifyChanges += 1
        run(enabled ? "enable notifications" : "disable notifications", on: characteristic.operationKey, start: { [weak self] operation in
            guard let self else { return }
            if enabled { self.enableNotify(characteristic, operation) } else { self.disableNotify(characteristic, operation) }
        }, completion: { [weak self] result in
            characteristic.pendingNotifyChanges -= 1
            guard let self else { return }
            if case .failure = result, enabled {
                // Ended by deadline or error: we do not know what bluetoothd did; clean up.
                self.endSubscription(characteristic)
            }
            self.emitNotificationState(characteristic, error: result.failureValue)
        })
    }

    /// Re-enables, once, every subscription the app asked for and the lost link ended.
    @BleLoop func rearmSubscriptions() {
        for characteristic in characteristicsByPath.values.sorted(by: { $0.path < $1.path })
        where characteristic.notifyWanted && characteristic.subscription == nil {
            BleLog.debug("re-arming notifications of \(characteristic.path) after reconnect")
            performSetNotify(true, characteristic)
        }
    }

    @BleLoop private func enableNotify(_ characteristic: Characteristic, _ operation: GattOperation) {
        if let current = characteristic.subscription, current.isOn, current.link == linkGeneration {
            return operation.finish(.success(nil))
        }
        if let previous = characteristic.subscription {
            leaveNotifyShare(characteristic, previous)
            previous.end()
        }
        let useAcquire = characteristic.offersAcquireNotify && !characteristic.prefersStartNotify && !characteristic.acquireFailed
        let subscription = NotifySubscription(link: linkGeneration, path: useAcquire ? .acquire : .start)
        characteristic.subscription = subscription
        if useAcquire, let share = session.bus?.acquiredNotify(characteristic.path), share.owner.characteristic !== characteristic {
            // Another manager of the process holds the socket: bluetoothd would refuse a second.
            subscription.ride()
            share.add(AcquiredNotifyShare.Member(peripheral: self, characteristic: characteristic, subscription: subscription))
            characteristic.notifyShare = share
            return operation.finish(.success(nil))
        }
        if useAcquire {
            acquireNotify(characteristic, subscription, operation)
        } else {
            startNotify(characteristic, subscription, operation)
        }
    }

    @BleLoop private func acquireNotify(_ characteristic: Characteristic, _ subscription: NotifySubscription, _ operation: GattOperation,
                                        attempt: Int = 0) {
        operation.abandonCall = session.call(characteristic.path, BlueZ.gattCharacteristic, BlueZ.GattCharacteristic1.Method.acquireNotify,
                                             [GattOptions.none]) {
            [weak self] result in
            guard let self else { return }
            let acquired = result.flatMap { body in
                Result { () throws(BleError) in try ReplyShape.acquired(body, operation: BlueZ.GattCharacteristic1.Method.acquireNotify) }
            }
            guard characteristic.subscription === subscription, !subscription.isEnded else {
                // An earlier link's reply: its socket belongs to nobody now.
                if case .success(let reply) = acquired { reply.socket.close() }
                return
            }
            switch acquired {
            case .success(let reply):
                self.noteMTU(reply.mtu, from: characteristic.path)
                self.adoptNotifySocket(reply.socket, characteristic, subscription)
                operation.finish(.success(nil))
            case .failure(.notPermitted(let text)) where text == BlueZ.ErrorMessage.notifyAcquired && attempt < Self.acquiredRetries:
                // "Notify acquired": bluetoothd still holds a socket, usually the one we closed a
                // moment ago (an unsubscribe right before), whose hang-up it has not handled yet;
                // StartNotify would be refused for the same reason. Ask again shortly.
                let pause = Duration.milliseconds(25 << attempt)
                subscription.retry = LoopTimer.scheduled(after: pause) { [weak self] in
                    guard let self, characteristic.subscription === subscription, !subscription.isEnded else { return }
                    self.acquireNotify(characteristic, subscription, operation, attempt: attempt + 1)
                }
            case .failure(let error):
                // NotPermitted / InProgress (a StartNotify session exists) / NotSupported, or a
                // reply of the wrong shape: StartNotify is the other path BlueZ offers.
                BleLog.debug("AcquireNotify on \(characteristic.path) failed (\(error)); using StartNotify")
                subscription.switchToStartNotify()
                self.startNotify(characteristic, subscription, operation)
            }
        }
    }

    /// AcquireNotify's retries while bluetoothd says "Notify acquired" (25, 50, 100, 200, 400 ms:
    /// under a second for its main loop to handle the hang-up of the socket we closed).
    static let acquiredRetries = 5

    /// The process's StartNotify session on `characteristic` (one per D-Bus sender in
    /// bluetoothd, shared by every central of the process), and who this peripheral's
    /// subscription is to it.
    @BleLoop func notifySession(_ characteristic: Characteristic) -> (claim: SenderClaim, holder: ClaimHolder)? {
        guard let bus = session.bus else { return nil }
        return (bus.notifySession(characteristic.path, timeout: session.options.operationTimeout + .seconds(1)),
                ClaimHolder(client: ObjectIdentifier(session), object: ObjectIdentifier(characteristic)))
    }

    /// `operation` is nil for the fallback after an AcquireNotify socket closed on a live link.
    @BleLoop private func startNotify(_ characteristic: Characteristic, _ subscription: NotifySubscription, _ operation: GattOperation?) {
        guard let (claim, holder) = notifySession(characteristic) else {
            subscription.end()
            characteristic.subscription = nil
            let error = session.closedReason ?? .noBus("not connected to the bus")
            if let operation { operation.finish(.failure(error)) } else { emitNotificationState(characteristic, error: error) }
            return
        }
        characteristic.holdsStartSession = true
        claim.join(holder) { [weak self] result in
            guard let self else { return }
            // A reply for an ended subscription changes nothing: link loss released the
            // session (the claim's StopNotify, sent after this call, is handled after it).
            guard characteristic.subscription === subscription, !subscription.isEnded else { return }
            switch result {
            case .success:
                subscription.markStarted()
                if let operation {
                    operation.finish(.success(nil))
                } else {
                    // The fallback worked on a live link: this characteristic's socket path is broken.
                    characteristic.acquireFailed = true
                }
            case .failure(let error):
                characteristic.holdsStartSession = false
                subscription.end()
                characteristic.subscription = nil
                if let operation {
                    operation.finish(.failure(error))
                } else {
                    self.emitNotificationState(characteristic, error: error)
                }
            }
        }
    }

    /// Reads the subscription's notifications from `socket`, which the subscription now owns.
    @BleLoop func adoptNotifySocket(_ socket: SeqPacketSocket, _ characteristic: Characteristic, _ subscription: NotifySubscription,
                                    inheriting share: AcquiredNotifyShare? = nil) {
        subscription.adopt(socket)
        if let bus = session.bus, !subscription.isEnded {
            let owner = AcquiredNotifyShare.Member(peripheral: self, characteristic: characteristic, subscription: subscription)
            characteristic.notifyShare = bus.ownAcquiredNotify(characteristic.path, owner, existing: share)
        }
        // The loop's shared records: each wake-up takes every record waiting, up to the
        // budget, in one system call (recvmmsg), and copies them all out before delivering.
        socket.startReading { [weak self, weak characteristic, weak subscription] received in
            guard let self, let characteristic, let subscription, characteristic.subscription === subscription else { return }
            switch received {
            case .packet(let value):
                self.deliverNotification(value, characteristic)
                // Other managers of the process riding this socket (rarely any: one check).
                if let share = characteristic.notifyShare, share.hasRiders { share.deliverToRiders(value) }
            case .tooLong:
                // Not reported by the shared records, whose records hold any ATT value.
                break
            case .peerClosed:
                self.notifySocketClosed(characteristic, subscription)
            }
        }
    }

    /// End of file or hang-up on the notification socket (which has closed itself).
    @BleLoop private func notifySocketClosed(_ characteristic: Characteristic, _ subscription: NotifySubscription) {
        // bluetoothd 5.66 closes these sockets on link loss too, often just before
        // Connected=false; on some devices AcquireNotify ends this way while the link stays up
        // (bleak #1885). Fall back to StartNotify at once so nothing is missed; if the link is
        // going down, link loss ends this subscription and its late reply is ignored.
        guard isLinkUp, deviceProperties?[BlueZ.Device1.connected] == true else {
            // The link is going: the riders' subscriptions end with it.
            leaveNotifyShare(characteristic, subscription)
            subscription.end()
            characteristic.subscription = nil
            return
        }
        BleLog.warning("AcquireNotify socket of \(characteristic.path) closed while connected; falling back to StartNotify")
        subscription.switchToStartNotify()
        leaveNotifyShare(characteristic, subscription)
        startNotify(characteristic, subscription, nil)
    }

    /// The socket this rider rode closed on a live link: StartNotify, shared with the former
    /// owner's fallback (one session per client in bluetoothd).
    @BleLoop func lostRide(_ rider: AcquiredNotifyShare.Member) {
        guard let characteristic = rider.characteristic, let subscription = rider.subscription, rider.isLive else { return }
        characteristic.notifyShare = nil
        subscription.switchToStartNotify()
        startNotify(characteristic, subscription, nil)
    }

    /// Takes `characteristic` out of its AcquireNotify share before its `subscription` ends:
    /// a rider just leaves; an owner whose riders live on hands the socket, open, to the first
    /// of them (the subscription then holds no socket to close); riders of a socket that is
    /// gone fall back to StartNotify (riders on a link that went down end with it).
    @BleLoop
    private func leaveNotifyShare(_ characteristic: Characteristic, _ subscription: NotifySubscription) {
        guard let share = characteristic.notifyShare else { return }
        characteristic.notifyShare = nil
        guard share.owner.holds(subscription) else { return share.remove(subscription) }
        session.bus?.dropAcquiredNotify(share)
        guard let socket = subscription.socket, socket.isOpen else {
            for rider in share.takeRiders() { rider.peripheral?.lostRide(rider) }
            return
        }
        guard let heir = share.promoteHeir(), let peripheral = heir.peripheral, let heirCharacteristic = heir.characteristic,
              let heirSubscription = heir.subscription else { return }
        // The socket changes hands open: bluetoothd sees no hang-up, and no packet is lost.
        _ = subscription.handOverSocket()
        socket.stopReading()
        peripheral.adoptNotifySocket(socket, heirCharacteristic, heirSubscription, inheriting: share)
    }

    @BleLoop private func disableNotify(_ characteristic: Characteristic, _ operation: GattOperation) {
        let subscription = characteristic.subscription
        if let subscription { leaveNotifyShare(characteristic, subscription) }
        subscription?.end()
        characteristic.subscription = nil
        guard characteristic.holdsStartSession else {
            // Closing the fd released AcquireNotify (NotifyAcquired=false follows, observed).
            return operation.finish(.success(nil))
        }
        characteristic.holdsStartSession = false
        guard let (claim, holder) = notifySession(characteristic) else { return operation.finish(.success(nil)) }
        // bluetoothd hears StopNotify only from the last subscriber of the process.
        claim.leave(holder) { result in operation.finish(result.map { _ -> Data? in nil }) }
    }

    @BleLoop func deliverNotification(_ data: Data, _ characteristic: Characteristic) {
        characteristic.cachedValue = data
        for observer in loopObservers { observer.value?.peripheral(self, didNotify: data, for: characteristic) }
        emitValue(data, for: characteristic, error: nil)
    }

    /// A `PropertiesChanged` on one of our characteristics or descriptors.
    @BleLoop func attributeChanged(_ path: ObjectPath, interface: String, changed: PropertyMap) {
        if interface == BlueZ.gattDescriptor {
            if let descriptor = descriptorsByPath[path], let value = changed[BlueZ.GattDescriptor1.value] { descriptor.cachedValue = value }
            return
        }
        guard characteristicsByPath[path] != nil else { return }
        if let mtu = changed[BlueZ.GattCharacteristic1.mtu] { noteMTU(mtu, from: path) }
        guard let value = changed[BlueZ.GattCharacteristic1.value] else { return }
        valueNotified(path, value)
    }

    /// A characteristic's `Value` changed: a notification on our StartNotify subscription, or
    /// the announcement of a read's value, or someone else's business.
    @BleLoop func valueNotified(_ path: ObjectPath, _ value: Data) {
        guard let characteristic = characteristicsByPath[path] else { return }
        valueNotified(characteristic, value)
    }

    /// The characteristic of a known path, for callers that found it already.
    @BleLoop func valueNotified(_ characteristic: Characteristic, _ value: Data) {
        // Only our own session on this link counts: a session of another client, or one left
        // from before a reconnect, would deliver ghost values (bleak #2002), and AcquireNotify
        // values come on the socket.
        let ours = characteristic.subscription?.acceptsSignals == true && isLinkUp
        if characteristic.readsAwaitingSignal > 0 {
            // bluetoothd announces a read's value just before the ReadValue reply: hold what
            // arrives during a read until the reply says which one was the read's.
            characteristic.signalsDuringRead.append((value, ours))
            return
        }
        guard ours else { return }
        deliverNotification(value, characteristic)
    }

    /// A read's reply arrived: the last held signal equal to its value was the read's own;
    /// the others were notifications and are delivered, in order, before the read's result.
    @BleLoop func settleSignalsDuringRead(_ characteristic: Characteristic, readValue: Data?) {
        var held = characteristic.signalsDuringRead
        characteristic.signalsDuringRead.removeAll()
        if let readValue, let index = held.lastIndex(where: { $0.value == readValue }) { held.remove(at: index) }
        for (value, ours) in held where ours && characteristic.subscription?.acceptsSignals == true {
            deliverNotification(value, characteristic)
        }
    }

    /// Ends a characteristic's subscription and releases a StartNotify session we hold:
    /// bluetoothd would otherwise keep it and re-arm it on the next connection (bleak #2002).
    @BleLoop func endSubscription(_ characteristic: Characteristic, releaseSession: Bool = true) {
        if let subscription = characteristic.subscription {
            // Riders on another link state (a manager closing on a live link) keep the socket.
            leaveNotifyShare(characteristic, subscription)
        }
        characteristic.subscription?.end()
        characteristic.subscription = nil
        if characteristic.holdsStartSession {
            characteristic.holdsStartSession = false
            // Without `releaseSession` bluetoothd dropped the session itself, and the bus
            // session forgot it before this peripheral heard why.
            if releaseSession, let (claim, holder) = notifySession(characteristic) { claim.leave(holder) }
        }
    }

    /// Resets a characteristic's notify and write channels (link down, daemon gone, removal).
    /// `releaseSession`: also StopNotify a StartNotify session (not when bluetoothd is gone).
    @BleLoop func teardownCharacteristic(_ characteristic: Characteristic, releaseSession: Bool) {
        endSubscription(characteristic, releaseSession: releaseSession)
        characteristic.readsAwaitingSignal = 0
        characteristic.signalsDuringRead.removeAll()
        if case .acquired(let socket) = characteristic.writer.mode { socket.close() }
        let abandon = characteristic.writer.abandonAcquire
        characteristic.writer = WriteChannel()
        // After the reset: the abandoned call's completion then finds nothing to pump.
        abandon?.abandon()
    }
}
