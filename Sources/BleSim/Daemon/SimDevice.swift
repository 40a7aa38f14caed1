import BleDBus
import BlueZVocabulary
import Foundation

/// `org.bluez.Device1` at `/org/bluez/hciN/dev_…`: one adapter's view of one peripheral, with
/// the connection state machine and the cached GATT objects below it.
@BleLoop
public final class SimDevice {
    /// The link, as one explicit state.
    enum LinkState {
        case disconnected
        /// A Connect is under way; `call` waits for its reply (nil for Pair-initiated links).
        case connecting(call: IncomingCall?, attempt: Int)
        case connected(SimLink)
        /// Disconnect was called: ServicesResolved already false, reply pending.
        case disconnecting(SimLink)
    }

    /// The address (the identity address once pairing resolved it).
    public private(set) var address: String
    /// The address the peer advertises and is reached at in the air.
    let airAddress: String
    /// The object path.
    public let path: ObjectPath
    unowned let adapter: SimAdapter
    private(set) var state: LinkState = .disconnected
    private(set) var lastSeen: ContinuousClock.Instant
    private var addressType: String
    private var name: String?
    /// Set from the peer's PnP ID once its services are resolved, as bluetoothd does.
    private var modalias: String?
    private var alias: String?
    private var rssi: Int16?
    private var txPower: Int16?
    private var manufacturerData: [UInt16: Data] = [:]
    private var serviceData: [String: Data] = [:]
    private var advertisedUUIDs: [String] = []
    /// The advertised GAP appearance (Device1 `Appearance`, and `Icon` from it).
    private var appearance: UInt16?
    private var paired = false
    private var bonded = false
    private var trusted = false
    private var blocked = false
    private var servicesResolved = false
    /// Incoming connections (we are the peripheral for an app's central) start connected.
    private let incoming: Bool
    private var attemptCounter = 0
    private var pairing: IncomingCall?
    /// The SMP exchange of `pairing`, once the link is up.
    private var smp: SimPairing?
    /// The GATT objects, kept across disconnects (Cache=always).
    private(set) var gatt: RemoteGattTree?

    init(adapter: SimAdapter, report: AdvertisingReport, now: ContinuousClock.Instant) {
        self.adapter = adapter
        address = report.address
        airAddress = report.address
        path = SimDevice.path(adapter: adapter, address: report.address)
        addressType = report.addressType
        lastSeen = now
        incoming = false
        name = report.name
        rssi = report.rssi
        txPower = report.txPower
        manufacturerData = report.manufacturerData
        serviceData = report.serviceData
        advertisedUUIDs = report.serviceUUIDs
        appearance = report.appearance
    }

    init(adapter: SimAdapter, incomingFrom address: String) {
        self.adapter = adapter
        self.address = address
        airAddress = address
        path = SimDevice.path(adapter: adapter, address: address)
        addressType = "public"
        lastSeen = ContinuousClock.now
        incoming = true
    }

    /// Addresses were validated when the peripheral or scenario was made; should one still be
    /// invalid, `ObjectPath(built:)` reports it instead of trapping.
    private static func path(adapter: SimAdapter, address: String) -> ObjectPath {
        BlueZ.Paths.device(adapter: adapter.path, address: address)
            ?? ObjectPath(built: adapter.path.rawValue + "/" + SimAddress.pathElement(address))
    }

    private var simulator: Simulator { adapter.simulator }
    private var objects: ObjectRegistry? { adapter.objects }

    var isConnectedOrConnecting: Bool {
        if case .disconnected = state { return false }
        return true
    }

    var isConnected: Bool {
        if case .connected = state { return true }
        return false
    }

    var link: SimLink? {
        switch state {
        case .connected(let link): return link
        default: return nil
        }
    }

    /// Unpaired, untrusted and idle: bluetoothd forgets it TemporaryTimeout after it was last heard.
    var isTemporary: Bool {
        !paired && !bonded && !trusted && !connectedBefore && !isConnectedOrConnecting && !incomingConnected && pairing == nil
    }

    /// Device1.Connect makes a device permanent in bluetoothd (`btd_device_set_temporary(dev,
    /// false)`): once connected it is stored and TemporaryTimeout no longer removes it.
    private var connectedBefore = false

    /// What the device's `UUIDs` property holds: resolved services once known, else advertised.
    private var uuids: [String] {
        var all = advertisedUUIDs
        // GAP is in the peer's database (and in UUIDs) although bluetoothd never exports it.
        if let gatt { for uuid in [GattLayout.gapServiceUUID] + gatt.serviceUUIDs where !all.contains(uuid) { all.append(uuid) } }
        return all.sorted()
    }

    /// bluetoothd shows the address with dashes when a device has no name.
    private var currentAlias: String { alias ?? name ?? address.replacingOccurrences(of: ":", with: "-") }

    // MARK: Export

    func export() {
        objects?.register(path, interfaces: [deviceInterface()])
    }

    func unexport() {
        gatt?.unexport()
        gatt = nil
        objects?.unregister(path)
        forget()
    }

    func forget() {
        if case .connected(let link) = state { link.markDown() }
        if case .disconnecting(let link) = state { link.markDown() }
        state = .disconnected
    }

    func changed(_ names: [String], invalidated: [String] = []) {
        objects?.emitPropertiesChanged(path: path, interface: BlueZ.Device1.interface, names: names, invalidated: invalidated)
    }

    private func deviceInterface() -> ExportedInterface {
        ExportedInterface(BlueZ.Device1.interface, methods: [
            ExportedMethod(BlueZ.Device1.Method.disconnect) { [weak self] call in self?.disconnect(call) },
            ExportedMethod(BlueZ.Device1.Method.connect) { [weak self] call in self?.connect(call) },
            ExportedMethod(BlueZ.Device1.Method.connectProfile, in: [ArgumentDescription("UUID", .string)]) { call in
                // LE devices have no SDP records; bluetoothd reports its BR/EDR failure.
                BlueZError.failed(call, BlueZ.ErrorMessage.bredrSDPSearch)
            },
            ExportedMethod(BlueZ.Device1.Method.disconnectProfile, in: [ArgumentDescription("UUID", .string)]) { call in
                BlueZError.notSupported(call)
            },
            ExportedMethod(BlueZ.Device1.Method.pair) { [weak self] call in self?.pair(call) },
            ExportedMethod(BlueZ.Device1.Method.cancelPairing) { [weak self] call in self?.cancelPairing(call) },
        ], properties: [
            ExportedProperty(BlueZ.Device1.address) { [weak self] in self.map { .string($0.address) } },
            ExportedProperty(BlueZ.Device1.addressType) { [weak self] in self.map { .string($0.addressType) } },
            ExportedProperty(BlueZ.Device1.name) { [weak self] in self?.name.map { .string($0) } },
            ExportedProperty(BlueZ.Device1.alias, access: .readwrite, get: { [weak self] in self.map { .string($0.currentAlias) } },
                             set: { [weak self] value, call in
                                 guard let self, case .string(let text) = value else { return }
                                 let before = self.currentAlias
                                 self.alias = text.isEmpty ? nil : text
                                 if before != self.currentAlias { self.changed([BlueZ.Device1.alias.name]) }
                                 call.reply()
                             }),
            ExportedProperty(BlueZ.Device1.deviceClass) { nil },
            ExportedProperty(BlueZ.Device1.appearance) { [weak self] in self?.appearance.map { .uint16($0) } },
            ExportedProperty(BlueZ.Device1.icon) { [weak self] in self?.appearance.flatMap(SimDevice.icon(forAppearance:)).map { .string($0) } },
            ExportedProperty(BlueZ.Device1.paired) { [weak self] in self.map { .boolean($0.paired) } },
            ExportedProperty(BlueZ.Device1.bonded) { [weak self] in self.map { .boolean($0.bonded) } },
            flag(BlueZ.Device1.trusted, get: { $0.trusted }, set: { $0.trusted = $1 }),
            flag(BlueZ.Device1.blocked, get: { $0.blocked }, set: { device, value in
                device.blocked = value
                if value, device.isConnectedOrConnecting { device.linkLost(reason: "blocked") }
            }),
            ExportedProperty(BlueZ.Device1.legacyPairing) { .boolean(false) },
            ExportedProperty(BlueZ.Device1.rssi) { [weak self] in self?.rssi.map { .int16($0) } },
            ExportedProperty(BlueZ.Device1.connected) { [weak self] in self.map { .boolean($0.connectedProperty) } },
            ExportedProperty(BlueZ.Device1.uuids) { [weak self] in
                .array(element: .string, (self?.uuids ?? []).map { .string($0) })
            },
            ExportedProperty(BlueZ.Device1.modalias) { [weak self] in self?.modalias.map { .string($0) } },
            ExportedProperty(BlueZ.Device1.adapter) { [weak self] in self.map { .objectPath($0.adapter.path) } },
            ExportedProperty(BlueZ.Device1.manufacturerData) { [weak self] in
                guard let self, !self.manufacturerData.isEmpty else { return nil }
                return BlueZShapes.manufacturerDataValue(self.manufacturerData)
            },
            ExportedProperty(BlueZ.Device1.serviceData) { [weak self] in
                guard let self, !self.serviceData.isEmpty else { return nil }
                return BlueZShapes.serviceDataValue(self.serviceData)
            },
            ExportedProperty(BlueZ.Device1.txPower) { [weak self] in self?.txPower.map { .int16($0) } },
            ExportedProperty(BlueZ.Device1.servicesResolved) { [weak self] in self.map { .boolean($0.servicesResolved) } },
            ExportedProperty(BlueZ.Device1.wakeAllowed, access: .readwrite, get: { nil }, set: { _, call in
                BlueZError.notSupported(call)
            }),
        ])
    }

    /// For the device object of a central connected to an app's peripheral on this adapter.
    private var incomingConnected = false

    /// The central on the other end connected or went away.
    func incomingLinkChanged(up: Bool) {
        guard incomingConnected != up else { return }
        incomingConnected = up
        lastSeen = ContinuousClock.now
        changed([BlueZ.Device1.connected.name])
    }

    private var connectedProperty: Bool {
        if incomingConnected { return true }
        switch state {
        case .connected, .disconnecting: return true
        case .connecting, .disconnected: return briefLink
        }
    }

    private func flag(_ key: PropertyKey<Bool>, get: @escaping @BleLoop @Sendable (SimDevice) -> Bool,
                      set: @escaping @BleLoop @Sendable (SimDevice, Bool) -> Void) -> ExportedProperty {
        ExportedProperty(key, access: .readwrite, get: { [weak self] in self.map { .boolean(get($0)) } },
                         set: { [weak self] value, call in
                             guard let self, case .boolean(let on) = value else { return }
                             let before = get(self)
                             set(self, on)
                             // Device1: the signal comes before the reply (the opposite of Adapter1).
                             if before != on { self.changed([key.name]) }
                             call.reply()
                         })
    }

    // MARK: Advertising

    func advertisingReport(_ report: AdvertisingReport, duplicateData: Bool, rssiThreshold: Int16,
                           now: ContinuousClock.Instant) {
        lastSeen = now
        var names: [String] = []
        // bluetoothd 5.66 (src/adapter.c, btd_device_device_set_name) takes every complete
        // advertised name that differs, also after a GAP name replaced it; Alias follows unless
        // one was set. BleSim's advertised names are complete ones.
        if let reported = report.name, reported != name {
            name = reported
            names.append(BlueZ.Device1.name.name)
            if alias == nil { names.append(BlueZ.Device1.alias.name) }
        }
        if rssi == nil || abs(Int(report.rssi) - Int(rssi ?? 0)) >= Int(rssiThreshold) {
            rssi = report.rssi
            names.append(BlueZ.Device1.rssi.name)
        }
        if report.txPower != txPower {
            txPower = report.txPower
            names.append(BlueZ.Device1.txPower.name)
        }
        if duplicateData || report.manufacturerData != manufacturerData {
            if !report.manufacturerData.isEmpty || !manufacturerData.isEmpty { names.append(BlueZ.Device1.manufacturerData.name) }
            manufacturerData = report.manufacturerData
        }
        if duplicateData || report.serviceData != serviceData {
            if !report.serviceData.isEmpty || !serviceData.isEmpty { names.append(BlueZ.Device1.serviceData.name) }
            serviceData = report.serviceData
        }
        if let reported = report.appearance, reported != appearance {
            appearance = reported
            names.append(contentsOf: [BlueZ.Device1.appearance.name, BlueZ.Device1.icon.name])
        }
        if report.serviceUUIDs != advertisedUUIDs {
            advertisedUUIDs = report.serviceUUIDs
            names.append(BlueZ.Device1.uuids.name)
        }
        if !names.isEmpty { changed(names) }
    }

    func discoveryStopped() {
        guard rssi != nil else { return }
        rssi = nil
        changed([], invalidated: [BlueZ.Device1.rssi.name])
    }

    func clientLeft(_ client: String) {
        gatt?.clientLeft(client)
    }

    // MARK: Connect

    private func connect(_ call: IncomingCall) {
        guard adapter.powered else { return BlueZError.notReady(call) }
        switch state {
        case .connected:
            return call.reply()
        case .connecting, .disconnecting:
            return BlueZError.inProgress(call)
        case .disconnected:
            break
        }
        if let failure = simulator.faults.connectFailure(address: address) {
            switch failure {
            case .inProgress:
                return BlueZError.inProgress(call)
            case .neverAnswer:
                attemptCounter += 1
                state = .connecting(call: call, attempt: attemptCounter)
                return
            case .timeout:
                return waitThenAbort(call)
            case .abortByLocal:
                attemptCounter += 1
                let attempt = attemptCounter
                state = .connecting(call: call, attempt: attempt)
                simulator.clock.after(simulator.timing.intervals(simulator.timing.connectIntervals)) { [weak self] in
                    guard let self, case .connecting(_, attempt) = self.state else { return }
                    // The link came up for a moment before the controller aborted it: the
                    // error reply comes between Connected=true and Connected=false.
                    self.briefLink = true
                    self.changed([BlueZ.Device1.connected.name])
                    BlueZError.failed(call, BlueZ.ErrorMessage.leConnectionAbortByLocal)
                    self.briefLink = false
                    self.state = .disconnected
                    self.changed([BlueZ.Device1.connected.name])
                }
                return
            }
        }
        guard let peripheral = simulator.airPeripheral(airAddress), peripheral.isAdvertising else {
            return waitThenAbort(call)
        }
        attemptCounter += 1
        let attempt = attemptCounter
        state = .connecting(call: call, attempt: attempt)
        simulator.clock.after(simulator.timing.intervals(simulator.timing.connectIntervals)) { [weak self] in
            guard let self, case .connecting(let pending, attempt) = self.state else { return }
            self.linkEstablished(to: peripheral, reply: pending)
        }
    }

    /// True only while announcing a link that the controller aborts at once.
    private var briefLink = false

    /// A device that does not answer: bluetoothd gives up after ~40 s with no property change.
    private func waitThenAbort(_ call: IncomingCall) {
        attemptCounter += 1
        let attempt = attemptCounter
        state = .connecting(call: call, attempt: attempt)
        simulator.clock.after(simulator.timing.scaled(milliseconds: simulator.timing.connectTimeoutMilliseconds)) { [weak self] in
            guard let self, case .connecting(_, attempt) = self.state else { return }
            self.state = .disconnected
            BlueZError.failed(call, BlueZ.ErrorMessage.leConnectionAbortByLocal)
        }
    }

    /// Link up: `Connected=true`, the Connect reply, then GATT discovery.
    private func linkEstablished(to peripheral: AirPeripheral, reply call: IncomingCall?,
                                 then afterResolve: (@BleLoop () -> Void)? = nil) {
        let link = SimLink(adapter: adapter, device: self, server: peripheral.server)
        state = .connected(link)
        connectedBefore = true
        if !simulator.faults.missesConnectedAnnouncement(address: address) { changed([BlueZ.Device1.connected.name]) }
        call?.reply()
        peripheral.server.linkUp(link)
        resolveServices(link: link, afterResolve: afterResolve)
    }

    /// The PnP ID (0x2A50 in Device Information 0x180A) as bluetoothd spells it in `Modalias`:
    /// vendor ID source 1 is `bluetooth:`, 2 is `usb:`; vendor, product and version follow.
    static func modalias(from layout: GattLayout) -> String? {
        let informationService = "0000180a-0000-1000-8000-00805f9b34fb"
        let pnpID = "00002a50-0000-1000-8000-00805f9b34fb"
        guard let value = layout.services.first(where: { $0.uuid == informationService })?
                .characteristics.first(where: { $0.uuid == pnpID })?.initialValue, value.count == 7 else { return nil }
        func word(_ at: Int) -> UInt16 { UInt16(value[at]) | UInt16(value[at + 1]) << 8 }
        return BlueZ.PnPID.modalias(source: value[0], vendor: word(1), product: word(3), version: word(5))
    }

    private func resolveServices(link: SimLink, announceBeforeObjects: Bool = false, afterResolve: (@BleLoop () -> Void)? = nil) {
        let layout = link.server.layout
        let serviceCount = Double(layout.services.count)
        simulator.clock.after(simulator.timing.intervals(simulator.timing.discoveryIntervalsPerService * serviceCount)) { [weak self] in
            guard let self, self.link === link else { return }
            let cached = self.gatt?.layout == layout
            if !cached {
                self.gatt?.unexport()
                let tree = RemoteGattTree(device: self, layout: layout)
                self.gatt = tree
                self.servicesResolved = true
                if announceBeforeObjects {
                    // Pair on a fresh device: bluetoothd announces ServicesResolved before the
                    // objects exist (seen in the observed log).
                    self.changed([BlueZ.Device1.bonded.name, BlueZ.Device1.paired.name, BlueZ.Device1.uuids.name, BlueZ.Device1.servicesResolved.name])
                    tree.export()
                } else if let delay = self.simulator.faults.servicesResolvedEarly(address: self.address) {
                    // bluez #1489: ServicesResolved=true while the objects are not exported yet.
                    self.changed([BlueZ.Device1.uuids.name, BlueZ.Device1.servicesResolved.name])
                    self.simulator.clock.after(.clampedMilliseconds(delay)) { [weak self] in
                        guard let self, self.gatt === tree else { return }
                        tree.export()
                        if let link = self.link { tree.linkUp(link) }
                    }
                    return
                } else {
                    tree.export()
                    self.changed([BlueZ.Device1.uuids.name, BlueZ.Device1.servicesResolved.name])
                }
            } else {
                // Cached objects: sessions re-arm (and a session started while disconnected
                // turns `Notifying` true) before `ServicesResolved`, as in the VM.
                self.gatt?.linkUp(link)
                self.servicesResolved = true
                if announceBeforeObjects {
                    self.changed([BlueZ.Device1.bonded.name, BlueZ.Device1.paired.name, BlueZ.Device1.servicesResolved.name])
                } else {
                    self.changed([BlueZ.Device1.servicesResolved.name])
                }
            }
            if !cached { self.gatt?.linkUp(link) }
            if let gapName = link.server.gapName, gapName != self.name {
                self.name = gapName
                self.changed([BlueZ.Device1.name.name, BlueZ.Device1.alias.name])
            }
            // bluetoothd reads the Device Information PnP ID after the GAP name and sets
            // Modalias from it (observed: `{Modalias}` last after Connect).
            if let modalias = Self.modalias(from: layout), modalias != self.modalias {
                self.modalias = modalias
                self.changed([BlueZ.Device1.modalias.name])
            }
            afterResolve?()
        }
    }

    // MARK: Disconnect

    private func disconnect(_ call: IncomingCall) {
        switch state {
        case .disconnected:
            call.reply()
        case .connecting(let pending, _):
            state = .disconnected
            if let pending { BlueZError.failed(pending, BlueZ.ErrorMessage.bredrConnectionCanceled) }
            failPairing()
            call.reply()
        case .disconnecting:
            BlueZError.inProgress(call)
        case .connected(let link):
            startDisconnect(link) { [weak self] in
                call.reply()
                self?.finishDisconnect()
            }
        }
    }

    /// `ServicesResolved=false` at once; `completion` runs when the link is down (after ~2 s).
    private func startDisconnect(_ link: SimLink, completion: @escaping @BleLoop () -> Void) {
        state = .disconnecting(link)
        servicesResolved = false
        changed([BlueZ.Device1.servicesResolved.name])
        simulator.clock.after(simulator.timing.scaled(milliseconds: simulator.timing.disconnectMilliseconds)) {
            completion()
        }
    }

    func disconnectForRemoval(completion: @escaping @BleLoop () -> Void) {
        switch state {
        case .connected(let link):
            startDisconnect(link, completion: completion)
        case .connecting(let pending, _):
            state = .disconnected
            if let pending { BlueZError.failed(pending, BlueZ.ErrorMessage.bredrConnectionCanceled) }
            completion()
        default:
            completion()
        }
    }

    /// The reply went out: now `Connected=false`.
    func finishDisconnect() {
        let link: SimLink?
        switch state {
        case .disconnecting(let current), .connected(let current): link = current
        default: link = nil
        }
        state = .disconnected
        link?.markDown()
        gatt?.linkDown()
        changed([BlueZ.Device1.connected.name])
        lastSeen = ContinuousClock.now
    }

    /// The peer removed services from its database while connected (Service Changed): their
    /// objects go, then `{UUIDs}` without their UUIDs, advertised ones included, as bluetoothd
    /// 5.66 did when a bridged app left the bus. The link and `ServicesResolved` stay.
    func peerServicesRemoved(handles: Set<UInt16>) {
        guard let gatt else { return }
        let removed = Set(gatt.layout.services.filter { handles.contains($0.handle) }.map(\.uuid))
        guard !removed.isEmpty else { return }
        gatt.removeServices(handles: handles)
        let remaining = Set(gatt.serviceUUIDs)
        advertisedUUIDs.removeAll { removed.contains($0) && !remaining.contains($0) }
        changed([BlueZ.Device1.uuids.name])
    }

    /// The peer added services to its database while connected (Service Changed): their
    /// objects are exported in handle order, then `{UUIDs}` with their UUIDs.
    func peerServicesAdded(layout: GattLayout, link: SimLink) {
        guard let gatt else { return }
        guard gatt.addServices(from: layout, link: link) else { return }
        changed([BlueZ.Device1.uuids.name])
    }

    /// The link dropped without anyone asking (range, peripheral reset, fault).
    func linkLost(reason: String) {
        switch state {
        case .connected(let link), .disconnecting(let link):
            state = .disconnected
            servicesResolved = false
            link.markDown()
            gatt?.linkDown()
            changed([BlueZ.Device1.servicesResolved.name, BlueZ.Device1.connected.name])
            failPairing()
            lastSeen = ContinuousClock.now
        case .connecting(let pending, _):
            state = .disconnected
            if let pending { BlueZError.failed(pending, BlueZ.ErrorMessage.leConnectionAbortByRemote) }
        case .disconnected:
            break
        }
        DBusLog.debug("BleSim: \(address) link lost: \(reason)")
    }

    func adapterPoweredOff() {
        linkLost(reason: "adapter powered off")
    }

    // MARK: Notifications

    func deliverNotification(handle: UInt16, value: Data, link: SimLink) {
        guard self.link === link, link.countPacket() else { return }
        gatt?.notification(handle: handle, value: value, link: link)
    }

    // MARK: Pairing

    private func pair(_ call: IncomingCall) {
        guard adapter.powered else { return BlueZError.notReady(call) }
        guard pairing == nil else { return BlueZError.inProgress(call) }
        if bonded {
            // 5.66 retries an LE-bonded device over BR/EDR, fails, and drops the link, while
            // D-Bus keeps saying Paired/Bonded.
            BlueZError.authenticationFailed(call)
            if isConnected { linkLost(reason: "BR/EDR pairing attempt on an LE bond") }
            return
        }
        pairing = call
        if case .connected(let link) = state {
            return runPairing(call, link: link, madeLink: false)
        }
        guard let peripheral = simulator.airPeripheral(airAddress), peripheral.isAdvertising else {
            pairing = nil
            return waitThenAbort(call)
        }
        // Pair connects first: Connected=true, then SMP.
        attemptCounter += 1
        let attempt = attemptCounter
        state = .connecting(call: nil, attempt: attempt)
        simulator.clock.after(simulator.timing.intervals(simulator.timing.connectIntervals)) { [weak self] in
            guard let self, case .connecting(nil, attempt) = self.state, self.pairing === call else { return }
            let link = SimLink(adapter: self.adapter, device: self, server: peripheral.server)
            self.state = .connected(link)
            self.changed([BlueZ.Device1.connected.name])
            peripheral.server.linkUp(link)
            self.runPairing(call, link: link, madeLink: true)
        }
    }

    /// SMP over `link`, with the agents of both sides (see `SimPairing`).
    private func runPairing(_ call: IncomingCall, link: SimLink, madeLink: Bool) {
        guard simulator.agents.hasAgents else {
            // Without an agent even Just Works fails ("No agent available for request").
            guard madeLink else {
                pairing = nil
                return BlueZError.authenticationFailed(call)
            }
            simulator.clock.after(simulator.timing.scaled(milliseconds: 900)) { [weak self] in
                guard let self, self.pairing === call else { return }
                self.pairing = nil
                BlueZError.authenticationFailed(call)
                self.linkLost(reason: "pairing failed")
            }
            return
        }
        let peer = simulator.airPeripheral(airAddress)
        let responder: SimPairing.Responder
        if let host = peer?.hostAdapter {
            responder = .app(device: host.deviceForIncoming(address: adapter.address), agent: simulator.agents.defaultAgent)
        } else {
            responder = .virtual(simulator.peerPairing[airAddress] ?? PeerPairing())
        }
        if case .app(let device, _) = responder, device.bonded {
            // The peer still holds its bond (JustWorksRepairing=never): observed ~40 ms.
            pairing = nil
            BlueZError.authenticationFailed(call)
            return
        }
        let session = SimPairing(simulator: simulator, initiatorPath: path,
                                 initiatorAgent: simulator.agents.agent(forCaller: call.sender), responder: responder)
        smp = session
        session.start { [weak self] outcome in
            guard let self, self.smp === session else { return }
            self.smp = nil
            guard self.pairing === call else { return }
            switch outcome {
            case .success:
                self.pairingSucceeded(call, link: link, madeLink: madeLink, responder: responder)
            case .failed, .timedOut:
                self.pairing = nil
                if outcome == .timedOut { BlueZError.authenticationTimeout(call) } else { BlueZError.authenticationFailed(call) }
                // A link Pair made for itself goes with the failed pairing, as observed.
                if madeLink { self.linkLost(reason: "pairing failed") }
            case .canceled:
                self.pairing = nil
                BlueZError.authenticationCanceled(call)
            }
        }
    }

    private func pairingSucceeded(_ call: IncomingCall, link: SimLink, madeLink: Bool, responder: SimPairing.Responder) {
        simulator.clock.after(simulator.timing.intervals(4)) { [weak self] in
            guard let self, self.pairing === call else { return }
            guard self.link === link else {
                self.pairing = nil
                return BlueZError.authenticationFailed(call)
            }
            let finish: @BleLoop () -> Void = { [weak self] in
                guard let self, self.pairing === call else { return }
                self.pairing = nil
                call.reply()
                // The responder's side bonds too, after the initiator's reply (observed).
                if case .app(let device, _) = responder { device.markBonded() }
                if case .virtual(let peer) = responder, let identity = peer.identityAddress { self.identityResolved(identity) }
            }
            self.paired = true
            self.bonded = true
            if madeLink {
                self.resolveServices(link: link, announceBeforeObjects: true, afterResolve: finish)
            } else {
                self.changed([BlueZ.Device1.bonded.name, BlueZ.Device1.paired.name])
                finish()
            }
        }
    }

    /// The peer's identity address became known (its IRK came with the keys): bluetoothd 5.66
    /// keeps the object and its path, and announces the new `Address` and `AddressType`.
    private func identityResolved(_ identity: String) {
        guard identity != address, adapter.devices[identity] == nil else { return }
        adapter.rekey(self, from: address, to: identity)
        address = identity
        addressType = "public"
        changed([BlueZ.Device1.address.name, BlueZ.Device1.addressType.name])
    }

    private func cancelPairing(_ call: IncomingCall) {
        guard let pending = pairing else { return BlueZError.doesNotExist(call) }
        pairing = nil
        smp?.end(.canceled)
        smp = nil
        BlueZError.authenticationCanceled(pending)
        call.reply()
    }

    private func failPairing() {
        guard let pending = pairing else { return }
        pairing = nil
        smp?.end(.canceled)
        smp = nil
        BlueZError.authenticationFailed(pending)
    }

    /// Marks the device bonded without an SMP exchange (a device restored from storage).
    public func markBonded() {
        paired = true
        bonded = true
        changed([BlueZ.Device1.bonded.name, BlueZ.Device1.paired.name])
    }
}

extension SimDevice {
    /// The icon bluetoothd names for a GAP appearance (its category, and for HID the
    /// sub-category); nil where it names none. 0x03C1 → `input-keyboard` was seen in the VM
    /// (`advertising.fieldsAndFit`); the rest follows BlueZ's published appearance-to-icon table.
    static func icon(forAppearance appearance: UInt16) -> String? {
        switch appearance >> 6 {
        case 0x00: return "unknown"
        case 0x01: return "phone"
        case 0x02: return "computer"
        case 0x05: return "video-display"
        case 0x0a: return "multimedia-player"
        case 0x0b: return "scanner"
        case 0x0f:
            switch appearance & 0x3f {
            case 0x01: return "input-keyboard"
            case 0x02: return "input-mouse"
            case 0x03, 0x04: return "input-gaming"
            case 0x05: return "input-tablet"
            case 0x08: return "scanner"
            default: return nil
            }
        default: return nil
        }
    }
}
