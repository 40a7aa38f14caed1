// blekit-integration: runs the integration scenarios against the real bluetoothd (in the VM
// of `make test-bluez`) or against BleSim, and compares the two runs into the parity report.
import BleDBus
import BleIntegration
import Foundation

let usage = """
usage:
  blekit-integration run --backend bluetoothd|blesim --out DIR [--only NAME,NAME]
  blekit-integration compare --bluetoothd DIR --blesim DIR --known FILE --report FILE
  blekit-integration list
"""

func option(_ name: String, in arguments: [String]) -> String? {
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("blekit-integration: \(message)\n".utf8))
    exit(2)
}

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "list":
    for scenario in ScenarioRunner.allScenarios { print("\(scenario.name)\t\(scenario.summary)") }
case "run":
    guard let backendName = option("--backend", in: arguments), let out = option("--out", in: arguments) else { fail(usage) }
    let only = option("--only", in: arguments).map { Set($0.split(separator: ",").map(String.init)) }
    let kind: BackendKind
    switch backendName.lowercased() {
    case "bluetoothd": kind = .bluetoothd
    case "blesim": kind = .bleSim
    default: fail("unknown backend '\(backendName)'; use bluetoothd or blesim")
    }
    let status = await IntegrationMain.run(kind: kind, output: URL(fileURLWithPath: out), only: only)
    exit(status)
case "compare":
    guard let real = option("--bluetoothd", in: arguments), let simulated = option("--blesim", in: arguments),
          let known = option("--known", in: arguments), let report = option("--report", in: arguments) else { fail(usage) }
    do {
        let comparison = ParityComparison(bluetoothd: try Transcript.load(from: URL(fileURLWithPath: real)),
                                          bleSim: try Transcript.load(from: URL(fileURLWithPath: simulated)),
                                          known: try KnownDifference.load(from: URL(fileURLWithPath: known)))
        let text = comparison.markdown(title: "Parity report: bluetoothd 5.66 and BleSim",
                                       context: IntegrationMain.reportContext)
        try text.write(toFile: report, atomically: true, encoding: .utf8)
        print("parity report written to \(report)")
        for problem in comparison.problems { print("  problem: \(problem)") }
        exit(comparison.problems.isEmpty ? 0 : 1)
    } catch {
        fail("compare failed: \(error)")
    }
default:
    fail(usage)
}
