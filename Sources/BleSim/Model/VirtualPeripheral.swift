import BleDBus
import BlueZVocabulary
import Foundation

/// A running virtual peripheral: advertises its spec and serves its GATT database.
///
/// Tests drive it directly: `notify(_:value:)`, `setValue(_:for:)`, `stopAdvertising()`,
/// `dropLinks()`, and observe `writes`. Closures (`onWrite`, `onRead`) add behaviour in Swift;
/// `spec.rules` add it from JSON.
@BleLoop
public final class VirtualPeripheral: AirPeripheral, SimGattServer {
    /// A write the peripheral received.
    public struct ReceivedWrite: Sendable, Equatable {
        /// Full UUID of the characteristic or descriptor.
        public var uuid: String
        /// The bytes written (the whole value after a long write at an offset).
        public var value: Data
        /// Whether it was a Write Request (true) or a Write Command.
        public var withResponse: Bool
    }

    /// What a read closure decides.
    public enum ReadOutcome: Sendable {
        /// Answer with these bytes.
        case value(Data)
        /// Answer with an ATT error.
        case error(AttError)
        /// Use the stored value.
        case stored
    }

    /// The spec it was made from.
    public private(set) var spec: PeripheralSpec
    /// Every write received, in order.
    public private(set) var writes: [ReceivedWrite] = []
    /// Called for every write, after it was stored.
    public var onWrite: (@BleLoop (ReceivedWrite, VirtualPeripheral) -> Void)?
    /// Called for every read of a characteristic; may replace the answer.
    public var onRead: (@BleLoop (String, VirtualPeripheral) -> ReadOutcome)?
    /// Called when a central connects or disconnects.
    public var onConnectionChange: (@BleLoop (Bool, VirtualPeripheral) -> Void)?

    unowned let simulator: Simulator
    private(set) var layout: GattLayout
    /// Its Device Information PnP ID is bluetoothd's own (0x1D6B:0x0246), so its server has
    /// bluetoothd's quirks (the 510-byte single write).
    var identifiesAsBlueZ: Bool {
        SimDevice.modalias(from: layout).map(BlueZ.PnPID.isBlueZ(modalias:)) ?? false
    }
    private var values: [UInt16: Data] = [:]
    private var links: [SimLink] = []
    private var connectionCount = 0
    private var random: SimRandom

    init(spec: PeripheralSpec, simulator: Simulator) {
        self.spec = spec
        self.simulator = simulator
        self.layout = GattLayout(specs: spec.services)
        self.random = SimRandom(seed: UInt64(truncatingIfNeeded: spec.address.hashValue))
        resetValues()
    }

    private func resetValues() {
        values.removeAll()
        for service in layout.services {
            for characteristic in service.characteristics {
                values[characteristic.valueHandle] = Data(characteristic.initialValue)
                for descriptor in characteristic.descriptors {
                    values[descriptor.handle] = Data(descriptor.initialValue)
                }
            }
        }
    }

    // MARK: AirPeripheral

    /// The address.
    public var address: String { spec.address }
    /// Whether it advertises.
    public var isAdvertising: Bool { spec.advertising }
    var advertisingInterval: Double { spec.advertisingIntervalMilliseconds }
    var hostAdapter: SimAdapter? { nil }
    var server: SimGattServer { self }
    var mtu: UInt16 { spec.mtu }
    var gapName: String? { spec.gapName }

    func nextReport() -> AdvertisingReport {
        var rssi = spec.rssi
        if spec.rssiJitter > 0 {
            rssi = rssi &+ Int16(random.next(in: -Int(spec.rssiJitter)...Int(spec.rssiJitter)))
        }
        var serviceData: [String: Data] = [:]
        for (uuid, data) in spec.serviceData { serviceData[SimUUID.full(uuid) ?? uuid.lowercased()] = data }
        var manufacturerData = spec.manufacturerData
        if spec.timestampsReports, let company = manufacturerData.keys.min() {
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            let microseconds = UInt64(max(0, now.tv_sec)) &* 1_000_000 &+ UInt64(max(0, now.tv_nsec / 1000))
            manufacturerData[company, default: Data()] += withUnsafeBytes(of: microseconds.bigEndian) { Data($0) }
        }
        return AdvertisingReport(address: spec.address, addressType: spec.addressType.rawValue, name: spec.name,
                                 rssi: rssi, txPower: spec.txPower, manufacturerData: manufacturerData,
                                 serviceData: serviceData, serviceUUIDs: spec.serviceUUIDs.map { SimUUID.full($0) ?? $0.lowercased() },
                                 connectable: spec.connectable)
    }

    // MARK: Control

    /// Stops advertising: adapters stop hearing it (and expire it after TemporaryTimeout).
    public func stopAdvertising() { spec.advertising = false }
    /// Starts advertising again.
    public func startAdvertising() { spec.advertising = true }

    /// Changes its spec: advertised data (the next report carries it) or the MTU (the next link
    /// negotiates it).
    public func updateAdvertisement(_ change: (inout PeripheralSpec) -> Void) {
        let address = spec.address
        change(&spec)
        spec.address = address
    }

    /// The stored value of the first characteristic with `uuid`.
    public func value(of uuid: String) -> Data? {
        layout.characteristic(uuid: uuid).flatMap { values[$0.valueHandle] }
    }

    /// Stores `value` for the characteristic `uuid` without notifying.
    public func setValue(_ value: Data, for uuid: String) {
        guard let characteristic = layout.characteristic(uuid: uuid) else { return }
        values[characteristic.valueHandle] = value
    }

    /// Sends `value` as one notification (or indication) to every subscribed central; values
    /// longer than MTU−3 are cut, as ATT would.
    public func notify(_ uuid: String, value: Data) {
        guard let characteristic = layout.characteristic(uuid: uuid) else { return }
        values[characteristic.valueHandle] = value
        for link in links where link.subscriptions.contains(characteristic.valueHandle) {
            let payload = value.prefix(Int(link.mtu) - 3)
            for copy in simulator.faults.notificationCopies(address: spec.address, value: Data(payload)) {
                link.sendNotification(handle: characteristic.valueHandle, value: copy)
            }
        }
    }

    /// Drops every link, as if the peripheral went out of range or reset.
    public func dropLinks() {
        for link in links { link.device?.linkLost(reason: "peripheral dropped the link") }
    }

    /// The number of centrals connected now.
    public var connectedCentrals: Int { links.count }

    /// The number of connected centrals that have notifications (or indications) of the first
    /// characteristic with `uuid` enabled now (its CCCD written on, on their link).
    public func subscribers(of uuid: String) -> Int {
        guard let characteristic = layout.characteristic(uuid: uuid) else { return 0 }
        return links.filter { $0.subscriptions.contains(characteristic.valueHandle) }.count
    }

    /// Makes `servicesAfterReconnect` (if any) the database from the next connection on.
    func applyReconnectServices() {
        guard let next = spec.servicesAfterReconnect else { return }
        spec.services = next
        spec.servicesAfterReconnect = nil
        layout = GattLayout(specs: next)
        resetValues()
    }

    // MARK: SimGattServer

    func linkUp(_ link: SimLink) {
        connectionCount += 1
        if connectionCount > 1 { applyReconnectServices() }
        links.append(link)
        onConnectionChange?(true, self)
        run(rules: spec.rules.filter { $0.trigger == .connect }, written: nil, link: link)
        startPeriodicRules()
    }

    func linkDown(_ link: SimLink) {
        links.removeAll { $0 === link }
        onConnectionChange?(false, self)
        if links.isEmpty {
            for timer in periodicTimers { timer.cancel() }
            periodicTimers.removeAll()
        }
    }

    private var periodicTimers: [LoopTimer] = []

    /// Periodic rules run while any central is connected; they notify every subscriber.
    private func startPeriodicRules() {
        guard periodicTimers.isEmpty else { return }
        for rule in spec.rules {
            guard case .periodic(let milliseconds) = rule.trigger else { continue }
            let interval = Duration.clampedMilliseconds(max(7.5, milliseconds))
            periodicTimers.append(LoopTimer.scheduled(after: interval, repeating: interval) { [weak self] in
                guard let self, let link = self.links.first else { return }
                for response in rule.responses { self.perform(response, written: nil, link: link) }
            })
        }
    }

    func read(handle: UInt16, offset: Int, link: SimLink, reply: @escaping @BleLoop (Result<Data, AttError>) -> Void) {
        let characteristic = layout.characteristic(handle: handle)
        let isValue = characteristic?.valueHandle == handle
        if let characteristic, isValue {
            if let error = simulator.faults.attError(address: spec.address, uuid: characteristic.uuid, operation: .read) {
                return reply(.failure(error))
            }
            guard characteristic.isReadable else {
                return reply(.failure(.readNotPermitted))
            }
            let rules = spec.rules.filter { $0.trigger == .read(characteristic: characteristic.uuid) }
            if let rule = rules.first {
                let latency = Duration.clampedMilliseconds(rule.latencyMilliseconds)
                simulator.clock.after(latency) { [weak self] in
                    guard let self else { return }
                    var answered = false
                    for response in rule.responses {
                        switch response {
                        case .reply(let value) where !answered:
                            answered = true
                            reply(self.slice(value, offset: offset))
                        case .attError(let code) where !answered:
                            answered = true
                            reply(.failure(AttError(code: code)))
                        default:
                            self.perform(response, written: nil, link: link)
                        }
                    }
                    if !answered { reply(self.slice(self.values[handle] ?? Data(), offset: offset)) }
                }
                return
            }
            switch onRead?(characteristic.uuid, self) ?? .stored {
            case .value(let value): return reply(slice(value, offset: offset))
            case .error(let error): return reply(.failure(error))
            case .stored: break
            }
        }
        reply(slice(values[handle] ?? Data(), offset: offset))
    }

    private func slice(_ value: Data, offset: Int) -> Result<Data, AttError> {
        guard offset <= value.count else { return .failure(.invalidOffset) }
        return .success(Data(value.dropFirst(offset)))
    }

    func write(handle: UInt16, value: Data, offset: Int, withResponse: Bool, link: SimLink,
               reply: @escaping @BleLoop (Result<Void, AttError>) -> Void) {
        let characteristic = layout.characteristic(handle: handle)
        let uuid: String
        if let characteristic, characteristic.valueHandle == handle {
            uuid = characteristic.uuid
            if let error = simulator.faults.attError(address: spec.address, uuid: uuid, operation: .write) {
                return reply(.failure(error))
            }
            guard characteristic.isWritable else {
                // A Write Command to a read-only attribute is dropped without an answer.
                return reply(withResponse ? .failure(.writeNotPermitted) : .success(()))
            }
        } else if let descriptor = layout.services.lazy.flatMap(\.characteristics).flatMap(\.descriptors).first(where: { $0.handle == handle }) {
            uuid = descriptor.uuid
        } else {
            return reply(.failure(.other(0x01)))
        }
        let current = values[handle] ?? Data()
        guard offset <= current.count else { return reply(.failure(.invalidOffset)) }
        let rules = spec.rules.filter {
            if case .write(let target, let prefix) = $0.trigger, target == uuid {
                return prefix.map { (offset == 0 ? value : current).starts(with: $0) } ?? true
            }
            return false
        }
        // A rule's attError refuses the write as documented: nothing is stored, a Write Request
        // gets the error, a Write Command (which has no answer) is dropped.
        if let code = rules.first?.responses.lazy.compactMap({ response -> UInt8? in
            if case .attError(let code) = response { return code } else { return nil }
        }).first {
            return reply(withResponse ? .failure(AttError(code: code)) : .success(()))
        }
        // The bluez 5.66 server counts the 2-byte handle in a single write's length check, so
        // it refuses 511 and 512 bytes; a prepared (long) write may reach 512. Only a peripheral
        // whose PnP ID says it is BlueZ behaves so; any other takes the spec's 512.
        let singleWriteLimit = identifiesAsBlueZ ? 510 : 512
        guard offset + value.count <= (offset == 0 ? singleWriteLimit : 512) else {
            return reply(withResponse ? .failure(.invalidAttributeValueLength) : .success(()))
        }
        // A long write lands in place: the bytes after it stay, as in bluez's attribute db.
        var merged = offset == 0 ? value : current
        if offset > 0 {
            if merged.count < offset + value.count { merged.append(Data(count: offset + value.count - merged.count)) }
            merged.replaceSubrange(offset..<(offset + value.count), with: value)
        }
        values[handle] = merged
        let received = ReceivedWrite(uuid: uuid, value: merged, withResponse: withResponse)
        writes.append(received)
        reply(.success(()))
        onWrite?(received, self)
        let matching = spec.rules.filter {
            if case .write(let target, let prefix) = $0.trigger, target == uuid {
                return prefix.map { merged.starts(with: $0) } ?? true
            }
            return false
        }
        if let rule = matching.first { run(rules: [rule], written: merged, link: link) }
    }

    func subscriptionChanged(handle: UInt16, enabled: Bool, link: SimLink) {
        if enabled { link.subscriptions.insert(handle) } else { link.subscriptions.remove(handle) }
        guard enabled, let characteristic = layout.characteristic(handle: handle) else { return }
        run(rules: spec.rules.filter { $0.trigger == .subscribe(characteristic: characteristic.uuid) }, written: nil, link: link)
    }

    func confirmed(handle: UInt16, link: SimLink) {}

    private func run(rules: [BehaviourRule], written: Data?, link: SimLink) {
        for rule in rules {
            simulator.clock.after(.clampedMilliseconds(rule.latencyMilliseconds)) { [weak self] in
                guard let self else { return }
                for response in rule.responses { self.perform(response, written: written, link: link) }
            }
        }
    }

    private func perform(_ response: BehaviourRule.Response, written: Data?, link: SimLink) {
        switch response {
        case .notify(let uuid, let value, let packets):
            let size = Int(link.mtu) - 3
            let parts = packets.map { count in
                let step = max(1, (value.count + count - 1) / count)
                return stride(from: 0, to: value.count, by: step).map { value.subdata(in: $0..<min(value.count, $0 + step)) }
            } ?? stride(from: 0, to: value.count, by: size).map { value.subdata(in: $0..<min(value.count, $0 + size)) }
            for part in parts.isEmpty ? [Data()] : parts { notify(uuid, value: part) }
        case .echo(let uuid):
            notify(uuid, value: written ?? Data())
        case .setValue(let uuid, let value):
            setValue(value, for: uuid)
        case .reply, .attError:
            break
        case .disconnect:
            link.device?.linkLost(reason: "peripheral rule disconnected")
        }
    }
}

/// A small deterministic generator, so RSSI jitter is repeatable per peripheral.
struct SimRandom {
    private var state: UInt64

    init(seed: UInt64) { state = seed == 0 ? 0x9E37_79B9_7F4A_7C15 : seed }

    mutating func next() -> UInt64 {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return state
    }

    mutating func next(in range: ClosedRange<Int>) -> Int {
        let width = UInt64(range.upperBound - range.lowerBound + 1)
        return range.lowerBound + Int(next() % width)
    }
}
