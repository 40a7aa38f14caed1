// An FXBlueTooth-style command: write one byte, the first packet back is the answer.
import Foundation
import BleDSL

struct MyCommand: PeripheralOperationCommand {
    var cmdData: Data { Data([0x01]) }
    func checkResponse(_ dataGroup: [Data], data: Data) -> CheckResponseResult { .success(data: [data]) }
}
