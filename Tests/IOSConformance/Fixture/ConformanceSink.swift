import BleCore
import Foundation

/// Hears every delegate call of the generated conformance classes.
protocol ConformanceSink: AnyObject {
    /// `event` is the method's selector (with the second parameter's type where two share one).
    func fired(_ event: String, _ arguments: [Any?])
}

/// Prints one line per event (`EVENT <selector> | <detail>`), which IOSConformanceTests reads.
enum EventLine {
    static func print(_ event: String, _ detail: String = "") {
        Swift.print("EVENT \(event) | \(detail)")
        fflush(stdout)
    }

    static func note(_ text: String) {
        Swift.print("NOTE \(text)")
        fflush(stdout)
    }

    static func fail(_ text: String) -> Never {
        Swift.print("FLOW FAILED \(text)")
        fflush(stdout)
        exit(1)
    }
}

/// The services of the flow, known to both processes.
enum ConformanceGATT {
    static let name = "BleKit-Conformance"
    static let main = CBUUID(string: "B1E4C001-0000-4000-8000-00805F9B34FB")
    static let included = CBUUID(string: "B1E4C002-0000-4000-8000-00805F9B34FB")
    static let value = CBUUID(string: "B1E4C011-0000-4000-8000-00805F9B34FB")
    static let includedValue = CBUUID(string: "B1E4C021-0000-4000-8000-00805F9B34FB")
}
