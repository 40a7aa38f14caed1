/// The range a number in a scenario file must lie in, and its unit.
///
/// Every duration and count a scenario file can hold has one, so that no number from a file
/// reaches a conversion that traps (`Duration.milliseconds(1e300)`) or a count that makes a
/// fault silently never fire (`"times": -1`). BleSim's README lists them under "Scenario files".
struct ScenarioLimit: Sendable {
    /// The accepted values, inclusive.
    let range: ClosedRange<Double>
    /// `ms`, `s`, `dBm`, `dB`, `×` or empty (a count).
    let unit: String

    /// The longest delay a file can ask for: an hour, far beyond any BLE timeout.
    private static let longestDelay = 3_600_000.0
    /// The largest count of repetitions or packets: beyond any test run.
    private static let largestCount = 10_000_000.0

    /// `temporaryTimeout`: how long a device stays after its last report.
    static let temporaryTimeout = ScenarioLimit(range: 0.001...86_400, unit: "s")
    /// `timing.scale`: 0 is as fast as the bus, 1 real time.
    static let timingScale = ScenarioLimit(range: 0...100, unit: "×")
    /// `timing.connectionInterval`: the Bluetooth Core range of connection intervals.
    static let connectionInterval = ScenarioLimit(range: 7.5...4000, unit: "ms")
    /// `timing.disconnect`, `timing.connectTimeout` and a rule's `latency`.
    static let delay = ScenarioLimit(range: 0...longestDelay, unit: "ms")
    /// A rule's `every`: at least one connection interval.
    static let period = ScenarioLimit(range: 7.5...longestDelay, unit: "ms")
    /// `advertisingInterval` and a crowd's `interval`: legacy advertising's 20 ms to 10.24 s.
    static let advertisingInterval = ScenarioLimit(range: 20...10_240, unit: "ms")
    /// A crowd's `count`: its addresses end in two bytes.
    static let crowdCount = ScenarioLimit(range: 1...65_535, unit: "")
    /// A fault's `times`, `dropEvery` and a response's `packets`.
    static let count = ScenarioLimit(range: 1...largestCount, unit: "")
    /// A link loss's `afterPackets` (0: at the first packet).
    static let afterPackets = ScenarioLimit(range: 0...largestCount, unit: "")
    /// `rssi` and `txPower`: what an HCI advertising report can carry.
    static let power = ScenarioLimit(range: -127...20, unit: "dBm")
    /// `rssiJitter`: ± dB around `rssi`.
    static let rssiJitter = ScenarioLimit(range: 0...100, unit: "dB")
    /// `mtu`: from ATT's minimum to bluetoothd's maximum.
    static let mtu = ScenarioLimit(range: 23...517, unit: "")
    /// An ATT error `code` (0 is not an error).
    static let attErrorCode = ScenarioLimit(range: 1...255, unit: "")
}
