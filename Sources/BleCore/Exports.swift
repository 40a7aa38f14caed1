// BleCore's types are loop-isolated (`@BleLoop`) and apps that keep their own state on the loop
// need the global actor and the loop's lock: they come with `import BleCore`.
@_exported import BleRuntime
// iOS's `import CoreBluetooth` brings Foundation along (`NSObject`, `Data`, `NSNumber`): code that
// ports by changing that import to `import BleCore` must find them too (seed 001's peripheral).
@_exported import Foundation
