import BleDBus
import BlueZVocabulary
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
    /// Apps that left (or unregistered) while centrals were connected: their links stay up,
    /// serving bluetoothd's own services, until an app registers again and takes them over.
    private var departed: [ApplicationPeripheral] = []
    /// Advertisements' `Timeout`s running.
    private var releaseTimers: [LoopTimer] = []
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
        return ExportedInterface(BlueZ.GattManager1.interface, methods: [
            ExportedMethod(BlueZ.GattManager1.Method.registerApplication, in: [ArgumentDescription("application", .objectPath), options]) { [weak self] call in
                self?.registerApplication(call)
            },
            ExportedMethod(BlueZ.GattManager1.Method.unregisterApplication, in: [ArgumentDescription("application", .objectPath)]) { [weak self] call in
                guard let self, case .objectPath(let path) = call.arguments[0],
                      let index = self.applications.firstIndex(where: { $0.owner == call.sender && $0.root == path }) else {
                    return BlueZError.doesNotExist(call)
                }
                let application = self.applications.remove(at: index)
                self.departed.append(application)
                // As when the app leaves the bus (seen in the VM): `{UUIDs}`, the reply, then
                // the connected centrals lose its services; links and advertisement stay.
                self.adapter?.changed([BlueZ.Adapter1.uuids.name])
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
        connection.call(destination: owner, path: root, interface: FreedesktopDBus.ObjectManager.interface,
                        member: FreedesktopDBus.ObjectManager.getManagedObjects) { result in
            BleLoop.assumeIsolated { [weak self, weak adapter] in
                guard let self, let adapter else { return }
                guard case .success(let body) = result, let first = body.first,
                      let objects = try? BlueZShapes.managedObjects(first) else {
                    return BlueZError.failed(call, BlueZ.ErrorMessage.applicationTreeUnreadable)
                }
                guard let application = ApplicationPeripheral(owner: owner, root: root, objects: objects, adapter: adapter) else {
                    return BlueZError.invalidArguments(call)
                }
                self.applications.append(application)
                call.reply()
                adapter.changed([BlueZ.Adapter1.uuids.name])
                self.updateAir()
                self.handOverLinks(to: application)
            }
        }
    }

    // MARK: LEAdvertisingManager1

    func advertisingManagerInterface() -> ExportedInterface {
        let options = ArgumentDescription("options", .dictionary(key: .string, value: .variant))
        return ExportedInterface(BlueZ.LEAdvertisingManager1.interface, methods: [
            ExportedMethod(BlueZ.LEAdvertisingManager1.Method.registerAdvertisement, in: [ArgumentDescription("advertisement", .objectPath), options]) {
                [weak self] call in self?.registerAdvertisement(call)
            },
            ExportedMethod(BlueZ.LEAdvertisingManager1.Method.unregisterAdvertisement, in: [ArgumentDescription("service", .objectPath)]) { [weak self] call in
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
            ExportedProperty(BlueZ.LEAdvertisingManager1.activeInstances) { [weak self] in .byte(UInt8(self?.advertisements.count ?? 0)) },
            // bluetoothd counts the free slots here.
            ExportedProperty(BlueZ.LEAdvertisingManager1.supportedInstances) { [weak self] in
                .byte(UInt8(PeripheralRoleBridge.maximumAdvertisements - (self?.advertisements.count ?? 0)))
            },
            ExportedProperty(BlueZ.LEAdvertisingManager1.supportedIncludes) {
                .array(element: .string, [.string("tx-power"), .string("appearance"), .string("local-name")])
            },
            ExportedProperty(BlueZ.LEAdvertisingManager1.supportedSecondaryChannels) { nil },
        ])
    }

    private func countsChanged() {
        guard let adapter else { return }
        adapter.objects?.emitPropertiesChanged(path: adapter.path, interface: BlueZ.LEAdvertisingManager1.interface,
                                               names: [BlueZ.LEAdvertisingManager1.supportedInstances.name, BlueZ.LEAdvertisingManager1.activeInstances.name])
    }

    private func registerAdvertisement(_ call: IncomingCall) {
        guard let connection = simulator?.connection, case .objectPath(let path) = call.arguments[0] else { return }
        guard !advertisements.contains(where: { $0.owner == call.sender && $0.path == path }) else {
            return BlueZError.alreadyExists(call)
        }
        guard advertisements.count < PeripheralRoleBridge.maximumAdvertisements else {
            return BlueZError.notPermitted(call, BlueZ.ErrorMessage.maximumAdvertisementsReached)
        }
        let owner = call.sender
        // bluetoothd first tries the advertisement's ObjectManager (apps answer UnknownMethod),
        // then reads LEAdvertisement1's properties.
        connection.call(destination: owner, path: path, interface: FreedesktopDBus.ObjectManager.interface,
                        member: FreedesktopDBus.ObjectManager.getManagedObjects) { _ in
            connection.call(destination: owner, path: path, interface: FreedesktopDBus.Properties.interface, member: FreedesktopDBus.Properties.getAll,
                            arguments: [.string(BlueZ.LEAdvertisement1.interface)]) { result in
                BleLoop.assumeIsolated { [weak self] in
                    guard let self else { return }
                    guard case .success(let body) = result, let first = body.first,
                          let properties = try? BlueZShapes.propertyMap(first),
                          let advertisement = RegisteredAdvertisement(owner: owner, path: path, properties: properties) else {
                        return BlueZError.invalidArguments(call)
                    }
                    // bluetoothd 5.66 finds out only when it builds the data for the kernel, and
                    // answers with a plain failure (observed: advertising.fieldsAndFit).
                    guard advertisement.dataLength(adapterDiscoverable: self.adapter?.isDiscoverable ?? false) <= advertisement.dataLimit else {
                        return call.fail(name: BlueZ.ErrorName.failed, message: BlueZ.ErrorMessage.failedToRegisterAdvertisement)
                    }
                    self.advertisements.append(advertisement)
                    self.countsChanged()
                    call.reply()
                    self.updateAir()
                    if let timeout = advertisement.timeout { self.scheduleRelease(of: advertisement, after: timeout) }
                }
            }
        }
    }

    /// bluetoothd ends an advertisement with a `Timeout` by itself: it leaves the air, the counts
    /// change and the app gets `Release()`. Wall-clock seconds, not scaled by `timing`: it is the
    /// app's chosen lifetime, not a radio cost.
    private func scheduleRelease(of advertisement: RegisteredAdvertisement, after seconds: UInt16) {
        let timer = LoopTimer.scheduled(after: .seconds(Int64(seconds))) { [weak self] in
            guard let self, let index = self.advertisements.firstIndex(where: { $0.owner == advertisement.owner && $0.path == advertisement.path }),
                  let connection = self.simulator?.connection else { return }
            self.advertisements.remove(at: index)
            self.countsChanged()
            self.updateAir()
            var release = DBusMessage.methodCall(destination: advertisement.owner, path: advertisement.path,
                                                 interface: BlueZ.LEAdvertisement1.interface, member: BlueZ.LEAdvertisement1.Method.release)
            release.noReplyExpected = true
            _ = try? connection.send(release)
        }
        releaseTimers.append(timer)
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
        if !leaving.isEmpty { adapter?.changed([BlueZ.Adapter1.uuids.name]) }
        if hadAdvertisement { countsChanged() }
        if !leaving.isEmpty || hadAdvertisement { updateAir() }
        for application in leaving { application.ownerLeft() }
        departed += leaving
    }

    /// bluetoothd adds a newly registered app's services to the adapter's one database and
    /// indicates Service Changed to connected centrals (seen in the VM when the peer's process
    /// restarted): the centrals linked to a departed app are served by the new one and get its
    /// services' objects.
    private func handOverLinks(to application: ApplicationPeripheral) {
        let previous = departed
        departed.removeAll()
        for old in previous {
            for link in old.liveLinks {
                old.release(link)
                application.adopt(link)
                link.device?.peerServicesAdded(layout: application.layout, link: link)
            }
        }
    }

    /// SIGTERM: advertisements get `Release()`, notifying characteristics `StopNotify()`; the
    /// application itself gets no call.
    func daemonStopping() {
        guard let connection = simulator?.connection else { return }
        for application in applications { application.stopNotifyAll() }
        for advertisement in advertisements {
            var release = DBusMessage.methodCall(destination: advertisement.owner, path: advertisement.path,
                                                 interface: BlueZ.LEAdvertisement1.interface, member: BlueZ.LEAdvertisement1.Method.release)
            release.noReplyExpected = true
            _ = try? connection.send(release)
        }
        forget()
    }

    func forget() {
        for timer in releaseTimers { timer.cancel() }
        releaseTimers.removeAll()
        departed.removeAll()
        for application in applications { application.close() }
        applications.removeAll()
        advertisements.removeAll()
        if let simulator, let adapter, let current = simulator.airPeripheral(adapter.address) as? ApplicationAdvertiser {
            simulator.removeFromAir(current)
        }
    }
}
