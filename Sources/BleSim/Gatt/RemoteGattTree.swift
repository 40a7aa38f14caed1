import BleDBus
import BlueZVocabulary
import Foundation

/// The GATT client objects bluetoothd exports under a device (`serviceXXXX/charYYYY/descZZZZ`),
/// with its per-characteristic rules: one write at a time, coalesced reads, notify sessions
/// per client, `AcquireWrite`/`AcquireNotify` sockets.
@BleLoop
final class RemoteGattTree {
    private(set) var layout: GattLayout
    private unowned let device: SimDevice
    private var services: [ObjectPath] = []
    private var characteristics: [RemoteCharacteristic] = []
    private var descriptors: [RemoteDescriptor] = []
    private var byValueHandle: [UInt16: RemoteCharacteristic] = [:]

    init(device: SimDevice, layout: GattLayout) {
        self.device = device
        self.layout = layout
        for service in layout.services {
            let servicePath = BlueZ.Paths.service(device: device.path, handle: service.handle)
            services.append(servicePath)
            for characteristic in service.characteristics {
                let remote = RemoteCharacteristic(tree: self, device: device, servicePath: servicePath, layout: characteristic)
                characteristics.append(remote)
                byValueHandle[characteristic.valueHandle] = remote
                for descriptor in characteristic.descriptors {
                    descriptors.append(RemoteDescriptor(device: device, characteristic: remote, layout: descriptor))
                }
            }
        }
    }

    var serviceUUIDs: [String] { layout.serviceUUIDs }

    private var objects: ObjectRegistry? { device.adapter.objects }

    /// Registers every object, in handle order (InterfacesAdded per object, as bluetoothd).
    func export() {
        guard let objects else { return }
        for (index, service) in layout.services.enumerated() {
            let path = services[index]
            objects.register(path, interfaces: [serviceInterface(service)])
            for characteristic in characteristics where characteristic.servicePath == path {
                characteristic.export()
                for descriptor in descriptors where descriptor.characteristic === characteristic { descriptor.export() }
            }
        }
    }

    private func serviceInterface(_ service: GattLayout.Service) -> ExportedInterface {
        ExportedInterface(BlueZ.GattService1.interface, properties: [
            ExportedProperty(BlueZ.GattService1.uuid) { .string(service.uuid) },
            ExportedProperty(BlueZ.GattService1.device) { [weak device] in device.map { .objectPath($0.path) } },
            ExportedProperty(BlueZ.GattService1.primary) { .boolean(service.primary) },
            ExportedProperty(BlueZ.GattService1.includes) { [weak self] in
                self.map { tree in .array(element: .objectPath, tree.includedPaths(of: service.handle).map { .objectPath($0) }) }
            },
        ])
    }

    /// The objects of the services `handle`'s service includes, in its declarations' order:
    /// bluetoothd lists only those it exports (`update_included_service` looks each up among
    /// its service objects). An include never outlives its service here (a bridged app's
    /// services come and go together), so `on_service_removed`'s PropertiesChanged has no case.
    func includedPaths(of handle: UInt16) -> [ObjectPath] {
        guard let service = layout.services.first(where: { $0.handle == handle }) else { return [] }
        let present = Set(layout.services.map(\.handle))
        return service.includes.filter(present.contains).map { BlueZ.Paths.service(device: device.path, handle: $0) }
    }

    /// Removes every object depth-first in handle order, descriptors before their
    /// characteristic and characteristics before their service, as bluetoothd's
    /// `unregister_service` walks its queues.
    func unexport() {
        guard let objects else { return }
        for characteristic in characteristics { characteristic.releaseAcquired(announce: false) }
        for (index, _) in layout.services.enumerated() {
            let path = services[index]
            for characteristic in characteristics where characteristic.servicePath == path {
                for descriptor in descriptors where descriptor.characteristic === characteristic {
                    objects.unregister(descriptor.path)
                }
                objects.unregister(characteristic.path)
            }
            objects.unregister(path)
        }
    }

    /// The peer's database lost these services while the link stayed up (a bridged app left the
    /// bus; bluetoothd's server then indicates Service Changed): their objects go in
    /// `unexport`'s order, and the other services stay as they are.
    func removeServices(handles: Set<UInt16>) {
        guard let objects else { return }
        var kept: [GattLayout.Service] = []
        var keptPaths: [ObjectPath] = []
        for (index, service) in layout.services.enumerated() {
            let path = services[index]
            guard handles.contains(service.handle) else {
                kept.append(service)
                keptPaths.append(path)
                continue
            }
            for characteristic in characteristics where characteristic.servicePath == path {
                characteristic.releaseAcquired(announce: false)
                for descriptor in descriptors where descriptor.characteristic === characteristic {
                    objects.unregister(descriptor.path)
                }
                objects.unregister(characteristic.path)
                byValueHandle[characteristic.layout.valueHandle] = nil
            }
            objects.unregister(path)
        }
        let removedPaths = Set(services).subtracting(keptPaths)
        // Descriptors first: they hold their characteristic unowned.
        descriptors.removeAll { removedPaths.contains($0.characteristic.servicePath) }
        characteristics.removeAll { removedPaths.contains($0.servicePath) }
        services = keptPaths
        layout.services = kept
    }

    /// The peer's database gained the services of `newLayout` whose handles are not here yet:
    /// their objects are made and exported, in handle order. True when any were added.
    func addServices(from newLayout: GattLayout, link: SimLink) -> Bool {
        let present = Set(layout.services.map(\.handle))
        let added = newLayout.services.filter { !present.contains($0.handle) }
        guard !added.isEmpty, let objects else { return false }
        for service in added {
            let servicePath = BlueZ.Paths.service(device: device.path, handle: service.handle)
            services.append(servicePath)
            layout.services.append(service)
            objects.register(servicePath, interfaces: [serviceInterface(service)])
            for characteristic in service.characteristics {
                let remote = RemoteCharacteristic(tree: self, device: device, servicePath: servicePath, layout: characteristic)
                characteristics.append(remote)
                byValueHandle[characteristic.valueHandle] = remote
                remote.export()
                for descriptor in characteristic.descriptors {
                    let remoteDescriptor = RemoteDescriptor(device: device, characteristic: remote, layout: descriptor)
                    descriptors.append(remoteDescriptor)
                    remoteDescriptor.export()
                }
                remote.linkUp(link)
            }
        }
        return true
    }

    func linkUp(_ link: SimLink) {
        for characteristic in characteristics { characteristic.linkUp(link) }
    }

    func linkDown() {
        for characteristic in characteristics { characteristic.linkDown() }
        for descriptor in descriptors { descriptor.linkDown() }
    }

    func clientLeft(_ client: String) {
        for characteristic in characteristics { characteristic.clientLeft(client) }
    }

    func notification(handle: UInt16, value: Data, link: SimLink) {
        byValueHandle[handle]?.notification(value, link: link)
    }
}

/// Runs an ATT request over the link after its cost, counting the packet for link-loss faults.
@BleLoop
func overLink(_ device: SimDevice, cost: Duration, _ body: @escaping @BleLoop (SimLink) -> Void,
                      failed: @escaping @BleLoop () -> Void) {
    guard let link = device.link else { return failed() }
    device.adapter.simulator.clock.after(cost) {
        guard device.link === link, link.countPacket() else { return failed() }
        body(link)
    }
}
