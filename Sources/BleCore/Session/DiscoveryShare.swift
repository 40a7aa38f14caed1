import BleDBus

/// The discovery session bluetoothd keeps for this process on one adapter, shared by every
/// central of the process that scans there.
///
/// bluetoothd keeps one discovery session and one filter per D-Bus sender: a second
/// StartDiscovery of the same sender is refused, and its StopDiscovery would end the other
/// central's scan. The share starts discovery for the first scan, stops it after the last, and
/// keeps bluetoothd's filter the merge of every scan's (one scan's filter is sent as it is).
@BleLoop
final class DiscoveryShare {
    let adapter: ObjectPath
    private var filters: [ClaimHolder: DiscoveryFilter] = [:]
    /// The filter bluetoothd has now (nil before the first is sent).
    private var sentFilter: DiscoveryFilter?
    private weak var bus: BusSession?
    private let timeout: Duration

    init(adapter: ObjectPath, bus: BusSession, timeout: Duration) {
        self.adapter = adapter
        self.bus = bus
        self.timeout = timeout
    }

    /// bluetoothd's session, held while any central scans.
    private(set) lazy var claim = SenderClaim(acquire: { [weak self] done in
        guard let self else { return done(.failure(.cancelled)) }
        self.sendFilter(force: true) { [weak self] in
            guard let self, let bus = self.bus else { return done(.failure(.noBus("not connected to the bus"))) }
            bus.call(self.adapter, BlueZ.adapter, BlueZ.Adapter1.Method.startDiscovery, timeout: self.timeout) { result in
                switch result {
                // InProgress: bluetoothd still has a session of ours (bleak #859).
                case .success, .failure(.inProgress): done(.success(()))
                case .failure(let error): done(.failure(error))
                }
            }
        }
    }, release: { [weak self] done in
        guard let self, let bus = self.bus else { return done(.success(())) }
        self.sentFilter = nil
        bus.call(self.adapter, BlueZ.adapter, BlueZ.Adapter1.Method.stopDiscovery, timeout: self.timeout) { result in
            done(result.map { _ in () })
        }
    })

    /// Sets `holder`'s filter; bluetoothd hears the merge at once when discovery is on.
    func setFilter(_ filter: DiscoveryFilter, for holder: ClaimHolder, completion: @escaping @BleLoop () -> Void) {
        filters[holder] = filter
        guard claim.state == .held, claim.holders.contains(holder) else { return completion() }
        sendFilter(force: false, then: completion)
    }

    /// Starts discovery for `holder` (with its filter), or joins the session already running.
    func start(_ holder: ClaimHolder, completion: @escaping SenderClaim.Completion) {
        claim.join(holder, completion: completion)
    }

    /// Ends `holder`'s part: bluetoothd stops discovering after the last, or narrows its filter.
    func stop(_ holder: ClaimHolder, completion: @escaping SenderClaim.Completion) {
        filters.removeValue(forKey: holder)
        let wasHolder = claim.holders.contains(holder)
        claim.leave(holder, completion: completion)
        if wasHolder, claim.state == .held { sendFilter(force: false) {} }
    }

    /// Sends the merge of the holders' filters when it differs from bluetoothd's (or `force`).
    private func sendFilter(force: Bool, then next: @escaping @BleLoop () -> Void) {
        let wanted = DiscoveryFilter.merged(claim.holders.sorted { $0.object.hashValue < $1.object.hashValue }.compactMap { filters[$0] })
        guard let bus, let wanted, force || wanted != sentFilter else { return next() }
        sentFilter = wanted
        bus.call(adapter, BlueZ.adapter, BlueZ.Adapter1.Method.setDiscoveryFilter, [wanted.dbusValue], timeout: timeout) { result in
            if case .failure(let error) = result { BleLog.warning("SetDiscoveryFilter failed: \(error); scanning unfiltered") }
            next()
        }
    }
}
