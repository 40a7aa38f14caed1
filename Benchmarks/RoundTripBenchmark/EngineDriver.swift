import BleCore
import BleDSL
import Foundation

/// Drives the BleDSL modes: the same exchanges as the BleCore client's, but every write and
/// every response goes through `DeviceCharacteristicValue.executable`, as FXBlueTooth code does.
/// Each completion starts the next command; CPU time is measured as in `BleCoreClient`.
@BleLoop
final class EngineDriver {
    private let mode: ClientMode
    private let count: Int
    private let warmup: Int
    private let engine: PeripheralDevice.DeviceCharacteristicValue
    private let finish: @BleLoop (Result<String, ClientFailure>) -> Void
    private var index = 0
    private var startCPU = 0.0
    private var startWall = ContinuousClock.now
    // Streams: the running `.longConnection` command, its phase (0 warm-up, 1 measured) and count.
    private var stream: CommandToken?
    private var phase = 0
    private var received = 0
    private var receivedAtLastTick = 0
    private var quietTicks = 0
    private var lastProgress = ContinuousClock.now
    private var watchdog: LoopTimer?
    private var finished = false
    // Per round trip: GLib's monotonic clock in µs, one clock_gettime as the C client makes, not
    // ContinuousClock (its Instant and Duration arithmetic cost ~500 instructions per trip).
    private var sentAt = MonotonicTime.now
    private var latencies: [Double] = []

    init(mode: ClientMode, count: Int, warmup: Int, peripheral: Peripheral?, write: Characteristic, notify: Characteristic,
         finish: @escaping @BleLoop (Result<String, ClientFailure>) -> Void) {
        self.mode = mode
        self.count = count
        self.warmup = warmup
        self.finish = finish
        engine = PeripheralDevice.DeviceCharacteristicValue(peripheral: peripheral, writeCharacteristic: write, readCharacteristic: notify)
    }

    func start() {
        if mode.isIngest { return startStream() }
        if warmup == 0 { startMeasuring() }
        sendNext()
    }

    private func startMeasuring() {
        startWall = ContinuousClock.now
        startCPU = processCPUSeconds()
    }

    private func stop(operations: Int, lost: Int = 0, endingAt end: ContinuousClock.Instant? = nil) {
        guard !finished else { return }
        finished = true
        let cpu = processCPUSeconds() - startCPU
        let wall = (end ?? ContinuousClock.now) - startWall
        let seconds = Double(wall.components.seconds) + Double(wall.components.attoseconds) / 1e18
        watchdog?.cancel()
        stream?.cancel()
        finish(.success(String(format: "ops=%d seconds=%.6f cpu_seconds=%.6f lost=%d", operations, seconds, cpu, lost) + latencyFields(latencies)))
    }

    private func fail(_ text: String) {
        guard !finished else { return }
        finished = true
        watchdog?.cancel()
        finish(.failure(ClientFailure(text)))
    }

    // MARK: Round trips and multi-packet responses

    private func sendNext() {
        let command: PeripheralOperationCommand
        if mode.isMultiPacket {
            command = MultiPacketCommand(index: index)
        } else {
            command = EchoCommand(index: index)
        }
        sentAt = MonotonicTime.now
        engine.executable(option: command) { [weak self] result in
            BleLoop.assumeIsolated { self?.completed(result) }
        }
    }

    private func completed(_ result: Result<[Data], Error>) {
        switch result {
        case .failure(let error): return fail("command \(index) failed: \(error)")
        case .success(let packets):
            if mode.isMultiPacket {
                let total = packets.reduce(0) { $0 + $1.count }
                guard total == BenchmarkScenario.multiPacketBytes else { return fail("response of \(total) bytes, expected \(BenchmarkScenario.multiPacketBytes)") }
            }
        }
        if index >= warmup && !mode.isMultiPacket { latencies.append(Double(MonotonicTime.now - sentAt)) }
        index += 1
        if index == warmup { startMeasuring() }
        if index == warmup + count {
            // Multi-packet: one operation is a KiB of response.
            return stop(operations: mode.isMultiPacket ? count * BenchmarkScenario.multiPacketBytes / 1024 : count)
        }
        sendNext()
    }

    // MARK: Streams

    private func startStream() {
        if phase == 0 && warmup == 0 { phase = 1 }
        stream?.cancel()
        received = 0
        receivedAtLastTick = 0
        quietTicks = 0
        lastProgress = ContinuousClock.now
        if watchdog == nil {
            watchdog = LoopTimer.scheduled(after: .milliseconds(50), repeating: .milliseconds(50)) { [weak self] in self?.checkProgress() }
        }
        if phase == 1 { startMeasuring() }
        let streamPhase = phase
        stream = engine.executable(option: StreamCommand(trigger: phase == 0 ? 0xfe : 0xff)) { [weak self] result in
            BleLoop.assumeIsolated { self?.streamed(result, phase: streamPhase) }
        }
    }

    private func streamed(_ result: Result<[Data], Error>, phase streamPhase: Int) {
        // The warm-up stream's cancellation arrives after the measured one started.
        guard !finished, streamPhase == phase else { return }
        guard case .success = result else {
            if case .failure(let error) = result { fail("stream failed: \(error)") }
            return
        }
        received += 1
        if received == (phase == 0 ? warmup : count) { burstEnded() }
    }

    private func burstEnded(lost: Int = 0, lastProgress end: ContinuousClock.Instant? = nil) {
        phase += 1
        if phase == 2 { return stop(operations: received, lost: lost, endingAt: end) }
        startStream()
    }

    private func checkProgress() {
        guard phase < 2, !finished else { return }
        if received != receivedAtLastTick {
            receivedAtLastTick = received
            quietTicks = 0
            lastProgress = ContinuousClock.now
            return
        }
        quietTicks += 1
        // Only a socket loses packets; over signals a pause is the machine's load (20 s).
        guard quietTicks >= (mode.usesAcquire ? 40 : 400) else { return }
        guard received > 0 || phase == 0 else { return fail("every notification of the burst was lost") }
        burstEnded(lost: phase == 1 ? count - received : 0, lastProgress: lastProgress)
    }
}

/// Writes 4 bytes and expects them back in one notification.
private struct EchoCommand: PeripheralOperationCommand {
    let cmdData: Data

    init(index: Int) {
        let value = UInt32(truncatingIfNeeded: index)
        cmdData = Data([0x01, UInt8(truncatingIfNeeded: value >> 16), UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value)])
    }

    func checkResponse(_ dataGroup: [Data], data: Data) -> CheckResponseResult {
        data == cmdData ? .success(data: [data]) : .failure(error: ClientFailure("notification \(data as NSData) is not the value written \(cmdData as NSData)"))
    }
}

/// Writes 4 bytes; the peripheral answers with 64 KiB in MTU − 3 packets, gathered with `.goon`.
private struct MultiPacketCommand: PeripheralOperationCommand {
    /// The bytes gathered so far, kept beside the buffer so a packet costs no walk over it.
    private final class Tally { var bytes = 0 }
    let cmdData: Data
    private let tally = Tally()

    init(index: Int) {
        cmdData = Data([0x02, 0, UInt8(truncatingIfNeeded: index >> 8), UInt8(truncatingIfNeeded: index)])
    }

    func checkResponse(_ dataGroup: [Data], data: Data) -> CheckResponseResult {
        var group = dataGroup
        group.append(data)
        tally.bytes += data.count
        return tally.bytes >= BenchmarkScenario.multiPacketBytes ? .success(data: group) : .goon(data: group)
    }
}

/// Triggers a burst and delivers every packet as it comes (`.longConnection`).
private struct StreamCommand: PeripheralOperationCommand {
    let cmdData: Data

    init(trigger: UInt8) { cmdData = Data([trigger, 0, 0, 0]) }

    func checkResponse(_ dataGroup: [Data], data: Data) -> CheckResponseResult { .longConnection(data: [data]) }
}
