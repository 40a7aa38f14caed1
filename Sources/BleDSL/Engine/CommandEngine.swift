import BleRuntime
import Synchronization
import Foundation

/// BleKit's command engine, on the loop: a FIFO of `PeripheralOperationCommand`s, one running
/// at a time, plus streams. It observes its peripheral on the loop (`PeripheralLoopObserver`),
/// so a packet goes from BlueZ's signal or socket to `filterData`/`checkResponse` with no queue
/// hop, and writes go out through BleCore's loop-side API.
///
/// BleDSL, BleAsync and BleGateway drive it directly on the loop (`init(listeningTo:write:read:)`,
/// `execute`, `cancelAll`); FXBlueTooth's `DeviceCharacteristicValue` is its any-thread facade.
@BleLoop
package final class CommandEngine: PeripheralLoopObserver {
    /// A command's outcome: every packet of the response, or why it failed.
    package typealias Completion = (Result<[Data], Error>) -> Void

    enum Event {
        case value(Characteristic, Data?, Error?)
        case written(Characteristic, Error?)
        case descriptorValue(Descriptor, Data?, Error?)
        case readyToSend
    }

    /// What a command does on the link: an exchange (write `cmdData`, judge the packets), or a
    /// GATT read whose reply is the response.
    enum Kind {
        case exchange
        case readValue
        case readDescriptor(Descriptor)
    }

    private final class Command {
        let id: UInt64
        let option: PeripheralOperationCommand
        let completion: Completion?
        weak var peripheral: Peripheral?
        let write: Characteristic
        let read: Characteristic
        var state: CommandState = .queued
        var writeType: CharacteristicWriteType = .withResponse
        /// The response characteristic's notifications were off at the start: nothing is
        /// written until they are on, or the answer could come before the subscription and be lost.
        var awaitingNotifications = false
        let kind: Kind

        init(id: UInt64, option: PeripheralOperationCommand, completion: Completion?,
             peripheral: Peripheral, write: Characteristic, read: Characteristic, kind: Kind = .exchange) {
            self.id = id
            self.kind = kind
            self.option = option
            self.completion = completion
            self.peripheral = peripheral
            self.write = write
            self.read = read
        }
    }

    private nonisolated let ids = Mutex<UInt64>(1)
    /// Completions in order, never from inside `executable` (FXBlueTooth defect 8), even when
    /// `executable` is called on the loop and runs inline.
    private let completions = OrderedCallbacks()
    private var queue: [Command] = []
    private var running: Command?
    private var streams: [Command] = []
    private var cancelledBeforeStart: Set<UInt64> = []
    /// The running command's deadline (the only command that has one).
    private var deadline = CommandDeadline()

    /// The characteristics `execute` uses, when the engine was made for one pair.
    private var bound: (peripheral: Peripheral, write: Characteristic, read: Characteristic)?

    /// An engine whose commands carry their own attributes (the facade's).
    nonisolated init() {}

    /// An engine for commands written to `write` whose responses come from `read`, listening
    /// to `peripheral` from now on (until it is released).
    package init(listeningTo peripheral: Peripheral, write: Characteristic, read: Characteristic) {
        bound = (peripheral, write, read)
        peripheral.addLoopObserver(self)
    }

    /// Queues `option` on the engine's characteristics; `completion` gets every packet of the
    /// response (or the error), on the loop, never from inside this call. Returns the token
    /// that cancels it.
    @discardableResult
    package func execute(_ option: PeripheralOperationCommand, completion: Completion?) -> CommandToken {
        let token = makeToken()
        enqueue(CommandRequest(id: token.id, option: option, completion: completion, peripheral: bound?.peripheral,
                               write: bound?.write, read: bound?.read, missing: nil))
        return token
    }

    /// Ends every queued, running and streaming command with `PeripheralCommandError.cancelled`.
    package func cancelAll() {
        failAll(.cancelled)
    }

    private func report(_ completion: Completion?, _ result: Result<[Data], Error>) {
        guard let completion else { return }
        if completions.runsAtOnce { return completion(result) }
        let box = LoopBound((completion, result))
        completions.run { box.value.0(box.value.1) }
    }

    nonisolated func makeToken() -> CommandToken {
        let id = ids.withLock { value -> UInt64 in
            defer { value += 1 }
            return value
        }
        return CommandToken(id: id, engine: self)
    }

    var pendingCount: Int { queue.count + (running == nil ? 0 : 1) }

    /// `enqueue` as an inline call (see `InlineCall`): for a command issued on the loop thread.
    static func enqueueInline(_ target: (engine: CommandEngine, request: CommandRequest)) {
        InlineCall.run(target.engine.enqueue, with: target.request)
    }

    func enqueue(_ request: CommandRequest) {
        if cancelledBeforeStart.remove(request.id) != nil {
            report(request.completion, .failure(PeripheralCommandError.cancelled))
            return
        }
        guard let peripheral = request.peripheral, let write = request.write, let read = request.read else {
            // Discovery finished without the characteristic: say which one, not "not ready".
            report(request.completion,
                   .failure(request.missing.map(PeripheralCommandError.attributeNotFound) ?? PeripheralCommandError.characteristicsNotReady))
            return
        }
        queue.append(Command(id: request.id, option: request.option, completion: request.completion, peripheral: peripheral,
                             write: write, read: read))
        startNextIfIdle()
    }

    /// Queues a GATT read of `characteristic` (or of `descriptor` on it) in the same FIFO as the
    /// exchanges: its reply is the response.
    func enqueueRead(_ request: ReadRequest) {
        let userCompletion = request.completion
        let completion: Completion = { result in
            switch result {
            case .success(let packets): userCompletion(.success(packets.first ?? Data()))
            case .failure(let error): userCompletion(.failure(error))
            }
        }
        if cancelledBeforeStart.remove(request.id) != nil { return report(completion, .failure(PeripheralCommandError.cancelled)) }
        guard let peripheral = request.peripheral else { return report(completion, .failure(PeripheralCommandError.characteristicsNotReady)) }
        let target: Characteristic
        if let wanted = request.characteristic {
            let all = (peripheral.services ?? []).flatMap { $0.characteristics ?? [] }
            guard let found = all.first(where: { $0.uuid == wanted }) else {
                return report(completion, .failure(PeripheralCommandError.attributeNotFound(.characteristic(wanted, service: nil))))
            }
            target = found
        } else if let fallback = request.fallback {
            target = fallback
        } else {
            return report(completion, .failure(PeripheralCommandError.characteristicsNotReady))
        }
        var kind = Kind.readValue
        if let descriptor = request.descriptor {
            if target.descriptors == nil { peripheral.performDiscoverDescriptors(for: target) }
            guard let found = target.descriptors?.first(where: { $0.uuid == descriptor }) else {
                return report(completion, .failure(PeripheralCommandError.attributeNotFound(.descriptor(descriptor, characteristic: target.uuid))))
            }
            kind = .readDescriptor(found)
        }
        let option = ReadResponse(timeOutInterval: request.timeout)
        queue.append(Command(id: request.id, option: option, completion: completion, peripheral: peripheral, write: target, read: target,
                             kind: kind))
        startNextIfIdle()
    }

    private func startNextIfIdle() {
        while running == nil, !queue.isEmpty {
            let command = queue.removeFirst()
            running = command
            begin(command)
        }
    }

    private func begin(_ command: Command) {
        guard let peripheral = command.peripheral else { return end(command, .failure(PeripheralCommandError.disconnected)) }
        switch command.kind {
        case .exchange:
            break
        case .readValue:
            command.state = .awaitingResponse(buffer: [])
            restartTimer(command)
            return peripheral.performRead(command.read)
        case .readDescriptor(let descriptor):
            command.state = .awaitingResponse(buffer: [])
            restartTimer(command)
            return peripheral.performRead(descriptor)
        }
        let type = command.option.writeType
            ?? (command.write.properties.contains(.writeWithoutResponse) ? .withoutResponse : .withResponse)
        command.writeType = type
        let lengths = command.option.getLengthProtocol()
        lengths.reset()
        let maximum = peripheral.writeLimit(for: type)
        if let mtu = lengths as? MTUPeripheralCommandLength { mtu.maximum = maximum }
        let chunks: [Data]
        switch CommandChunker.chunks(of: command.option.cmdData, lengths: lengths, maximum: maximum) {
        case .success(let cut): chunks = cut
        case .failure(let error): return end(command, .failure(error))
        }
        command.state = .writing(chunks: chunks, next: 0, awaitingAck: false, buffer: [])
        restartTimer(command)
        if !command.read.isNotifyingOnLoop {
            // The response arrives as notifications: turn them on, and write once they are.
            command.awaitingNotifications = true
            peripheral.performSetNotify(true, command.read)
            return
        }
        pump(command)
    }

    /// Writes as many chunks as flow control allows.
    private func pump(_ command: Command) {
        guard !command.awaitingNotifications,
              case .writing(let chunks, var next, let awaitingAck, let buffer) = command.state, !awaitingAck else { return }
        guard let peripheral = command.peripheral else { return end(command, .failure(PeripheralCommandError.disconnected)) }
        while next < chunks.count {
            switch command.writeType {
            case .withResponse, .reliable:
                command.state = .writing(chunks: chunks, next: next + 1, awaitingAck: true, buffer: buffer)
                peripheral.performWrite(chunks[next], command.write, command.writeType)
                return
            case .withoutResponse:
                guard !peripheral.hasWriteBacklog else {
                    command.state = .writing(chunks: chunks, next: next, awaitingAck: false, buffer: buffer)
                    return
                }
                command.state = .writing(chunks: chunks, next: next + 1, awaitingAck: false, buffer: buffer)
                peripheral.performWrite(chunks[next], command.write, .withoutResponse)
                // A refused write ends the command at once (reported through didWrite).
                guard running === command, case .writing = command.state else { return }
                next += 1
            }
        }
        command.state = .awaitingResponse(buffer: buffer)
    }

    // MARK: PeripheralLoopObserver

    package func peripheral(_ peripheral: Peripheral, didReceive value: Data?, for characteristic: Characteristic, error: BleError?) {
        handle(.value(characteristic, value, error))
    }

    package func peripheral(_ peripheral: Peripheral, didWrite characteristic: Characteristic, error: BleError?) {
        handle(.written(characteristic, error))
    }

    package func peripheral(_ peripheral: Peripheral, notificationStateOf characteristic: Characteristic, isOn: Bool, error: BleError?) {
        // The response can only come as notifications: without them the command cannot end well.
        guard let command = running, case .exchange = command.kind, characteristic === command.read,
              command.state.isActive else { return }
        if let error { return end(command, .failure(PeripheralCommandError.notificationFailed(error))) }
        if isOn, command.awaitingNotifications {
            command.awaitingNotifications = false
            pump(command)
        }
    }

    package func peripheralIsReadyToWriteWithoutResponse(_ peripheral: Peripheral) {
        handle(.readyToSend)
    }

    package func peripheral(_ peripheral: Peripheral, didReceive value: Data?, for descriptor: Descriptor, error: BleError?) {
        handle(.descriptorValue(descriptor, value, error))
    }

    package func peripheral(_ peripheral: Peripheral, didLoseLink error: BleError?) {
        failAll(PeripheralCommandError.disconnected)
    }

    func handle(_ event: Event) {
        switch event {
        case .written(let characteristic, let error):
            guard let command = running, case .exchange = command.kind, characteristic === command.write else { return }
            // A command that has written nothing cannot have a failed write: the error is an
            // earlier command's packet, still in BlueZ's hands when that command ended (this
            // one waits for the write channel to drain before its first chunk).
            if case .writing(_, 0, _, _) = command.state { return }
            if let error, command.state.isActive {
                // Refused before it was sent (too long, link down) or failed: the command ends.
                return end(command, .failure(PeripheralCommandError.writeFailed(BleDSLErrors.bleError(error))))
            }
            guard case .writing(let chunks, let next, true, let buffer) = command.state else { return }
            if let error {
                return end(command, .failure(PeripheralCommandError.writeFailed(BleDSLErrors.bleError(error))))
            }
            command.state = .writing(chunks: chunks, next: next, awaitingAck: false, buffer: buffer)
            if next >= chunks.count { command.state = .awaitingResponse(buffer: buffer) } else { pump(command) }
        case .readyToSend:
            if let command = running, case .exchange = command.kind, command.writeType == .withoutResponse { pump(command) }
        case .descriptorValue(let descriptor, let value, let error):
            guard let command = running, case .readDescriptor(let wanted) = command.kind, wanted === descriptor else { return }
            if let error { return end(command, .failure(PeripheralCommandError.readFailed(BleDSLErrors.bleError(error)))) }
            end(command, .success([value ?? Data()]))
        case .value(let characteristic, let value, let error):
            if let command = running, case .readValue = command.kind, characteristic === command.read {
                // The read's reply (BlueZ cannot tell it from a notification that crossed it).
                if let error { return end(command, .failure(PeripheralCommandError.readFailed(BleDSLErrors.bleError(error)))) }
                return end(command, .success([value ?? Data()]))
            }
            if let command = running, case .exchange = command.kind, characteristic === command.read {
                if let error {
                    return end(command, .failure(PeripheralCommandError.notificationFailed(BleDSLErrors.bleError(error))))
                }
                if let value, let filtered = command.option.filterData(value) {
                    return judge(command, filtered)
                }
            }
            // Streams hear the packets the running command did not claim.
            for stream in streams where stream.read === characteristic {
                guard error == nil, let value, let filtered = stream.option.filterData(value) else { continue }
                judge(stream, filtered)
                if running == nil { break }
            }
        }
    }

    private func judge(_ command: Command, _ packet: Data) {
        let buffer = command.state.buffer
        switch command.option.checkResponse(buffer, data: packet) {
        case .success(let data):
            end(command, .success(data))
        case .failure(let error):
            end(command, .failure(error))
        case .goon(let data):
            switch command.state {
            case .writing(let chunks, let next, let awaiting, _):
                command.state = .writing(chunks: chunks, next: next, awaitingAck: awaiting, buffer: data)
            case .awaitingResponse:
                command.state = .awaitingResponse(buffer: data)
            case .streaming:
                command.state = .streaming(buffer: data)
            case .queued, .finished:
                return
            }
            if command.state.isActive { restartTimer(command) }
        case .longConnection(let data):
            if command.state.isActive {
                deadline.clear()
                command.state = .streaming(buffer: [])
                if running === command {
                    running = nil
                    streams.append(command)
                }
                report(command.completion, .success(data))
                startNextIfIdle()
            } else if case .streaming = command.state {
                command.state = .streaming(buffer: [])
                report(command.completion, .success(data))
            }
        }
    }

    /// Restarts the deadline of `command`, the running one (only an active command restarts it).
    private func restartTimer(_ command: Command) {
        guard let instant = deadline.restart(seconds: command.option.timeOutInterval, now: MonotonicTime.now) else { return }
        armDeadlineTimer(for: instant)
    }

    private func armDeadlineTimer(for instant: Int) {
        let timer = LoopTimer.scheduled(after: .microseconds(max(0, instant - MonotonicTime.now))) { [weak self] in
            self?.deadlinePassed()
        }
        deadline.armed(timer, for: instant)
    }

    private func deadlinePassed() {
        switch deadline.fired(now: MonotonicTime.now) {
        case .idle:
            return
        case .rearm(let instant):
            armDeadlineTimer(for: instant)
        case .expired(let seconds):
            guard let command = running, command.state.isActive else { return }
            end(command, .failure(PeripheralCommandError.timeout(seconds: seconds)))
        }
    }

    /// Ends a command exactly once and starts the next one.
    private func end(_ command: Command, _ result: Result<[Data], Error>) {
        if case .finished = command.state { return }
        command.state = .finished
        if running === command {
            running = nil
            deadline.clear()
        }
        queue.removeAll { $0 === command }
        streams.removeAll { $0 === command }
        report(command.completion, result)
        startNextIfIdle()
    }

    func cancel(id: UInt64) {
        if let command = running, command.id == id { return end(command, .failure(PeripheralCommandError.cancelled)) }
        if let command = queue.first(where: { $0.id == id }) { return end(command, .failure(PeripheralCommandError.cancelled)) }
        if let command = streams.first(where: { $0.id == id }) { return end(command, .failure(PeripheralCommandError.cancelled)) }
        // Cancelled before its enqueue hop arrived.
        cancelledBeforeStart.insert(id)
    }

    func failAll(_ error: PeripheralCommandError) {
        let all = (running.map { [$0] } ?? []) + queue + streams
        running = nil
        queue.removeAll()
        streams.removeAll()
        for command in all {
            command.state = .queued
            end(command, .failure(error))
        }
    }
}

/// The response rule of a read command: the reply is the whole response.
struct ReadResponse: PeripheralOperationCommand {
    var timeOutInterval: TimeInterval
    var cmdData: Data { Data() }
    func checkResponse(_ dataGroup: [Data], data: Data) -> CheckResponseResult { .success(data: [data]) }
}

enum BleDSLErrors {
    static func bleError(_ error: Error) -> BleError {
        (error as? BleError) ?? .failed(String(describing: error))
    }
}
