/// Fans received signals out to subscriptions by path, interface and member, in-process.
///
/// It keeps one bus match rule per distinct (sender, interface, member, arg0), reference
/// counted, and tracks the owners of the well-known names it is asked about so that a signal
/// from `:1.7` reaches a subscription for `org.bluez` only while `:1.7` owns `org.bluez`.
@BleLoop
public final class SignalRouter {
    /// Called on the loop thread with each matching signal.
    public typealias Handler = @BleLoop (DBusMessage) -> Void

    private struct Subscription {
        let match: SignalMatch
        let handler: Handler
    }

    private weak var connection: Connection?
    private var subscriptions: [UInt64: Subscription] = [:]
    /// Subscriptions on one exact path, so a signal visits only its own object's handlers.
    private var byPath: [ObjectPath: [UInt64]] = [:]
    private var pathless: [UInt64] = []
    private var nextID: UInt64 = 1
    private var ruleCounts: [String: Int] = [:]
    private var owners: [String: NameOwner] = [:] {
        // Owners change a few times per bluetoothd life; the shortcut reads its sender's on
        // every notification.
        didSet { refreshShortcutOwner() }
    }
    private var nameWatchers: [String: [UInt64: @BleLoop (String?) -> Void]] = [:]
    /// The one subscription whose commonest signal skips decoding (`PropertyValueShortcut`).
    var activeShortcut: ActiveShortcut? {
        didSet { refreshShortcutOwner() }
    }
    /// The current owner of the shortcut's sender, when known.
    var shortcutOwner: String?
    /// Whether signals may take a subscription's `PropertyValueShortcut`; off, every signal
    /// takes the general path (to compare the two, or to rule the shortcut out when diagnosing).
    package var shortcutsEnabled = true

    private enum NameOwner {
        case unknown(changedSinceQuery: Bool)
        case owned(by: String)
        case unowned
    }

    init(connection: Connection) {
        self.connection = connection
    }

    /// Delivers matching signals to `handler` on the loop, in arrival order.
    ///
    /// The bus rule is sent before this returns, so a call made afterwards (such as
    /// `GetManagedObjects`) cannot overtake it: no signal emitted after that call is missed.
    public func subscribe(_ match: SignalMatch, handler: @escaping Handler) throws(DBusError) -> SignalSubscription {
        try match.validate()
        guard let connection, connection.isOpen else { throw .disconnected }
        let id = nextID
        nextID += 1
        subscriptions[id] = Subscription(match: match, handler: handler)
        if let path = match.path { byPath[path, default: []].append(id) } else { pathless.append(id) }
        retainRule(match.busRule)
        if let sender = match.sender, !sender.hasPrefix(":") { trackOwner(of: sender) }
        return SignalSubscription { [weak self] in
            // On the loop (in a handler, or in BleLoop code) stop at once, so that not even the
            // signal being delivered right now reaches a cancelled handler.
            if MainLoop.shared.isCurrent {
                BleLoop.assumeIsolated { self?.unsubscribe(id) }
            } else {
                LoopBridge.later { self?.unsubscribe(id) }
            }
        }
    }

    /// The id of the subscription made last.
    var lastSubscriptionID: UInt64 { nextID - 1 }

    /// Keeps the shortcut's copy of its sender's owner current.
    func refreshShortcutOwner() {
        guard let sender = activeShortcut?.sender, case .owned(let owner)? = owners[sender] else {
            shortcutOwner = nil
            return
        }
        shortcutOwner = owner
    }

    private func unsubscribe(_ id: UInt64) {
        guard let subscription = subscriptions.removeValue(forKey: id) else { return }
        if activeShortcut?.id == id { activeShortcut = nil }
        if let path = subscription.match.path {
            byPath[path]?.removeAll { $0 == id }
            if byPath[path]?.isEmpty == true { byPath.removeValue(forKey: path) }
        } else {
            pathless.removeAll { $0 == id }
        }
        releaseRule(subscription.match.busRule)
    }

    /// The number of bus match rules this connection holds.
    public var busRuleCount: Int { ruleCounts.count }
    /// The number of live signal subscriptions.
    public var subscriptionCount: Int { subscriptions.count }
    /// The number of live name-owner watchers.
    public var nameWatcherCount: Int { nameWatchers.values.reduce(0) { $0 + $1.count } }

    private func retainRule(_ rule: String) {
        let count = ruleCounts[rule, default: 0]
        ruleCounts[rule] = count + 1
        guard count == 0 else { return }
        // Sent before `subscribe` returns, so that no call made after it can overtake the rule.
        connection?.callAtOnce(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                               interface: "org.freedesktop.DBus", member: "AddMatch", arguments: [.string(rule)]) { result in
            if case .failure(let error) = result, error != .disconnected {
                DBusLog.warning("AddMatch \(rule) failed: \(error)")
            }
        }
    }

    private func releaseRule(_ rule: String) {
        guard let count = ruleCounts[rule] else { return }
        if count > 1 {
            ruleCounts[rule] = count - 1
            return
        }
        ruleCounts.removeValue(forKey: rule)
        guard let connection, connection.isOpen else { return }
        connection.callAtOnce(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                              interface: "org.freedesktop.DBus", member: "RemoveMatch", arguments: [.string(rule)]) { _ in }
    }

    func route(_ message: DBusMessage) {
        if message.interface == "org.freedesktop.DBus", message.member == "NameOwnerChanged",
           message.sender == "org.freedesktop.DBus" {
            noteOwnerChange(message)
        }
        // Both lists hold ids in subscription order (ids only grow, removal keeps the order):
        // merging them delivers in that order without building and sorting a list per signal.
        let general = pathless
        let exact = message.path.flatMap { byPath[$0] } ?? []
        var generalIndex = 0
        var exactIndex = 0
        // Subscriptions of one object nearly all name the same sender: resolve it once.
        var resolvedSender: (wanted: String, matches: Bool)?
        while generalIndex < general.count || exactIndex < exact.count {
            let id: UInt64
            if exactIndex == exact.count || (generalIndex < general.count && general[generalIndex] < exact[exactIndex]) {
                id = general[generalIndex]
                generalIndex += 1
            } else {
                id = exact[exactIndex]
                exactIndex += 1
            }
            // A handler may cancel others; look each up again.
            guard let subscription = subscriptions[id], subscription.match.matchesFields(of: message) else { continue }
            if let wanted = subscription.match.sender {
                let matches: Bool
                if let resolvedSender, resolvedSender.wanted == wanted {
                    matches = resolvedSender.matches
                } else {
                    matches = senderMatches(wanted, message.sender)
                    resolvedSender = (wanted, matches)
                }
                guard matches else { continue }
            }
            // Owners change only in `noteOwnerChange` above, never inside a handler.
            subscription.handler(message)
        }
    }

    private func senderMatches(_ wanted: String?, _ actual: String?) -> Bool {
        guard let wanted else { return true }
        guard let actual else { return false }
        if wanted == actual { return true }
        if wanted.hasPrefix(":") { return false }
        switch owners[wanted] ?? .unknown(changedSinceQuery: false) {
        case .owned(let owner): return owner == actual
        case .unowned: return false
        // The bus only forwarded it because a rule naming this sender matched.
        case .unknown: return true
        }
    }

    // MARK: Name owners

    /// Calls `handler` with the current owner of `name` (nil when nobody owns it), then on
    /// every change, until the returned subscription is cancelled: how the layer above learns
    /// that bluetoothd vanished or came back.
    public func watchName(_ name: String, handler: @escaping @BleLoop (String?) -> Void) throws(DBusError) -> SignalSubscription {
        guard DBusNames.isValidBusName(name), !name.hasPrefix(":") else {
            throw .invalidArgument("'\(name)' is not a well-known bus name")
        }
        let id = nextID
        nextID += 1
        nameWatchers[name, default: [:]][id] = handler
        let alreadyTracked = owners[name] != nil
        trackOwner(of: name)
        if alreadyTracked, case .owned(let owner)? = owners[name] {
            LoopBridge.later { [weak self] in if self?.nameWatchers[name]?[id] != nil { handler(owner) } }
        } else if alreadyTracked, case .unowned? = owners[name] {
            LoopBridge.later { [weak self] in if self?.nameWatchers[name]?[id] != nil { handler(nil) } }
        }
        return SignalSubscription { [weak self] in
            if MainLoop.shared.isCurrent {
                BleLoop.assumeIsolated { _ = self?.nameWatchers[name]?.removeValue(forKey: id) }
            } else {
                LoopBridge.later { self?.nameWatchers[name]?.removeValue(forKey: id) }
            }
        }
    }

    /// The owner of a tracked name as last seen, or nil when unknown or unowned.
    public func currentOwner(of name: String) -> String? {
        if case .owned(let owner)? = owners[name] { return owner }
        return nil
    }

    private func trackOwner(of name: String) {
        guard owners[name] == nil, let connection else { return }
        owners[name] = .unknown(changedSinceQuery: false)
        retainRule(SignalMatch(sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus",
                               member: "NameOwnerChanged", arg0: name).busRule)
        connection.callAtOnce(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                              interface: "org.freedesktop.DBus", member: "GetNameOwner", arguments: [.string(name)]) { [weak self] result in
            self?.ownerQueryAnswered(name: name, result: result)
        }
    }

    private func ownerQueryAnswered(name: String, result: Result<[DBusValue], DBusError>) {
        // A NameOwnerChanged that arrived first is newer than this answer.
        guard case .unknown(changedSinceQuery: false)? = owners[name] else { return }
        switch result {
        case .success(let body):
            if case .string(let owner)? = body.first {
                owners[name] = .owned(by: owner)
                notifyWatchers(name, owner)
            }
        case .failure(.remote(name: "org.freedesktop.DBus.Error.NameHasNoOwner", _)):
            owners[name] = .unowned
            notifyWatchers(name, nil)
        case .failure(let error):
            DBusLog.warning("GetNameOwner \(name) failed: \(error)")
        }
    }

    private func noteOwnerChange(_ message: DBusMessage) {
        guard message.body.count == 3, case .string(let name) = message.body[0],
              case .string(let newOwner) = message.body[2], owners[name] != nil else { return }
        owners[name] = newOwner.isEmpty ? NameOwner.unowned : .owned(by: newOwner)
        notifyWatchers(name, newOwner.isEmpty ? nil : newOwner)
    }

    private func notifyWatchers(_ name: String, _ owner: String?) {
        guard let watchers = nameWatchers[name] else { return }
        // A handler may cancel others; skip those.
        for (id, handler) in watchers.sorted(by: { $0.key < $1.key }) where nameWatchers[name]?[id] != nil {
            handler(owner)
        }
    }

    func connectionClosed() {
        ruleCounts.removeAll()
    }
}
