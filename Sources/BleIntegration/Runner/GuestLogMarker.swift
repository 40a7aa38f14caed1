import Foundation

/// Writes a line into the guest's daemon logs (bluetoothd's, btvirt's) when a scenario begins
/// and ends, so a failure's part of those logs can be found; bluetoothd's lines carry no time.
/// Only in the VM (scripts/bluez-vm sets `BLEKIT_VM_LOGS`); elsewhere it does nothing.
struct GuestLogMarker {
    private let files: [String]

    /// The marker for the logs in `environment["BLEKIT_VM_LOGS"]`, if any.
    init(environment: [String: String]) {
        guard let directory = environment["BLEKIT_VM_LOGS"] else {
            files = []
            return
        }
        files = ["bluetoothd.log", "btvirt.log"].map { "\(directory)/\($0)" }
    }

    /// Appends `--- blekit-integration [uptime] text` to each log. The daemons write with
    /// O_APPEND too, so the line lands whole between theirs.
    func mark(_ text: String) {
        guard !files.isEmpty else { return }
        let uptime = (try? String(contentsOfFile: "/proc/uptime", encoding: .utf8))?.split(separator: " ").first.map(String.init) ?? "?"
        let line = Data("--- blekit-integration [\(uptime)] \(text)\n".utf8)
        for file in files {
            let descriptor = open(file, O_WRONLY | O_APPEND)
            guard descriptor >= 0 else { continue }
            _ = line.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            close(descriptor)
        }
    }
}
