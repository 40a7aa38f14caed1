import BleDBus
import BlueZVocabulary
import Foundation

/// The single source of truth for BlueZ state: every object and property under `org.bluez`.
///
/// Order matters (bleak's lesson): the signal subscription goes out first, then
/// `GetManagedObjects`; signals that arrive before its reply were emitted before it and are
/// already in the answer, so they are skipped. The `org.bluez` owner is watched too, because a
/// SIGKILLed bluetoothd leaves with no signal but `NameOwnerChanged` (observed on 5.66).
@BleLoop
final class ObjectCache {
    private(set) var objects: [ObjectPath: InterfaceMap] = [:]
    /// Bumped whenever an object is added or removed, or the cache is loaded or lost: what the
    /// session's remembered notification route depends on. (Property changes do not move it.)
    private(set) var structureVersion: UInt64 = 0
    /// Every object below each device (`/org/bluez/hciN/dev_…`, depth 4), and the devices of each
    /// adapter: GATT lookups cost what one device holds, not what BlueZ knows (100k devices).
    private var objectsByDevice: [ObjectPath: Set<ObjectPath>] = [:]
    private var devicesByAdapter: [ObjectPath: Set<ObjectPath>] = [:]
    /// How many objects the last `children(of:with:)` looked at (tests prove it does not grow
    /// with the number of devices).
    private(set) var lastLookupCandidates = 0
    private(set) var owner: String?
    private(set) var isLoaded = false
    private let connection: Connection
    private var signalSubscription: SignalSubscription?
    private var nameSubscription: SignalSubscription?
    private var loadGeneration = 0
    var onEvent: (@BleLoop (CacheEvent) -> Void)?
    /// Receives notifications (`CacheEvent.notified`) straight, when set: the commonest event
    /// skips the general switch and the closure's isolation check.
    weak var notificationRouter: BusSession?

    init(connection: Connection) {
        self.connection = connection
    }

    /// Subscribes (one broad rule for everything `org.bluez` sends) and starts watching the name.
    func start() throws(DBusError) {
        // Notifications, the commonest signal by far, skip decoding a message; the shortcut
        // runs the same checks as `handle`.
        let notifications = PropertyValueShortcut(interface: BlueZ.gattCharacteristic, property: BlueZ.GattCharacteristic1.value.name,
                                                  receiver: self)
        signalSubscription = try connection.signals.subscribe(SignalMatch(sender: BlueZ.service), shortcut: notifications) { [weak self] message in
            self?.handle(message)
        }
        nameSubscription = try connection.signals.watchName(BlueZ.service) { [weak self] owner in
            self?.ownerChanged(owner)
        }
    }

    func stop() {
        signalSubscription?.cancel()
        nameSubscription?.cancel()
        signalSubscription = nil
        nameSubscription = nil
    }

    private func ownerChanged(_ newOwner: String?) {
        let previous = owner
        owner = newOwner
        if let previous, previous != newOwner {
            BleLog.info("bluetoothd (\(previous)) left the bus; every BlueZ object is gone")
            dropAll()
        }
        if let newOwner, newOwner != previous { load() } else if newOwner == nil, previous == nil, !isLoaded {
            onEvent?(.loadFailed(.serviceUnknown(BlueZ.busName + " has no owner")))
        }
    }

    private func dropAll() {
        structureVersion &+= 1
        isLoaded = false
        loadGeneration += 1
        objects.removeAll()
        objectsByDevice.removeAll()
        devicesByAdapter.removeAll()
        onEvent?(.daemonLost)
    }

    private func load() {
        loadGeneration += 1
        let generation = loadGeneration
        structureVersion &+= 1
        isLoaded = false
        connection.call(destination: BlueZ.service, path: .root, interface: BlueZ.objectManager, member: FreedesktopDBus.ObjectManager.getManagedObjects) { result in
            BleLoop.assumeIsolated { [weak self] in
                guard let self, generation == self.loadGeneration else { return }
                switch result {
                case .success(let body):
                    guard let first = body.first, let managed = try? BlueZShapes.managedObjects(first) else {
                        self.onEvent?(.loadFailed(.dbus("GetManagedObjects answered with an unexpected shape")))
                        return
                    }
                    self.objects = managed
                    self.structureVersion &+= 1
                    self.rebuildIndex()
                    self.isLoaded = true
                    BleLog.debug("loaded \(managed.count) BlueZ objects")
                    self.onEvent?(.loaded)
                case .failure(let error):
                    let mapped = BleError.from(error, operation: FreedesktopDBus.ObjectManager.getManagedObjects)
                    BleLog.warning("GetManagedObjects failed: \(mapped)")
                    self.onEvent?(.loadFailed(mapped))
                }
            }
        }
    }

    /// Loads again (after an access problem was fixed, for instance).
    func reload() { if owner != nil { load() } }

    private func handle(_ message: DBusMessage) {
        // Before the GetManagedObjects answer, everything a signal says is in that answer.
        guard isLoaded, let path = message.path else { return }
        switch (message.interface, message.member) {
        case (BlueZ.objectManager, FreedesktopDBus.ObjectManager.interfacesAdded):
            guard message.body.count == 2, case .objectPath(let object) = message.body[0],
                  let interfaces = try? BlueZShapes.interfaceMap(message.body[1]) else { return }
            var entry = objects[object] ?? [:]
            for (name, properties) in interfaces { entry[name] = properties }
            if objects[object] == nil { index(object) }
            objects[object] = entry
            structureVersion &+= 1
            onEvent?(.added(object, interfaces: Set(interfaces.keys)))
        case (BlueZ.objectManager, FreedesktopDBus.ObjectManager.interfacesRemoved):
            guard message.body.count == 2, case .objectPath(let object) = message.body[0],
                  let names = message.body[1].as([String].self), let entry = objects[object] else { return }
            var remaining = entry
            for name in names { remaining.removeValue(forKey: name) }
            structureVersion &+= 1
            let meaningful = remaining.keys.filter { $0.hasPrefix(BlueZ.interfacePrefix) }
            if meaningful.isEmpty {
                objects.removeValue(forKey: object)
                unindex(object)
            } else {
                objects[object] = remaining
            }
            onEvent?(.removed(object, interfaces: Set(names), lastProperties: entry))
        case (BlueZ.properties, FreedesktopDBus.Properties.propertiesChanged):
            guard message.body.count == 3, case .string(let interface) = message.body[0] else { return }
            if interface == BlueZ.gattCharacteristic, let value = Self.notifiedValue(message.body[1], invalidated: message.body[2]) {
                // A notification, the commonest signal by far: routed with its bytes, without a
                // property map, and not stored. The Characteristic keeps what it delivered; the
                // cache's Value (BlueZ's value at load) only seeds a Characteristic made later.
                notified(path, value)
                return
            }
            guard var changed = try? BlueZShapes.propertyMap(message.body[1]),
                  let invalidated = message.body[2].as([String].self) else { return }
            guard let known = objects[path]?[interface] else { return }
            // BlueZ never changes a property's D-Bus type: a value of another type comes from a
            // broken or hostile owner of the name, and would read as absent (Powered as the
            // string "off" turned the adapter off). It is dropped; the last good value stays.
            for (key, value) in changed where known[key].map({ $0.type != value.type }) ?? false {
                BleLog.warning("\(path): \(interface).\(key) changed type to \(value.type.signature); ignored")
                changed.removeValue(forKey: key)
            }
            if interface == BlueZ.device, changed[BlueZ.Device1.servicesResolved] == true,
               !BlueZ.Device1.connected.isPresent(in: changed), objects[path]?[interface]?[BlueZ.Device1.connected] != true {
                // bluetoothd 5.66 can miss Connected=true: when the ATT socket connects before the
                // kernel's Device Connected event is read (seen under load in a VM), the second
                // add finds the device "already connected" and never announces it. Services are
                // only resolved over a live link, so the link is up.
                BleLog.warning("\(path): ServicesResolved=true without Connected=true (bluetoothd missed it); treating the link as up")
                changed[BlueZ.Device1.connected.name] = BlueZ.Device1.connected.encode(true)
            }
            for (key, value) in changed { objects[path]?[interface]?[key] = value }
            for key in invalidated { objects[path]?[interface]?.removeValue(forKey: key) }
            onEvent?(.changed(path, interface: interface, changed: changed, invalidated: invalidated))
        default:
            break
        }
    }

    /// A characteristic's `Value` changed alone: delivered when the object is known.
    func notified(_ path: ObjectPath, _ value: Data) {
        // The same characteristic as last time, with no object added or removed since: known.
        if let notificationRouter, notificationRouter.deliverToLastNotified(path, value, cacheVersion: structureVersion) { return }
        guard isLoaded, objects[path]?[BlueZ.gattCharacteristic] != nil else { return }
        if let notificationRouter {
            notificationRouter.routeNotification(path, value, cacheVersion: structureVersion)
        } else {
            onEvent?(.notified(path, value))
        }
    }

    /// The bytes of a `PropertiesChanged` that changes `Value` alone (`{Value: ay}`, nothing
    /// invalidated), read straight from the message; nil for any other shape.
    private static func notifiedValue(_ changed: DBusValue, invalidated: DBusValue) -> Data? {
        guard case .dictionary(.string, .variant, let entries) = changed, entries.count == 1,
              case .string(BlueZ.GattCharacteristic1.value.name) = entries[0].key,
              case .variant(.bytes(let value)) = entries[0].value else { return nil }
        if case .array(_, let names) = invalidated, !names.isEmpty { return nil }
        return value
    }

    func properties(_ path: ObjectPath, _ interface: String) -> PropertyMap? { objects[path]?[interface] }

    /// Objects with `interface` anywhere under `ancestor` (not `ancestor` itself), sorted by
    /// path (which is handle order for GATT objects). Under a device or an adapter's devices the
    /// index answers; only other ancestors scan everything.
    func children(of ancestor: ObjectPath, with interface: String) -> [ObjectPath] {
        let depth = ancestor.depth
        let candidates: Set<ObjectPath>
        if depth >= Self.deviceDepth, let device = ancestor.ancestor(depth: Self.deviceDepth) {
            candidates = objectsByDevice[device] ?? []
        } else if depth == Self.deviceDepth - 1, interface == BlueZ.device {
            candidates = devicesByAdapter[ancestor] ?? []
        } else {
            lastLookupCandidates = objects.count
            return objects.compactMap { path, interfaces in
                interfaces[interface] != nil && path.isDescendant(of: ancestor, orEqual: false) ? path : nil
            }.sorted()
        }
        lastLookupCandidates = candidates.count
        return candidates.filter { path in
            path != ancestor && objects[path]?[interface] != nil && path.isDescendant(of: ancestor, orEqual: false)
        }.sorted()
    }

    func all(with interface: String) -> [ObjectPath] {
        objects.compactMap { $0.value[interface] != nil ? $0.key : nil }.sorted()
    }

    /// `/org/bluez/hci0/dev_…` has four elements.
    static let deviceDepth = 4

    private func index(_ path: ObjectPath) {
        let depth = path.depth
        if depth == Self.deviceDepth, let adapter = path.parent {
            devicesByAdapter[adapter, default: []].insert(path)
        }
        if depth > Self.deviceDepth, let device = path.ancestor(depth: Self.deviceDepth) {
            objectsByDevice[device, default: []].insert(path)
        }
    }

    private func unindex(_ path: ObjectPath) {
        let depth = path.depth
        if depth == Self.deviceDepth, let adapter = path.parent {
            devicesByAdapter[adapter]?.remove(path)
        }
        if depth > Self.deviceDepth, let device = path.ancestor(depth: Self.deviceDepth) {
            objectsByDevice[device]?.remove(path)
            if objectsByDevice[device]?.isEmpty == true { objectsByDevice.removeValue(forKey: device) }
        }
    }

    private func rebuildIndex() {
        objectsByDevice.removeAll()
        devicesByAdapter.removeAll()
        for path in objects.keys { index(path) }
    }
}

extension ObjectCache: PropertyValueReceiver {
    /// The notification shortcut's signals: the same as `handle`'s notifications.
    func propertyValueChanged(_ path: ObjectPath, _ value: Data) { notified(path, value) }
}
