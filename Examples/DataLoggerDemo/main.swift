// The DataLogger walk-through (Examples/DataLogger) as a program: `blekit demo` runs it beside
// itself, as it runs LEDControl, so that the shipped blekit does not link an example.
import BleDSL
import DataLoggerExample
import Foundation

/// Prints each line of the walk-through with the time since it started.
final class StdoutPrinter: TranscriptPrinter {
    private let start = Date()

    func line(_ text: String) {
        print(String(format: "[%6.2f s] ", Date().timeIntervalSince(start)) + text)
        fflush(nil)
    }
}

let arguments = CommandLine.arguments
guard let index = arguments.firstIndex(of: "--bus"), index + 1 < arguments.count else {
    FileHandle.standardError.write(Data("usage: DataLoggerDemo --bus ADDRESS (the bus BleSim serves the data logger on)\n".utf8))
    exit(2)
}
let report = DataLoggerWalkthrough.run(options: CentralManagerOptions(bus: .address(arguments[index + 1])), printer: StdoutPrinter())
if !report.passed { FileHandle.standardError.write(Data("DataLoggerDemo: \(report.verdictLine)\n".utf8)) }
exit(report.exitStatus)
