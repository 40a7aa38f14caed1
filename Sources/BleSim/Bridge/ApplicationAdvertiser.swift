import BleDBus
import Foundation

/// The adapter's own advertiser in the air.
@BleLoop
final class ApplicationAdvertiser: AirPeripheral {
    unowned let adapter: SimAdapter
    var advertisement: RegisteredAdvertisement
    var application: ApplicationPeripheral?
    private let emptyServer: ApplicationPeripheral

    init(adapter: SimAdapter, advertisement: RegisteredAdvertisement, application: ApplicationPeripheral?) {
        self.adapter = adapter
        self.advertisement = advertisement
        self.application = application
        emptyServer = ApplicationPeripheral(emptyOn: adapter)
    }

    var address: String { adapter.address }
    var isAdvertising: Bool { adapter.powered }
    var advertisingInterval: Double { 100 }
    var hostAdapter: SimAdapter? { adapter }
    var server: SimGattServer { application ?? emptyServer }

    func nextReport() -> AdvertisingReport {
        AdvertisingReport(address: adapter.address, addressType: "public", name: advertisement.localName, rssi: -40,
                          txPower: advertisement.includesTxPower ? 0 : nil, manufacturerData: advertisement.manufacturerData,
                          serviceData: advertisement.serviceData, serviceUUIDs: advertisement.serviceUUIDs,
                          connectable: advertisement.type == "peripheral", appearance: advertisement.appearance,
                          solicitUUIDs: advertisement.solicitUUIDs, advertisingData: advertisement.data)
    }
}
