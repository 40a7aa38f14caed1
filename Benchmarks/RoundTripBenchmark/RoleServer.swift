import BleCore
import Dispatch
import Foundation

/// The benchmark's peripheral served by BleKit itself, through `PeripheralManager` on hci0: the
/// same service, characteristics and rules as BleSim's round-trip peripheral, so the BleCore
/// client runs unchanged against it. A write is answered and echoed as a notification; a write
/// starting 0xff (0xfe for the warm-up) makes it push `burst` (`warmupBurst`) notifications,
/// as fast as `updateValue` takes them: when it refuses (the outgoing window is full) the rest
/// waits for `peripheralManagerIsReady(toUpdateSubscribers:)`, as an app must.
///
/// It prints `ready` once advertising, then for every line on stdin one line of counters: its
/// own CPU seconds, requests answered and notifications sent, so the run can take differences
/// around each client. It ends when stdin closes.
@BleLoop
final class RoleServer: @preconcurrency PeripheralManagerDelegate {
    private nonisolated let burst: Int
    private nonisolated let warmupBurst: Int
    private var manager: PeripheralManager?
    private let notify: MutableCharacteristic
    private let service: MutableService
    private var registration: AdvertisementRegistration?
    /// Notifications of the burst in progress still to send.
    private var owed = 0
    private var requests = 0
    private var notifications = 0
    private var refusals = 0
    private nonisolated let ready = DispatchSemaphore(value: 0)
    private nonisolated let failure = LoopLock<String?>(nil)

    nonisolated init(burst: Int, warmupBurst: Int) {
        self.burst = burst
        self.warmupBurst = warmupBurst
        let serviceUUID = BenchmarkUUIDs.service(.signal)
        service = MutableService(type: serviceUUID, primary: true)
        let write = MutableCharacteristic(type: BenchmarkUUIDs.write(.signal), properties: [.read, .write], value: nil,
                                          permissions: [.readable, .writeable])
        notify = MutableCharacteristic(type: BenchmarkUUIDs.notify(.signal), properties: [.read, .notify], value: nil,
                                       permissions: [.readable])
        service.characteristics = [write, notify]
    }

    /// Serves until stdin closes; exit status 1 when serving could not start.
    nonisolated func run() -> Never {
        BleLoop.perform { [self] in
            manager = PeripheralManager(delegate: self, queue: nil, options: PeripheralManagerOptions(bus: .system, adapter: "hci0"))
        }
        if ready.wait(timeout: .now() + 30) == .timedOut { fail("not advertising after 30 s") }
        if let problem = failure.value { fail(problem) }
        // Unbuffered, so the run sees each line at once.
        FileHandle.standardOutput.write(Data("ready\n".utf8))
        while readLine() != nil {
            let line = LoopBridgeForBenchmark.sync { [self] in
                "cpu_seconds=\(processCPUSeconds()) requests=\(requests) notifications=\(notifications) refusals=\(refusals)"
            }
            FileHandle.standardOutput.write(Data((line + "\n").utf8))
        }
        exit(0)
    }

    private nonisolated func fail(_ problem: String) -> Never {
        FileHandle.standardError.write(Data("RoundTripBenchmark role-server: \(problem)\n".utf8))
        exit(1)
    }

    func peripheralManagerDidUpdateState(_ peripheral: PeripheralManager) {
        guard peripheral.state == .poweredOn, registration == nil else {
            if peripheral.state != .unknown && peripheral.state != .poweredOn { report("state \(peripheral.state)") }
            return
        }
        peripheral.add(service)
    }

    func peripheralManager(_ peripheral: PeripheralManager, didAdd service: Service, error: Error?) {
        if let error { return report("adding the service failed: \(error)") }
        registration = peripheral.startAdvertising(Advertisement(localName: "RoleBench", serviceUUIDs: [service.uuid]))
    }

    func peripheralManagerDidStartAdvertising(_ peripheral: PeripheralManager, error: Error?) {
        if let error { return report("advertising failed: \(error)") }
        ready.signal()
    }

    func peripheralManager(_ peripheral: PeripheralManager, didReceiveWrite requests: [ATTRequest]) {
        guard let first = requests.first else { return }
        peripheral.respond(to: first, withResult: .success)
        self.requests += 1
        guard let value = first.value, let kind = value.first else { return }
        switch kind {
        case 0xff: owed += burst
        case 0xfe: owed += warmupBurst
        default:
            if peripheral.updateValue(value, for: notify, onSubscribedCentrals: nil) { notifications += 1 } else { refusals += 1 }
            return
        }
        pump(peripheral)
    }

    func peripheralManager(_ peripheral: PeripheralManager, didReceiveRead request: ATTRequest) {
        peripheral.respond(to: request, withResult: .success)
    }

    func peripheralManagerIsReady(toUpdateSubscribers peripheral: PeripheralManager) {
        pump(peripheral)
    }

    /// Sends what the burst still owes until `updateValue` refuses; readiness resumes it.
    private func pump(_ peripheral: PeripheralManager) {
        var sequence = UInt32(truncatingIfNeeded: notifications)
        while owed > 0 {
            let value = withUnsafeBytes(of: &sequence) { Data($0) }
            guard peripheral.updateValue(value, for: notify, onSubscribedCentrals: nil) else {
                refusals += 1
                return
            }
            owed -= 1
            notifications += 1
            sequence &+= 1
        }
    }

    private func report(_ problem: String) {
        failure.value = problem
        ready.signal()
    }
}

/// Runs `body` on the loop from the main thread and waits for its result.
enum LoopBridgeForBenchmark {
    static func sync<T: Sendable>(_ body: @escaping @BleLoop @Sendable () -> T) -> T {
        let result = LoopLock<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        BleLoop.perform {
            result.value = body()
            done.signal()
        }
        done.wait()
        // The loop stored the value before signalling.
        guard let value = result.value else { missingResult() }
        return value
    }

    private static func missingResult() -> Never {
        FileHandle.standardError.write(Data("RoundTripBenchmark: the loop did not run a counter read\n".utf8))
        exit(1)
    }
}
