// The body of a test whose class is the central's delegate (Testing with BleSim).
import BleCore
import BleSim
import BleTestSupport

final class HeartRateTests: CentralManagerDelegate {
    func centralManagerDidUpdateState(_ central: CentralManager) {}

    func test() async throws {
        // @snippet
        _ = central
    }
}
