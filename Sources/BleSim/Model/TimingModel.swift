import BleDBus

/// How long simulated radio operations take, in the spirit of CoreBluetoothMock: each operation
/// costs connection intervals, a write ⌈len/(MTU−3)⌉ of them. `scale` multiplies every cost;
/// 0 makes the simulator as fast as the bus (the default for tests), 1 is real time.
public struct TimingModel: Sendable, Codable, Equatable {
    /// The connection interval (Linux default range 30–50 ms).
    public var connectionIntervalMilliseconds: Double
    /// Multiplies every cost below.
    public var scale: Double
    /// Connection intervals to establish a link.
    public var connectIntervals: Double
    /// Connection intervals for GATT discovery, per service.
    public var discoveryIntervalsPerService: Double
    /// bluetoothd's Disconnect takes about 2 s before it replies.
    public var disconnectMilliseconds: Double
    /// How long a Connect to a silent device waits before `le-connection-abort-by-local` (~40 s seen).
    public var connectTimeoutMilliseconds: Double

    /// Real-time costs (scale 1).
    public static let realistic = TimingModel(scale: 1)
    /// No delays: every operation completes as soon as the bus delivers it.
    public static let instant = TimingModel(scale: 0)

    /// A timing model.
    public init(connectionIntervalMilliseconds: Double = 30, scale: Double = 1, connectIntervals: Double = 3,
                discoveryIntervalsPerService: Double = 2, disconnectMilliseconds: Double = 2000,
                connectTimeoutMilliseconds: Double = 40000) {
        self.connectionIntervalMilliseconds = connectionIntervalMilliseconds
        self.scale = scale
        self.connectIntervals = connectIntervals
        self.discoveryIntervalsPerService = discoveryIntervalsPerService
        self.disconnectMilliseconds = disconnectMilliseconds
        self.connectTimeoutMilliseconds = connectTimeoutMilliseconds
    }

    /// `intervals` connection intervals, scaled.
    public func intervals(_ intervals: Double) -> Duration {
        .clampedMilliseconds(intervals * connectionIntervalMilliseconds * scale)
    }

    /// A fixed time, scaled.
    public func scaled(milliseconds: Double) -> Duration {
        .clampedMilliseconds(milliseconds * scale)
    }

    /// Connection intervals a transfer of `length` bytes takes at `mtu`.
    public func transfer(length: Int, mtu: UInt16) -> Duration {
        let payload = max(1, Int(mtu) - 3)
        return intervals(Double(max(1, (length + payload - 1) / payload)))
    }
}

/// Runs simulator work after a scaled delay, keeping zero-delay work in FIFO order.
@BleLoop
final class SimClock {
    private var timers: [UInt64: LoopTimer] = [:]
    private var nextID: UInt64 = 1
    private var generation: UInt64 = 0

    /// Runs `body` after `delay`; zero delays go through the loop's FIFO queue.
    func after(_ delay: Duration, _ body: @escaping @BleLoop () -> Void) {
        let generation = self.generation
        if delay <= .zero {
            LoopBridge.later { [weak self] in
                guard let self, self.generation == generation else { return }
                body()
            }
            return
        }
        let id = nextID
        nextID += 1
        timers[id] = LoopTimer.scheduled(after: delay) { [weak self] in
            guard let self, self.generation == generation else { return }
            self.timers.removeValue(forKey: id)
            body()
        }
    }

    /// Forgets everything scheduled (the daemon stopped).
    func cancelAll() {
        generation += 1
        for timer in timers.values { timer.cancel() }
        timers.removeAll()
    }
}
