import BleDBus

/// `GattManager1` and `LEAdvertisingManager1` of one adapter: apps that register a GATT
/// application and an advertisement become a peripheral in the simulated air.
@BleLoop
final class PeripheralRoleBridge {
    weak var adapter: SimAdapter?
    private var advertisementCount = 0

    init() {}

    var applicationServiceUUIDs: [String] { [] }

    func gattManagerInterface() -> ExportedInterface {
        let options = ArgumentDescription("options", .dictionary(key: .string, value: .variant))
        return ExportedInterface("org.bluez.GattManager1", methods: [
            ExportedMethod("RegisterApplication", in: [ArgumentDescription("application", .objectPath), options]) { call in
                BlueZError.notSupported(call)
            },
            ExportedMethod("UnregisterApplication", in: [ArgumentDescription("application", .objectPath)]) { call in
                BlueZError.doesNotExist(call)
            },
        ])
    }

    func advertisingManagerInterface() -> ExportedInterface {
        let options = ArgumentDescription("options", .dictionary(key: .string, value: .variant))
        return ExportedInterface("org.bluez.LEAdvertisingManager1", methods: [
            ExportedMethod("RegisterAdvertisement", in: [ArgumentDescription("advertisement", .objectPath), options]) { call in
                BlueZError.notSupported(call)
            },
            ExportedMethod("UnregisterAdvertisement", in: [ArgumentDescription("service", .objectPath)]) { call in
                BlueZError.doesNotExist(call)
            },
        ], properties: [
            ExportedProperty("ActiveInstances", .byte) { [weak self] in .byte(UInt8(self?.advertisementCount ?? 0)) },
            // bluetoothd counts the free slots here.
            ExportedProperty("SupportedInstances", .byte) { [weak self] in .byte(UInt8(5 - (self?.advertisementCount ?? 0))) },
            ExportedProperty("SupportedIncludes", .array(.string)) {
                .array(element: .string, [.string("tx-power"), .string("appearance"), .string("local-name")])
            },
            ExportedProperty("SupportedSecondaryChannels", .array(.string)) { nil },
        ])
    }

    func clientLeft(_ client: String) {}
    func daemonStopping() {}
    func forget() {}
}
