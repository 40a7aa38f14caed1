import BleCore
import Foundation

/// A BleKit host as a BTHome v2 sensor: its readings advertised as service data 0xFCD2 through
/// the peripheral role, non-connectable, so BleKit gateways, Home Assistant's BTHome
/// integration and Theengs read them unchanged. `update` re-advertises with a new packet id.
@BleLoop
public final class BTHomeSensor {
    /// The name in the scan response.
    public let name: String
    /// The readings advertised now.
    public private(set) var readings: [(key: String, value: Double)]
    /// The advertisement's registration (its state says whether bluetoothd took it).
    public private(set) var registration: AdvertisementRegistration?
    private let manager: PeripheralManager
    private var packet: UInt8 = 0

    /// A sensor advertising `readings` on the adapter of `options` once started.
    public init(name: String, readings: [(key: String, value: Double)], options: PeripheralManagerOptions) throws(BTHomeEncoder.EncodingError) {
        self.name = name
        _ = try BTHomeEncoder.encode(readings)
        self.readings = readings
        manager = PeripheralManager(delegate: nil, queue: nil, options: options)
    }

    /// Starts advertising.
    public func start() {
        advertise()
    }

    /// Advertises new readings.
    public func update(_ readings: [(key: String, value: Double)]) throws(BTHomeEncoder.EncodingError) {
        _ = try BTHomeEncoder.encode(readings)
        self.readings = readings
        packet &+= 1
        advertise()
    }

    /// Stops advertising and closes the manager.
    public func stop() {
        registration?.cancel()
        registration = nil
        manager.close()
    }

    /// The service data advertised now.
    public var frame: Data {
        (try? BTHomeEncoder.encode([("packet", Double(packet))] + readings.filter { $0.key != "packet" })) ?? Data([0x40])
    }

    private func advertise() {
        registration?.cancel()
        var advertisement = Advertisement(localName: name)
        advertisement.kind = .broadcast
        advertisement.serviceData = [BluetoothUUID(BTHomeDecoder.serviceUUID): frame]
        registration = manager.startAdvertising(advertisement)
    }
}
