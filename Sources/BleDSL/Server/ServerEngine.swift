import BleRuntime
import Foundation

/// The loop side of a `PeripheralServer`.
@BleLoop
final class ServerEngine {
    private let manager: PeripheralManager
    private var service: MutableService?
    private var commandCharacteristic: MutableCharacteristic?
    private var responseCharacteristic: MutableCharacteristic?
    private var readables: [(MutableCharacteristic, (Central) -> Data)] = []
    private var commands: [PeripheralServerCommand] = []
    private var advertisement: Advertisement?
    private var registration: AdvertisementRegistration?
    private var onWrite: ((Data, Central) -> Void)?
    private var onSubscription: ((Central, Bool) -> Void)?
    private var report: ((PeripheralServer.Event) -> Void)?
    /// A request still gathering packets, per central: which command, and the buffer so far.
    private var pending: [ObjectIdentifier: (command: Int, buffer: [Data])] = [:]
    /// Packets waiting for room in the outgoing queue, with what to call after each batch.
    private var outgoing: [(packet: Data, completion: (() -> Void)?)] = []

    nonisolated init(manager: PeripheralManager) {
        self.manager = manager
    }

    func execute(_ items: [PeripheralServerItem], report: @escaping (PeripheralServer.Event) -> Void) {
        self.report = report
        var characteristics: [MutableCharacteristic] = []
        var serviceUUID: BluetoothUUID?
        var primary = true
        for item in items {
            switch item {
            case .service(let uuid, let isPrimary):
                serviceUUID = uuid
                primary = isPrimary
            case .commandCharacteristic(let uuid, let properties, let permissions):
                let characteristic = MutableCharacteristic(type: uuid, properties: properties, value: nil, permissions: permissions)
                commandCharacteristic = characteristic
                characteristics.append(characteristic)
            case .responseCharacteristic(let uuid, let properties, let permissions):
                let characteristic = MutableCharacteristic(type: uuid, properties: properties, value: nil, permissions: permissions)
                responseCharacteristic = characteristic
                characteristics.append(characteristic)
            case .staticValue(let uuid, let value):
                characteristics.append(MutableCharacteristic(type: uuid, properties: [.read], value: value, permissions: [.readable]))
            case .readable(let uuid, let value):
                let characteristic = MutableCharacteristic(type: uuid, properties: [.read], value: nil, permissions: [.readable])
                readables.append((characteristic, value))
                characteristics.append(characteristic)
            case .commands(let list):
                commands += list
            case .advertise(let value):
                advertisement = value
            case .onWrite(let handler):
                onWrite = handler
            case .onSubscription(let handler):
                onSubscription = handler
            }
        }
        guard let serviceUUID else {
            return report(.failed(PeripheralCommandError.characteristicsNotReady))
        }
        let service = MutableService(type: serviceUUID, primary: primary)
        service.characteristics = characteristics
        self.service = service
        manager.add(service)
    }

    func added(_ added: Service, error: Error?) {
        guard added === service else { return }
        if let error {
            report?(.failed(error))
            return
        }
        report?(.serving)
        if let advertisement, registration == nil { registration = manager.startAdvertising(advertisement) }
    }

    func advertisingStarted(error: Error?) {
        guard registration != nil else { return }
        if let error { report?(.failed(error)) } else { report?(.advertising) }
    }

    func stop() {
        registration?.cancel()
        registration = nil
        manager.removeAllServices()
        outgoing.removeAll()
        pending.removeAll()
    }

    func forget(_ central: Central) { pending.removeValue(forKey: ObjectIdentifier(central)) }

    func subscription(_ central: Central, _ characteristic: Characteristic, on: Bool) {
        guard characteristic === responseCharacteristic else { return }
        onSubscription?(central, on)
    }

    func read(_ request: ATTRequest) {
        guard let entry = readables.first(where: { $0.0 === request.characteristic }) else { return }
        let value = entry.1(request.central)
        guard request.offset <= value.count else {
            manager.respond(to: request, withResult: .invalidOffset)
            return
        }
        request.value = Data(value.dropFirst(request.offset))
        manager.respond(to: request, withResult: .success)
    }

    func write(_ requests: [ATTRequest]) {
        guard let first = requests.first, first.characteristic === commandCharacteristic else { return }
        var claimedAll = true
        for request in requests {
            if !handle(request.value ?? Data(), from: request.central) { claimedAll = false }
        }
        if first.needsResponse {
            manager.respond(to: first, withResult: claimedAll || onWrite != nil ? .success : .requestNotSupported)
        }
    }

    /// Runs one written packet through the commands; false when none claimed it (and no `onWrite` took it).
    private func handle(_ packet: Data, from central: Central) -> Bool {
        let key = ObjectIdentifier(central)
        var chosen: (index: Int, filtered: Data, buffer: [Data])?
        if let current = pending[key], current.command < commands.count, let filtered = commands[current.command].filterRequest(packet) {
            chosen = (current.command, filtered, current.buffer)
        } else {
            for (index, command) in commands.enumerated() {
                if let filtered = command.filterRequest(packet) {
                    chosen = (index, filtered, [])
                    break
                }
            }
        }
        guard let chosen else {
            onWrite?(packet, central)
            return onWrite != nil
        }
        let command = commands[chosen.index]
        switch command.checkRequest(chosen.buffer, data: chosen.filtered) {
        case .goon(let buffer):
            pending[key] = (chosen.index, buffer)
        case .failure:
            pending.removeValue(forKey: key)
        case .success(let request), .longConnection(let request):
            pending.removeValue(forKey: key)
            if let response = command.response(to: request, from: central) {
                send(response, length: command.getLengthProtocol(), central: central, completion: nil)
            }
        }
        return true
    }

    /// Splits `data` and queues the packets; the response characteristic carries them.
    func send(_ data: Data, length: PeripheralCommandLengthProtocol, central: Central?, completion: (() -> Void)?) {
        guard responseCharacteristic != nil else {
            report?(.failed(PeripheralCommandError.characteristicsNotReady))
            return
        }
        if let mtuLength = length as? MTUPeripheralCommandLength {
            let subscribers = responseCharacteristic?.subscribedCentrals?.filter(\.isIdentified) ?? []
            let sizes = (central.map { [$0] } ?? []) + subscribers
            mtuLength.maximum = sizes.map(\.maximumUpdateValueLength).min() ?? 20
        }
        length.reset()
        var packets: [Data] = []
        var start = data.startIndex
        while start < data.endIndex {
            let size = length.currentLength()
            guard size > 0 else {
                report?(.failed(PeripheralCommandError.invalidChunkLength(size)))
                return
            }
            let end = min(data.endIndex, start + size)
            packets.append(Data(data[start..<end]))
            start = end
        }
        if packets.isEmpty { packets = [Data()] }
        for (index, packet) in packets.enumerated() {
            outgoing.append((packet, index == packets.count - 1 ? completion : nil))
        }
        pump()
    }

    /// Sends while bluetoothd takes more; the rest waits for `isReady`.
    func pump() {
        guard let responseCharacteristic else { return }
        while let next = outgoing.first {
            guard manager.updateValue(next.packet, for: responseCharacteristic, onSubscribedCentrals: nil) else { return }
            outgoing.removeFirst()
            next.completion?()
        }
    }
}
