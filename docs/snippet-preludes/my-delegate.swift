// BleSim's README: the app's own CentralManagerDelegate.
import BleCore

final class MyDelegate: CentralManagerDelegate {
    func centralManagerDidUpdateState(_ central: CentralManager) {}
}
nonisolated var myDelegate: MyDelegate { MyDelegate() }
