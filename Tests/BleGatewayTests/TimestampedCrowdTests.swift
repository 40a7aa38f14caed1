import BleDBus
@testable import BleSim
import Foundation
import Testing

/// The gateway benchmark's lag is measured from a stamp BleSim puts in each report: a crowd's
/// `"timestamped": true` must append the sending time to the manufacturer data, and leave
/// unstamped crowds as they were.
struct TimestampedCrowdTests {
    @Test @BleLoop func timestampedCrowdReportsCarryTheirSendingTime() throws {
        let json = #"{"crowd": {"count": 2, "addressPrefix": "DE:AD:BE:EF", "timestamped": true}}"#
        let scenario = try Scenario.parse(Data(json.utf8), name: "stamped")
        let stamped = scenario.peripherals.allSatisfy { $0.timestampsReports }
        #expect(stamped)
        let simulator = scenario.makeSimulator()
        let peripheral = try #require(simulator.peripheral("DE:AD:BE:EF:00:01"))
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let before = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec / 1000)
        let payload = try #require(peripheral.nextReport().manufacturerData[0xFFFF])
        clock_gettime(CLOCK_REALTIME, &now)
        let after = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec / 1000)
        #expect(payload.count == 10)
        #expect(Array(payload.prefix(2)) == [0x00, 0x01], "the crowd's own bytes come first")
        let stamp = payload.suffix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        #expect(stamp >= before && stamp <= after, "stamp \(stamp) outside [\(before), \(after)]")
    }

    @Test @BleLoop func plainCrowdReportsAreUnstamped() throws {
        let scenario = try Scenario.parse(Data(#"{"crowd": {"count": 1}}"#.utf8), name: "plain")
        let simulator = scenario.makeSimulator()
        let peripheral = try #require(simulator.peripheral("DE:AD:BE:EF:00:00"))
        #expect(peripheral.nextReport().manufacturerData[0xFFFF] == Data([0x00, 0x00]))
    }
}
