import BleCore
import BleDSL
import Foundation

/// One GATT request being carried out: connect, discover the service and characteristic, read,
/// write or run the operation command through BleKit's command engine, disconnect; on failure
/// again with a new connection until the attempts (`ttl`) are used up, each under a deadline.
@BleLoop
final class GattAction: @preconcurrency PeripheralDelegate {
    /// What came of it: the value read (or the parsed response), or why it failed.
    enum Outcome {
        case read(Data)
        case written
        case operation(Data)
        case failed(String)
    }

    let request: GattRequest
    private let central: CentralManager
    private let peripheral: Peripheral
    private let deadline: Duration
    private var attempt = 0
    private var timer: LoopTimer?
    private var engine: CommandEngine?
    private var completion: ((Outcome) -> Void)?
    private var phase = "connect"
    /// The characteristic an operation command is written to, while notifications are being enabled.
    private var pendingWrite: Characteristic?

    init(request: GattRequest, central: CentralManager, peripheral: Peripheral, deadline: Duration, completion: @escaping (Outcome) -> Void) {
        self.request = request
        self.central = central
        self.peripheral = peripheral
        self.deadline = deadline
        self.completion = completion
    }

    var address: String { peripheral.address }

    /// Where an operation command's response arrives; the request was checked at the door
    /// (`OperationCommandSpec.validated(at:)`), so a spec that does not parse never gets here.
    private var notifyUUID: BluetoothUUID? {
        guard case .operation(let spec) = request.kind else { return nil }
        return BluetoothUUID(spec.notify)
    }

    func start() {
        attempt += 1
        phase = "connect"
        timer?.cancel()
        timer = LoopTimer.scheduled(after: deadline) { [weak self] in self?.retryOrFail("timed out during \(self?.phase ?? "")") }
        peripheral.multiDelegate.addDelegate(self)
        if peripheral.state == .connected {
            connected()
        } else {
            central.connect(peripheral)
        }
    }

    // MARK: Central events (routed by the gateway)

    func connected() {
        guard completion != nil else { return }
        phase = "service discovery"
        peripheral.discoverServices([request.serviceUUID])
    }

    func failedToConnect(_ error: Error?) {
        retryOrFail("connect failed: \(error.map { "\($0)" } ?? "unknown")")
    }

    func disconnected(_ error: Error?) {
        guard completion != nil else { return }
        retryOrFail("disconnected during \(phase)")
    }

    // MARK: PeripheralDelegate

    func peripheral(_ peripheral: Peripheral, didDiscoverServices error: Error?) {
        guard completion != nil, phase == "service discovery" else { return }
        if let error { return retryOrFail("service discovery failed: \(error)") }
        let wanted = request.serviceUUID
        guard let service = peripheral.services?.first(where: { $0.uuid == wanted }) else {
            return finish(.failed("service \(request.service) not found"))
        }
        phase = "characteristic discovery"
        var characteristics = [request.characteristicUUID]
        if let notify = notifyUUID { characteristics.append(notify) }
        peripheral.discoverCharacteristics(characteristics, for: service)
    }

    func peripheral(_ peripheral: Peripheral, didDiscoverCharacteristicsFor service: Service, error: Error?) {
        guard completion != nil, phase == "characteristic discovery" else { return }
        if let error { return retryOrFail("characteristic discovery failed: \(error)") }
        let wanted = request.characteristicUUID
        guard let characteristic = service.characteristics?.first(where: { $0.uuid == wanted }) else {
            return finish(.failed("characteristic \(request.characteristic) not found"))
        }
        switch request.kind {
        case .read:
            phase = "read"
            peripheral.readValue(for: characteristic)
        case .write(let bytes):
            phase = "write"
            let type: CharacteristicWriteType = characteristic.properties.contains(.write) ? .withResponse : .withoutResponse
            peripheral.writeValue(bytes, for: characteristic, type: type)
            if type == .withoutResponse { finish(.written) }
        case .operation(let spec):
            guard let notifyUUID, let notify = service.characteristics?.first(where: { $0.uuid == notifyUUID }) else {
                return finish(.failed("characteristic \(spec.notify) not found"))
            }
            // The response comes as notifications: the command is written once they are on.
            phase = "subscribe"
            pendingWrite = characteristic
            peripheral.setNotifyValue(true, for: notify)
        }
    }

    func peripheral(_ peripheral: Peripheral, didUpdateNotificationStateFor characteristic: Characteristic, error: Error?) {
        guard completion != nil, phase == "subscribe", case .operation(let spec) = request.kind,
              characteristic.uuid == notifyUUID, let write = pendingWrite else { return }
        if let error { return retryOrFail("enabling notifications failed: \(error)") }
        phase = "operation \(spec.name)"
        let engine = CommandEngine(listeningTo: peripheral, write: write, read: characteristic)
        self.engine = engine
        engine.execute(SpecOperationCommand(spec: spec)) { [weak self] result in
            // The engine completes on the loop.
            BleLoop.assumeIsolated {
                guard let self else { return }
                switch result {
                case .success(let packets): self.finish(.operation(packets.reduce(Data(), +)))
                case .failure(let error): self.retryOrFail("operation \(spec.name) failed: \(error)")
                }
            }
        }
    }

    func peripheral(_ peripheral: Peripheral, didUpdateValueFor characteristic: Characteristic, error: Error?) {
        guard completion != nil, phase == "read", characteristic.uuid == request.characteristicUUID else { return }
        if let error { return retryOrFail("read failed: \(error)") }
        finish(.read(characteristic.value ?? Data()))
    }

    func peripheral(_ peripheral: Peripheral, didWriteValueFor characteristic: Characteristic, error: Error?) {
        guard completion != nil, phase == "write", characteristic.uuid == request.characteristicUUID else { return }
        if let error { return retryOrFail("write failed: \(error)") }
        finish(.written)
    }

    // MARK: End

    private func retryOrFail(_ reason: String) {
        guard completion != nil else { return }
        if attempt < request.attempts {
            GatewayLog.info("gateway: \(request.address) \(reason); attempt \(attempt + 1) of \(request.attempts)")
            engine?.cancelAll()
            engine = nil
            central.cancelPeripheralConnection(peripheral)
            timer?.cancel()
            // A short pause lets bluetoothd finish the disconnection before the next connect.
            timer = LoopTimer.scheduled(after: .milliseconds(200)) { [weak self] in self?.start() }
        } else {
            finish(.failed(reason))
        }
    }

    private func finish(_ outcome: Outcome) {
        guard let completion else { return }
        self.completion = nil
        timer?.cancel()
        timer = nil
        engine = nil
        peripheral.multiDelegate.removeDelegate(self)
        central.cancelPeripheralConnection(peripheral)
        completion(outcome)
    }
}
