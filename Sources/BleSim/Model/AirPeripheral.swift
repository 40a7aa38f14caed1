import BleDBus
import Foundation

/// What an adapter hears from one advertiser in one advertising report.
public struct AdvertisingReport: Sendable, Equatable {
    /// The advertiser's address.
    public var address: String
    /// `public` or `random`.
    public var addressType: String
    /// The local name, if advertised.
    public var name: String?
    /// RSSI of this report.
    public var rssi: Int16
    /// TX power, if advertised.
    public var txPower: Int16?
    /// Manufacturer data by company id.
    public var manufacturerData: [UInt16: Data]
    /// Service data by full UUID.
    public var serviceData: [String: Data]
    /// Advertised service UUIDs, full form.
    public var serviceUUIDs: [String]
    /// Whether a connection may be made.
    public var connectable: Bool
    /// The GAP appearance, if advertised (Device1 shows it, and an icon derived from it).
    public var appearance: UInt16? = nil
    /// Solicited service UUIDs, full form: in the air, but bluetoothd 5.66 shows them nowhere on D-Bus.
    public var solicitUUIDs: [String] = []
    /// Other AD structures (`Data`): in the air; bluetoothd 5.66 did not show type 0x26 on D-Bus.
    public var advertisingData: [UInt8: Data] = [:]
}

/// Anything in the simulated air: advertises, and serves GATT over links.
@BleLoop
protocol AirPeripheral: AnyObject {
    /// The address centrals see.
    var address: String { get }
    /// Whether it is advertising right now.
    var isAdvertising: Bool { get }
    /// Milliseconds between reports.
    var advertisingInterval: Double { get }
    /// The simulated adapter it lives on, if it is an app's peripheral (never heard by itself).
    var hostAdapter: SimAdapter? { get }
    /// Produces the next report (RSSI jitter applied).
    func nextReport() -> AdvertisingReport
    /// The GATT server a new link talks to.
    var server: SimGattServer { get }
}

/// The peripheral end of GATT over a simulated link.
@BleLoop
protocol SimGattServer: AnyObject {
    /// The MTU a link negotiates.
    var mtu: UInt16 { get }
    /// The database a link discovers now.
    var layout: GattLayout { get }
    /// The GAP name a central reads after connecting, if it differs from the advertised one.
    var gapName: String? { get }
    /// A central connected.
    func linkUp(_ link: SimLink)
    /// The link went down (either side).
    func linkDown(_ link: SimLink)
    /// An ATT read.
    func read(handle: UInt16, offset: Int, link: SimLink, reply: @escaping @BleLoop (Result<Data, AttError>) -> Void)
    /// An ATT write; `withResponse` false for Write Command (no reply expected, `reply` still runs).
    func write(handle: UInt16, value: Data, offset: Int, withResponse: Bool, link: SimLink,
               reply: @escaping @BleLoop (Result<Void, AttError>) -> Void)
    /// A central changed a CCCD.
    func subscriptionChanged(handle: UInt16, enabled: Bool, link: SimLink)
    /// A central confirmed an indication.
    func confirmed(handle: UInt16, link: SimLink)
}

/// One simulated LE link between a central (a device object on an adapter) and a peripheral.
@BleLoop
public final class SimLink {
    private static var nextID = 1

    /// A number for traces.
    public let id: Int
    /// The central's adapter.
    let adapter: SimAdapter
    /// The device object on that adapter.
    weak var device: SimDevice?
    /// The peripheral side; a bridged app registering after its predecessor left takes over
    /// that app's links (its services are added to the same database, as in bluetoothd).
    var server: SimGattServer
    /// The negotiated MTU.
    let mtu: UInt16
    /// Value handles with notifications or indications enabled.
    var subscriptions: Set<UInt16> = []
    /// Packets carried so far (for "link loss after N packets").
    var packets = 0
    /// False once down.
    private(set) var isUp = true
    private var outgoing: [(handle: UInt16, value: Data)] = []
    private var sending = false

    init(adapter: SimAdapter, device: SimDevice, server: SimGattServer) {
        id = SimLink.nextID
        SimLink.nextID += 1
        self.adapter = adapter
        self.device = device
        self.server = server
        // ATT's minimum: a spec set from Swift with less would make every MTU − 3 payload negative.
        self.mtu = max(23, server.mtu)
    }

    /// The central's address (the adapter's).
    public var centralAddress: String { adapter.address }

    /// Queues a notification or indication; packets leave one per connection interval.
    func sendNotification(handle: UInt16, value: Data) {
        guard isUp else { return }
        outgoing.append((handle, value))
        pump()
    }

    private func pump() {
        guard !sending, isUp, !outgoing.isEmpty else { return }
        sending = true
        let (handle, value) = outgoing.removeFirst()
        adapter.simulator.clock.after(adapter.simulator.timing.intervals(1)) { [weak self] in
            guard let self else { return }
            self.sending = false
            guard self.isUp else { return }
            self.device?.deliverNotification(handle: handle, value: value, link: self)
            self.pump()
        }
    }

    /// Counts a packet and drops the link when a fault says so; true while the link lives.
    func countPacket() -> Bool {
        packets += 1
        if let device, adapter.simulator.faults.linkLossDue(address: device.address, packets: packets) {
            device.linkLost(reason: "fault: link loss after \(packets) packets")
            return false
        }
        return isUp
    }

    func markDown() {
        guard isUp else { return }
        isUp = false
        outgoing.removeAll()
        server.linkDown(self)
    }
}
