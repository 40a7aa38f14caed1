import BleDBus
import BlueZVocabulary
import Foundation

/// `org.bluez.GattDescriptor1` on the client side.
@BleLoop
final class RemoteDescriptor {
    let path: ObjectPath
    let layout: GattLayout.Descriptor
    unowned let characteristic: RemoteCharacteristic
    private unowned let device: SimDevice
    private var value = Data()
    private var busy = false

    init(device: SimDevice, characteristic: RemoteCharacteristic, layout: GattLayout.Descriptor) {
        self.device = device
        self.characteristic = characteristic
        self.layout = layout
        path = BlueZ.Paths.descriptor(characteristic: characteristic.path, handle: layout.handle)
    }

    private var simulator: Simulator { device.adapter.simulator }

    func export() {
        let options = ArgumentDescription("options", .dictionary(key: .string, value: .variant))
        device.adapter.objects?.register(path, interfaces: [ExportedInterface(BlueZ.GattDescriptor1.interface, methods: [
            ExportedMethod(BlueZ.GattDescriptor1.Method.readValue, in: [options], out: [ArgumentDescription("value", .array(.byte))]) { [weak self] call in
                self?.read(call)
            },
            ExportedMethod(BlueZ.GattDescriptor1.Method.writeValue, in: [ArgumentDescription("value", .array(.byte)), options]) { [weak self] call in
                self?.write(call)
            },
        ], properties: [
            ExportedProperty(BlueZ.GattDescriptor1.uuid) { [layout] in .string(layout.uuid) },
            ExportedProperty(BlueZ.GattDescriptor1.characteristic) { [weak characteristic] in characteristic.map { .objectPath($0.path) } },
            ExportedProperty(BlueZ.GattDescriptor1.value) { [weak self] in self.map { .bytes($0.value) } },
        ])])
    }

    private func read(_ call: IncomingCall) {
        guard let options = OptionReader(call.arguments.first) else { return BlueZError.invalidArguments(call) }
        let offset: UInt16
        do { offset = try options.get(BlueZ.GattCharacteristic1.Option.offset, UInt16.self) ?? 0 } catch { return BlueZError.invalidArguments(call) }
        guard device.isConnected else { return BlueZError.notConnected(call) }
        overLink(device, cost: simulator.timing.intervals(1), { [weak self] link in
            guard let self else { return }
            link.server.read(handle: self.layout.handle, offset: Int(offset), link: link) { [weak self] result in
                guard let self else { return }
                switch result {
                case .success(let data):
                    self.value = offset == 0 ? data : self.value.prefix(Int(offset)) + data
                    self.device.adapter.objects?.emitPropertiesChanged(path: self.path, interface: BlueZ.GattDescriptor1.interface,
                                                                       names: [BlueZ.GattDescriptor1.value.name])
                    call.reply([.bytes(data)])
                case .failure(let error):
                    BlueZError.att(call, error)
                }
            }
        }, failed: { BlueZError.notConnected(call) })
    }

    private func write(_ call: IncomingCall) {
        guard case .bytes(let data) = call.arguments[0], let options = OptionReader(call.arguments[1]) else {
            return BlueZError.invalidArguments(call)
        }
        let offset: UInt16
        do {
            offset = try options.get(BlueZ.GattCharacteristic1.Option.offset, UInt16.self) ?? 0
            _ = try options.get(BlueZ.GattCharacteristic1.Option.type, String.self)
        } catch {
            return BlueZError.invalidArguments(call)
        }
        // bluetoothd keeps the CCCD to itself: StartNotify/AcquireNotify are the way.
        guard layout.uuid != GattLayout.cccdUUID else { return BlueZError.notPermitted(call, BlueZ.ErrorMessage.writeNotPermitted) }
        guard device.isConnected else { return BlueZError.notConnected(call) }
        guard !busy else { return BlueZError.inProgress(call) }
        busy = true
        overLink(device, cost: simulator.timing.transfer(length: data.count, mtu: device.link?.mtu ?? 23), { [weak self] link in
            guard let self else { return }
            link.server.write(handle: self.layout.handle, value: data, offset: Int(offset), withResponse: true, link: link) {
                [weak self] result in
                self?.busy = false
                switch result {
                case .success: call.reply()
                case .failure(let error): BlueZError.att(call, error)
                }
            }
        }, failed: { [weak self] in
            self?.busy = false
            BlueZError.notConnected(call)
        })
    }

    func linkDown() { busy = false }
}
