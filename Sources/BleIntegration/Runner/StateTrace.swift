import BleDBus
import BlueZVocabulary
import Foundation

/// Records the state properties of one adapter and its devices as BlueZ announces them, one
/// entry per property change (`Connected=true`), so that how the daemon groups properties into
/// signals, which varies between runs of the real daemon, does not matter. Changes that come
/// in one signal are listed in causal order (Connected before ServicesResolved when they turn
/// true, after it when they turn false), and a value repeated without a change is not recorded again.
@BleLoop
final class StateTrace {
    private(set) var entries: [String] = []
    private var current: [String: String] = [:]
    /// Waits for an entry (see `waitForEntry`), each resumed once: by the entry or by its timer.
    private var waiters: [(id: Int, entry: String, resume: @BleLoop (Bool) -> Void)] = []
    private var nextWaiter = 0
    private var subscriptions: [SignalSubscription] = []
    private let adapter: String

    /// The properties that are states rather than measurements (RSSI, advertising data).
    static let adapterProperties = [BlueZ.Adapter1.powered.name]
    static let deviceProperties = [BlueZ.Device1.connected.name, BlueZ.Device1.servicesResolved.name, BlueZ.Device1.paired.name, BlueZ.Device1.bonded.name, BlueZ.Device1.trusted.name,
                                   BlueZ.Device1.blocked.name]

    init(adapter: String) {
        self.adapter = adapter
    }

    func start(on connection: Connection) throws {
        let adapterPath = BlueZ.rootPath.rawValue + "/" + adapter
        subscriptions.append(try connection.signals.subscribe(SignalMatch(
            sender: BlueZ.busName, interface: FreedesktopDBus.Properties.interface, member: FreedesktopDBus.Properties.propertiesChanged)) { [weak self] message in
            guard let self, let path = message.path?.rawValue, case .string(let interface)? = message.body.first,
                  message.body.count >= 2, let changed = try? BlueZShapes.propertyMap(message.body[1]) else { return }
            if path == adapterPath, interface == BlueZ.Adapter1.interface {
                self.record(subject: self.adapter, changed, Self.adapterProperties)
            } else if path.hasPrefix(adapterPath + "/dev_"), interface == BlueZ.Device1.interface,
                      !path.dropFirst(adapterPath.count + 1).contains("/") {
                var changed = changed
                let subject = Self.address(of: path)
                // As BleCore does: bluetoothd 5.66 sometimes never announces Connected=true
                // (a race between the ATT socket and the kernel's event), but services are only
                // resolved over a live link.
                if changed[BlueZ.Device1.servicesResolved] == true, changed[BlueZ.Device1.connected.name] == nil,
                   self.current["\(subject) Connected"] != "true" {
                    changed[BlueZ.Device1.connected.name] = .boolean(true)
                }
                self.record(subject: subject, changed, Self.deviceProperties)
            }
        })
        subscriptions.append(try connection.signals.subscribe(SignalMatch(
            sender: BlueZ.busName, interface: FreedesktopDBus.ObjectManager.interface)) { [weak self] message in
            guard let self, case .objectPath(let path)? = message.body.first,
                  path.rawValue.hasPrefix(adapterPath + "/dev_"), !path.rawValue.dropFirst(adapterPath.count + 1).contains("/") else { return }
            let subject = Self.address(of: path.rawValue)
            if message.member == FreedesktopDBus.ObjectManager.interfacesAdded, message.body.count >= 2,
               let interfaces = try? BlueZShapes.interfaceMap(message.body[1]), let device = interfaces[BlueZ.Device1.interface] {
                self.append("\(subject) added")
                // The initial values are the first states; a device that appears connected says so.
                for name in Self.deviceProperties { self.current["\(subject) \(name)"] = nil }
                self.record(subject: subject, device, Self.deviceProperties, quietWhenFalse: true)
            } else if message.member == FreedesktopDBus.ObjectManager.interfacesRemoved, message.body.count >= 2,
                      case .array(_, let names) = message.body[1], names.contains(.string(BlueZ.Device1.interface)) {
                self.append("\(subject) removed")
                for name in Self.deviceProperties { self.current["\(subject) \(name)"] = nil }
            }
        })
    }

    private func append(_ entry: String) {
        entries.append(entry)
        let met = waiters.filter { $0.entry == entry }
        waiters.removeAll { $0.entry == entry }
        for waiter in met { waiter.resume(true) }
    }

    /// Where the trace is now, for `rewind(to:)` and `waitForEntry(_:since:within:)`.
    var mark: Int { entries.count }

    /// True once `entry` has been recorded after `mark` (at once if it was), false when `window`
    /// passes first.
    func waitForEntry(_ entry: String, since mark: Int, within window: Duration) async -> Bool {
        if entries.dropFirst(mark).contains(entry) { return true }
        nextWaiter += 1
        let id = nextWaiter
        return await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let timer = LoopTimer.scheduled(after: window) { [weak self] in
                guard let self, let index = self.waiters.firstIndex(where: { $0.id == id }) else { return }
                self.waiters.remove(at: index)
                continuation.resume(returning: false)
            }
            waiters.append((id, entry, { met in timer.cancel(); continuation.resume(returning: met) }))
        }
    }

    /// Forgets what was recorded after `mark`: an attempt that a scenario repeats from a clean
    /// slate (a retried outside client) is not part of what the two BlueZes are compared on.
    func rewind(to mark: Int) {
        guard mark < entries.count else { return }
        entries.removeSubrange(mark...)
    }

    func stop() {
        for subscription in subscriptions { subscription.cancel() }
        subscriptions.removeAll()
    }

    private func record(subject: String, _ changed: PropertyMap, _ watched: [String], quietWhenFalse: Bool = false) {
        // Going up, the link comes before what rides on it; going down, the other way round.
        let rising = watched.filter { changed[$0] == .boolean(true) }
        let falling = watched.filter { changed[$0] == .boolean(false) }.reversed()
        for name in rising + falling {
            guard case .boolean(let value)? = changed[name] else { continue }
            let key = "\(subject) \(name)"
            let text = value ? "true" : "false"
            if current[key] == text { continue }
            // A new device's false flags are its starting point, not a change.
            let isStart = current[key] == nil && quietWhenFalse && !value
            current[key] = text
            if !isStart { append("\(key)=\(text)") }
        }
    }

    private static func address(of path: String) -> String {
        guard let range = path.range(of: "/dev_") else { return path }
        return String(path[range.upperBound...].prefix(17)).replacingOccurrences(of: "_", with: ":")
    }
}
