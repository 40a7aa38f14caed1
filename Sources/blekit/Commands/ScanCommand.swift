import BleAssignedNumbers
import BleCore
import Foundation

/// `blekit scan`: a live table on a terminal (strongest first, refreshed in place), one line per
/// new device otherwise.
enum ScanCommand: BlekitCommand {
    static let name = "scan"
    static let synopsis = ""
    static let summary = "scan: a live table of devices (name, address, RSSI, manufacturer, services, last seen)"
    static let options: [OptionSpec] = [
        .value("--timeout", "SECONDS", "stop after this long (default 10; 0 scans until Ctrl-C)"),
        .value("--service", "SERVICE", "only devices advertising this service (UUID or name; repeatable)"),
        .value("--name", "PREFIX", "only devices whose name starts with PREFIX"),
        .value("--rssi", "DBM", "only devices at least this strong (-70)"),
        .value("--manufacturer", "COMPANY", "only devices with manufacturer data of this company (0x004C, or part of the name)"),
        .value("--count", "N", "stop once N devices are listed (scripts waiting for a device); fewer by --timeout exits with status 6"),
        .value("--limit", "ROWS", "at most this many rows in the live table (default: the terminal's height)"),
    ]
    static let details = """
    On a terminal the table is redrawn in place every quarter second; piped, each device is printed
    once when first heard (with --json as one object per line), then a count.
    Example: blekit scan --service "Heart Rate" --rssi -80 --timeout 5
    """

    @MainActor
    static func run(_ invocation: Invocation) async -> ExitCode {
        guard invocation.positionals.isEmpty else { return invocation.usage("takes no arguments", help: help) }
        let seconds: Double
        let filter: ScanFilter
        let limitOption: Int?
        let count: Int?
        do {
            seconds = try invocation.arguments.seconds("--timeout", default: 10)
            limitOption = try invocation.arguments.integer("--limit", in: 1...Int.max)
            count = try invocation.arguments.integer("--count", in: 1...Int.max)
        } catch {
            return invocation.usage(error.description, help: help)
        }
        do {
            filter = try ScanFilter(invocation.arguments)
        } catch {
            return invocation.usage(error.message, help: help)
        }
        let session: CentralSession
        do {
            session = try await CentralSession.open(invocation)
        } catch {
            return invocation.fail(error)
        }
        defer { session.close() }
        let live = invocation.isTerminal && !invocation.global.json
        var table = LiveTable(enabled: live)
        session.manager.scanForPeripherals(withServices: filter.services.isEmpty ? nil : filter.services,
                                           options: ScanOptions(allowDuplicates: true, rssiThreshold: filter.minimumRSSI))
        let start = Date()
        let end = seconds > 0 ? start.addingTimeInterval(seconds) : .distantFuture
        var entries: [String: ScanEntry] = [:]
        var nextDraw = Date()
        var status = ExitCode.success
        var ending = "stopped after \(CentralSession.format(seconds)) s"
        loop: while true {
            let now = Date()
            if live && now >= nextDraw {
                let size = ScanTable.terminalSize()
                let remaining = seconds > 0 ? String(format: "%.0f s left", max(0, end.timeIntervalSince(now)).rounded(.up)) : "Ctrl-C to stop"
                let header = "Scanning on \(session.manager.adapterName ?? "the adapter") — \(entries.count) device(s), \(remaining)"
                table.draw([header] + ScanTable.render(Array(entries.values), now: now, width: size.columns, limit: limitOption ?? max(3, size.rows - 4)))
                nextDraw = now.addingTimeInterval(0.25)
            }
            if now >= end { break }
            guard let event = await session.inbox.next(before: live ? min(nextDraw, end) : end) else { continue }
            switch event {
            case .interrupted:
                ending = "interrupted"
                break loop
            case .scanFailed(let error):
                table.finish()
                invocation.fail("the scan failed: \(CentralSession.describe(error))")
                status = CentralSession.exitCode(for: error)
                break loop
            case .state(let state) where state != .poweredOn:
                table.finish()
                invocation.fail("the adapter went \(state) during the scan. \(state == .poweredOff ? "Power it on (`bluetoothctl power on`) and" : "Check `systemctl status bluetooth`, then") scan again.")
                status = state == .poweredOff ? .poweredOff : .unavailable
                break loop
            case .discovered(let peripheral, let advertisement, let rssi):
                let name = advertisement.localName ?? peripheral.name
                guard filter.accepts(name: name, rssi: rssi, advertisement: advertisement) else { continue }
                let now = Date()
                let isNew = entries[peripheral.address] == nil
                var entry = entries[peripheral.address] ?? ScanEntry(address: peripheral.address, identifier: peripheral.identifier, name: name, rssi: rssi, manufacturers: [], services: [], firstSeen: now, lastSeen: now)
                entry.name = name ?? entry.name
                entry.rssi = rssi
                entry.lastSeen = now
                entry.manufacturers = advertisement.manufacturerData.keys.sorted()
                entry.services = advertisement.serviceUUIDs
                entries[peripheral.address] = entry
                if isNew && !live { printPlain(entry, advertisement: advertisement, invocation: invocation) }
                if let count, entries.count >= count {
                    ending = "stopped after \(count) device(s)"
                    break loop
                }
            default:
                continue
            }
        }
        session.manager.stopScan()
        if live {
            let size = ScanTable.terminalSize()
            table.draw(["Scan \(ending) — \(entries.count) device(s)"] + ScanTable.render(Array(entries.values), now: Date(), width: size.columns, limit: limitOption ?? max(3, size.rows - 4)))
            table.finish()
        } else if !invocation.global.json {
            invocation.out("\(entries.count) device(s) heard, scan \(ending)")
        }
        // --count N is a script waiting for N devices: the deadline passing first is not success.
        if status == .success, ending != "interrupted", let count, entries.count < count {
            invocation.fail("only \(entries.count) of \(count) device(s) heard within \(CentralSession.format(seconds)) s. Are they advertising and in range? Raise --timeout, or loosen the filters.")
            status = .deviceNotFound
        }
        return status
    }

    private static func printPlain(_ entry: ScanEntry, advertisement: AdvertisementData, invocation: Invocation) {
        if invocation.global.json {
            var object: [String: Any] = ["address": entry.address, "identifier": entry.identifier.uuidString, "rssi": entry.rssi,
                                         "services": entry.services.map(\.uuidString),
                                         "manufacturers": entry.manufacturers.map { ["id": Int($0), "name": Names.company($0)] }]
            object["name"] = entry.name
            invocation.json(object)
            return
        }
        var line = "\(entry.address)  \(entry.rssi) dBm  \(entry.name ?? "(no name)")"
        if !entry.manufacturers.isEmpty { line += "  manufacturer: \(entry.manufacturerText)" }
        if !entry.services.isEmpty { line += "  services: \(entry.servicesText)" }
        invocation.out(line)
    }
}

/// Redraws a block of lines in place: up over the previous frame, clear, draw.
struct LiveTable {
    let enabled: Bool
    private var drawnLines = 0

    init(enabled: Bool) { self.enabled = enabled }

    mutating func draw(_ lines: [String]) {
        guard enabled else { return }
        var frame = drawnLines == 0 ? "\u{1B}[?25l" : "\u{1B}[\(drawnLines)A\r"
        frame += "\u{1B}[J" + lines.joined(separator: "\n") + "\n"
        drawnLines = lines.count
        FileHandle.standardOutput.write(Data(frame.utf8))
    }

    /// Shows the cursor again; the last frame stays on screen.
    mutating func finish() {
        guard enabled, drawnLines >= 0 else { return }
        FileHandle.standardOutput.write(Data("\u{1B}[?25h".utf8))
        drawnLines = -1
    }
}
