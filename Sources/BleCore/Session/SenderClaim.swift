/// Who holds a share of a `SenderClaim`: one object (a central's scan, a characteristic's
/// subscription) of one client of the bus session.
struct ClaimHolder: Hashable {
    /// The `BlueZSession` the holder belongs to: its holders leave when it detaches.
    let client: ObjectIdentifier
    /// The holding object itself.
    let object: ObjectIdentifier
}

/// Something bluetoothd keeps once per D-Bus sender — a discovery session on an adapter, a
/// StartNotify session on a characteristic — held for every manager of this process at once.
///
/// All managers of a process share one bus connection, so to bluetoothd they are one sender:
/// a second StartDiscovery is refused with InProgress, and the first manager's StopNotify would
/// end the notifications of the second. A claim asks bluetoothd once, when its first holder
/// joins, and releases once, when its last holder leaves; each holder sees the answer it would
/// have had as a sender of its own.
@BleLoop
final class SenderClaim {
    typealias Completion = @BleLoop (Result<Void, BleError>) -> Void
    /// Sends bluetoothd's call and reports its answer.
    typealias Action = @BleLoop (@escaping Completion) -> Void

    /// Where the claim is with bluetoothd.
    enum State: Equatable {
        /// bluetoothd holds nothing for us.
        case released
        /// The acquiring call is on its way.
        case acquiring
        /// bluetoothd holds it for us.
        case held
        /// The releasing call is on its way.
        case releasing
    }

    private(set) var state = State.released
    private(set) var holders: Set<ClaimHolder> = []
    private var acquireWaiters: [(holder: ClaimHolder, completion: Completion)] = []
    /// Bumped by `forget`: an answer to a call sent before it belongs to nobody.
    private var generation = 0
    private let acquire: Action
    private let release: Action

    init(acquire: @escaping Action, release: @escaping Action) {
        self.acquire = acquire
        self.release = release
    }

    /// Adds `holder`; `completion` runs once bluetoothd holds the claim (at once when it does),
    /// or with the acquiring call's error.
    func join(_ holder: ClaimHolder, completion: @escaping Completion) {
        holders.insert(holder)
        switch state {
        case .held:
            completion(.success(()))
        case .acquiring, .releasing:
            // A release on its way is answered first; the claim is then asked for again.
            acquireWaiters.append((holder, completion))
        case .released:
            acquireWaiters.append((holder, completion))
            startAcquiring()
        }
    }

    /// Removes `holder`; the last one out releases the claim. `completion` runs with the
    /// releasing call's answer when this leave sent it, at once otherwise.
    func leave(_ holder: ClaimHolder, completion: Completion? = nil) {
        guard holders.remove(holder) != nil else { completion?(.success(())); return }
        if let index = acquireWaiters.firstIndex(where: { $0.holder == holder }) {
            acquireWaiters.remove(at: index).completion(.failure(.cancelled))
        }
        guard holders.isEmpty, state == .held else {
            // Others still hold it, or it is being asked for (released when the answer comes).
            completion?(.success(()))
            return
        }
        startReleasing(completion)
    }

    /// Every holder of `client` leaves (the client detached from the bus).
    func leaveAll(of client: ObjectIdentifier) {
        for holder in holders where holder.client == client { leave(holder) }
    }

    /// bluetoothd dropped the claim by itself (it left the bus, the adapter went off, discovery
    /// ended): nobody holds it any more. Returns the waiters' answers (`reason`), for the bus
    /// session to give once its clients heard the event: a waiter's subscription that the event
    /// ends must not first fail with the claim's reason.
    func forget(_ reason: BleError) -> [@BleLoop () -> Void] {
        generation += 1
        state = .released
        holders.removeAll()
        let waiters = acquireWaiters
        acquireWaiters.removeAll()
        return waiters.map { waiter in { waiter.completion(.failure(reason)) } }
    }

    private func startAcquiring() {
        state = .acquiring
        let asked = generation
        acquire { [weak self] result in
            guard let self, asked == self.generation else { return }
            let waiters = self.acquireWaiters
            self.acquireWaiters.removeAll()
            switch result {
            case .success:
                self.state = .held
                for waiter in waiters { waiter.completion(.success(())) }
                // Everyone left while it was being asked for.
                if self.holders.isEmpty, self.state == .held { self.startReleasing(nil) }
            case .failure(let error):
                self.state = .released
                for waiter in waiters {
                    self.holders.remove(waiter.holder)
                    waiter.completion(.failure(error))
                }
            }
        }
    }

    private func startReleasing(_ completion: Completion?) {
        state = .releasing
        let asked = generation
        release { [weak self] result in
            completion?(result)
            guard let self, asked == self.generation else { return }
            self.state = .released
            // Someone joined while the release was on its way.
            if !self.acquireWaiters.isEmpty { self.startAcquiring() }
        }
    }
}
