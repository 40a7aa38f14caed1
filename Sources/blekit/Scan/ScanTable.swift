import Foundation

/// Draws `blekit scan`'s live table: strongest first, sized to the terminal.
enum ScanTable {
    /// `▇▇▇··`: five steps from -100 dBm to -40 dBm.
    static func bar(_ rssi: Int) -> String {
        let filled = max(0, min(5, (rssi + 100 + 11) / 12))
        return String(repeating: "█", count: filled) + String(repeating: "·", count: 5 - filled)
    }

    /// `"now"`, `"3 s ago"`.
    static func age(_ seen: Date, now: Date) -> String {
        let seconds = Int(now.timeIntervalSince(seen))
        return seconds < 1 ? "now" : "\(seconds) s ago"
    }

    /// The entries sorted by RSSI (strongest first), ties by address.
    static func sorted(_ entries: [ScanEntry]) -> [ScanEntry] {
        entries.sorted { ($0.rssi, $1.address) > ($1.rssi, $0.address) }
    }

    /// The table's lines: a header, up to `limit` rows, and how many did not fit.
    static func render(_ entries: [ScanEntry], now: Date, width: Int, limit: Int) -> [String] {
        let rows = sorted(entries)
        let shown = rows.prefix(limit)
        let nameWidth = min(24, max(4, shown.map { ($0.name ?? "").count }.max() ?? 4))
        let manufacturerWidth = min(26, max(12, shown.map(\.manufacturerText.count).max() ?? 12))
        func pad(_ text: String, _ size: Int) -> String {
            let clipped = text.count > size ? String(text.prefix(size - 1)) + "…" : text
            return clipped.padding(toLength: size, withPad: " ", startingAt: 0)
        }
        var lines = [pad("NAME", nameWidth) + "  " + pad("ADDRESS", 17) + "  " + pad("RSSI", 14) + "  " + pad("MANUFACTURER", manufacturerWidth) + "  " + pad("SEEN", 8) + "  SERVICES"]
        for entry in shown {
            let rssi = pad("\(entry.rssi) \(bar(entry.rssi))", 14)
            let line = pad(entry.name ?? "", nameWidth) + "  " + entry.address + "  " + rssi + "  " + pad(entry.manufacturerText, manufacturerWidth) + "  " + pad(age(entry.lastSeen, now: now), 8) + "  " + entry.servicesText
            lines.append(line.count > width ? String(line.prefix(width - 1)) + "…" : line)
        }
        if rows.count > shown.count { lines.append("… and \(rows.count - shown.count) more (weaker)") }
        return lines
    }

    /// The terminal's size, or 80×24 when it cannot tell.
    static func terminalSize() -> (columns: Int, rows: Int) {
        var size = winsize()
        if ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0, size.ws_row > 0 {
            return (Int(size.ws_col), Int(size.ws_row))
        }
        return (80, 24)
    }
}
