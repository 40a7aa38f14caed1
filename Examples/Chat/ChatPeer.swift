import BleCore
import ExampleSupport
import Foundation

// @unchecked: every callback and timer runs on the main queue, as in the iOS app.
/// One chat app (seed 001): it alternates between advertising (PeripheralManager) and scanning
/// (CentralManager) until it meets the other app, then chats over whichever role it ended up
/// in; when the heartbeat says the link is dead it goes back to switching roles and relinks.
final class ChatPeer: CBCentralManagerDelegate, CBPeripheralDelegate, CBPeripheralManagerDelegate, @unchecked Sendable {
    static let steps = ["powered on", "linked", "sent", "received", "lost packet resent", "link lost", "relinked", "after reconnect"]
    let log: StepLog
    let finished = Completion()
    private let name: String
    private let freeze: Bool
    private let settings: ChatLink.Settings
    private var central: CBCentralManager?
    private var server: CBPeripheralManager?
    private let outgoing = CBMutableCharacteristic(type: ChatFrame.send, properties: [.notify], value: nil, permissions: [.readable])
    private let incoming = CBMutableCharacteristic(type: ChatFrame.receive, properties: [.write, .writeWithoutResponse], value: nil, permissions: [.writeable])
    private var ready = (central: false, server: false)
    private var searching = false
    private var advertising = false
    private var switches = 0
    private var slotTimer: DispatchWorkItem?
    /// The other app, when this one is the central.
    private var remote: CBPeripheral?
    private var remoteInbox: CBCharacteristic?
    /// The other app, when this one is the peripheral.
    private var subscriber: CBCentral?
    private var link: ChatLink?
    private var round = 0
    private var roundSent = 0
    private var roundReceived = 0
    private var resends = 0
    private var over = false

    init(name: String, freeze: Bool, settings: ChatLink.Settings) {
        self.name = name
        self.freeze = freeze
        self.settings = settings
        log = StepLog("Chat \(name)", steps: ChatPeer.steps, linePrefix: name.padding(toLength: 6, withPad: " ", startingAt: 0) + "| ")
    }

    func start(central centralOptions: CentralManagerOptions, server serverOptions: PeripheralManagerOptions) {
        central = CBCentralManager(delegate: self, queue: .main, options: centralOptions)
        server = CBPeripheralManager(delegate: self, queue: .main, options: serverOptions)
    }

    func stop() {
        over = true
        slotTimer?.cancel()
        link?.close()
        server?.stopAdvertising()
        if let remote { central?.cancelPeripheralConnection(remote) }
        central?.close()
        server?.close()
    }

    // MARK: Switching roles

    private func bothPoweredOn() {
        log.step("powered on", passed: true, "central and peripheral on \(central?.adapterName ?? "?")")
        search()
    }

    /// Advertise for a while, then scan for a while, with random lengths so two apps doing the
    /// same do not stay in step (both advertising, nobody scanning) for long.
    private func search() {
        guard !over else { return }
        searching = true
        nextSlot(advertise: Bool.random())
    }

    private func nextSlot(advertise: Bool) {
        guard searching, !over else { return }
        switches += 1
        if advertise {
            central?.stopScan()
            advertising = true
            server?.startAdvertising([CBAdvertisementDataLocalNameKey: ChatFrame.namePrefix + name, CBAdvertisementDataServiceUUIDsKey: [ChatFrame.service]])
        } else {
            if advertising { server?.stopAdvertising() }
            advertising = false
            scanWhenNotAdvertising(slot: switches, attempts: 10)
        }
        let item = DispatchWorkItem { [weak self] in self?.nextSlot(advertise: !advertise) }
        slotTimer = item
        DispatchQueue.main.asyncAfter(deadline: .now() + Double.random(in: 0.4...1.2), execute: item)
    }

    /// bluetoothd drops an advertisement a moment after `stopAdvertising()`; scanning before it
    /// did would scan on an adapter that still advertises (BleKit warns about that), so the
    /// scan waits until the adapter says so, for at most half a second.
    private func scanWhenNotAdvertising(slot: Int, attempts: Int) {
        guard searching, !over, switches == slot, !advertising else { return }
        guard attempts > 0, central?.isScanningAdapterAdvertising == true else {
            central?.scanForPeripherals(withServices: [ChatFrame.service], options: nil)
            return
        }
        DispatchQueue.main.asyncAfter(deadline: .now() + 0.05) { [weak self] in self?.scanWhenNotAdvertising(slot: slot, attempts: attempts - 1) }
    }

    private func stopSearching() {
        searching = false
        slotTimer?.cancel()
        central?.stopScan()
        if advertising { server?.stopAdvertising() }
        advertising = false
    }

    // MARK: The link

    private func linked(role: String, packetLength: Int, transmit: @escaping (Data) -> Void) {
        round += 1
        let link = ChatLink(packetLength: packetLength, settings: settings, transmit: transmit)
        self.link = link
        link.onMessage = { [weak self] text, packets in self?.received(text, packets: packets) }
        link.onDead = { [weak self] silence in self?.linkDied(String(format: "heartbeat: no frame for %.1f s", silence)) }
        let how = "as the \(role) after \(switches) role switch(es), packets of \(packetLength) bytes"
        log.step(round == 1 ? "linked" : "relinked", passed: true, how)
        roundSent = 0
        roundReceived = 0
        if round == 1 {
            send("hi, this is \(name)")
            // Longer than the MTU: three packets and a bit.
            let long = String(repeating: "\(name) says: the quick brown fox jumps over the lazy dog. ", count: 40)
            send(String(long.prefix(3 * (packetLength - ChatFrame.headerLength) + 7)))
        } else {
            send("\(name) is back after the reconnect")
        }
    }

    private func send(_ text: String) {
        link?.send(text) { [weak self] acknowledged, packets, resent in
            guard let self, !self.over else { return }
            self.resends += resent
            guard acknowledged else { return self.log.note("not acknowledged: \(text.prefix(24))… (\(packets) packets)") }
            self.log.note("acknowledged: \(text.prefix(32))\(text.count > 32 ? "…" : "") (\(text.utf8.count) bytes, \(packets) packet(s), \(resent) resent)")
            self.roundSent += 1
            self.progress()
        }
    }

    private func received(_ text: String, packets: Int) {
        log.note("💬 \(text.prefix(48))\(text.count > 48 ? "…" : "") (\(text.utf8.count) bytes in \(packets) packet(s))")
        roundReceived += 1
        if round == 1, packets > 1 {
            let intact = text.contains(" says: the quick brown fox jumps over the lazy dog. ")
            log.step("received", passed: intact, "a \(text.utf8.count)-byte message reassembled from \(packets) packets")
        }
        if round > 1 { log.step("after reconnect", passed: true, "got \"\(text)\"") }
        progress()
    }

    /// A round ends when this side's messages were acknowledged and the other side's arrived.
    private func progress() {
        if round == 1, roundSent == 2, roundReceived == 2 {
            roundSent = 0
            log.step("sent", passed: true, "both messages acknowledged")
            log.step("lost packet resent", passed: resends > 0, "\(resends) packet(s) resent after no acknowledgement")
            guard freeze else { return }
            log.note("going silent for 3 s (an app that hangs: no heartbeats, no acknowledgements)")
            link?.goSilent(for: 3)
        } else if round > 1, roundSent >= 1, roundReceived >= 1 {
            roundSent = 0
            // Let the last acknowledgement reach the other side before leaving.
            DispatchQueue.main.asyncAfter(deadline: .now() + 1) { [weak self] in self?.finished.signal() }
        }
    }

    private func linkDied(_ why: String) {
        guard !over, link != nil else { return }
        link?.close()
        link = nil
        if round == 1 { log.step("link lost", passed: true, why) } else { log.note("link lost again: \(why)") }
        if let remote { central?.cancelPeripheralConnection(remote) }
        remote = nil
        remoteInbox = nil
        subscriber = nil
        search()
    }

    // MARK: CBPeripheralManagerDelegate

    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        guard peripheral.state == .poweredOn, !ready.server else { return }
        let service = CBMutableService(type: ChatFrame.service, primary: true)
        service.characteristics = [incoming, outgoing]
        peripheral.add(service)
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didAdd service: CBService, error: Error?) {
        if let error { log.step("powered on", passed: false, "could not add the chat service: \(error)"); return finished.signal() }
        ready.server = true
        if ready.central { bothPoweredOn() }
    }

    func peripheralManagerDidStartAdvertising(_ peripheral: CBPeripheralManager, error: Error?) {
        if let error { log.note("advertising failed: \(error)") }
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didSubscribeTo characteristic: CBCharacteristic) {
        guard characteristic.uuid == ChatFrame.send, link == nil, remote == nil else { return }
        stopSearching()
        subscriber = central
        linked(role: "peripheral", packetLength: central.maximumUpdateValueLength) { [weak self] data in
            guard let self, let subscriber = self.subscriber else { return }
            // False means the queue is full: the frame counts as lost and the resend covers it.
            _ = self.server?.updateValue(data, for: self.outgoing, onSubscribedCentrals: [subscriber])
        }
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveWrite requests: [CBATTRequest]) {
        for request in requests {
            if let value = request.value, request.central.address == subscriber?.address { link?.receive(value) }
            peripheral.respond(to: request, withResult: .success)
        }
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, centralDidDisconnect central: CBCentral) {
        guard central.address == subscriber?.address else { return }
        linkDied("the other app disconnected")
    }

    // MARK: CBCentralManagerDelegate

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        switch central.state {
        case .poweredOn:
            guard !ready.central else { return }
            ready.central = true
            if ready.server { bothPoweredOn() }
        case .unknown, .resetting: break
        default:
            log.step("powered on", passed: false, "state \(central.state): \(central.stateError?.description ?? "")")
            finished.signal()
        }
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral, advertisementData: AdvertisementData, rssi RSSI: Int) {
        let name = advertisementData.localName ?? peripheral.name ?? ""
        guard searching, !advertising, remote == nil, name.hasPrefix(ChatFrame.namePrefix), name != ChatFrame.namePrefix + self.name else { return }
        stopSearching()
        log.note("found \(name) (\(peripheral.address)) while scanning: connecting")
        remote = peripheral
        peripheral.delegate = self
        central.connect(peripheral, options: nil)
    }

    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        peripheral.discoverServices([ChatFrame.service])
    }

    func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: Error?) {
        log.note("could not connect: \(error.map { "\($0)" } ?? "")")
        remote = nil
        search()
    }

    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: Error?) {
        guard peripheral.address == remote?.address else { return }
        if link == nil {
            remote = nil
            return search()
        }
        linkDied("the other app disconnected")
    }

    // MARK: CBPeripheralDelegate

    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: Error?) {
        guard let service = peripheral.services?.first(where: { $0.uuid == ChatFrame.service }) else {
            log.note("no chat service: \(error.map { "\($0)" } ?? "not offered")")
            return central?.cancelPeripheralConnection(peripheral) ?? ()
        }
        peripheral.discoverCharacteristics([ChatFrame.receive, ChatFrame.send], for: service)
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: Error?) {
        let characteristics = service.characteristics ?? []
        guard let inbox = characteristics.first(where: { $0.uuid == ChatFrame.receive }),
              let outbox = characteristics.first(where: { $0.uuid == ChatFrame.send }) else {
            log.note("the chat service lacks its characteristics")
            return central?.cancelPeripheralConnection(peripheral) ?? ()
        }
        remoteInbox = inbox
        peripheral.setNotifyValue(true, for: outbox)
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateNotificationStateFor characteristic: CBCharacteristic, error: Error?) {
        guard characteristic.uuid == ChatFrame.send, characteristic.isNotifying, link == nil, let inbox = remoteInbox else {
            if let error { log.note("subscribing failed: \(error)") }
            return
        }
        linked(role: "central", packetLength: peripheral.maximumWriteValueLength(for: .withoutResponse)) { [weak peripheral] data in
            peripheral?.writeValue(data, for: inbox, type: .withoutResponse)
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: Error?) {
        guard characteristic.uuid == ChatFrame.send, let value = characteristic.value else { return }
        link?.receive(value)
    }
}
