import BleAssignedNumbers
import Testing

/// The generated tables answer in every UUID spelling, and the parsers refuse malformed values.
@Suite struct AssignedNumbersTests {
    @Test func namesInEverySpelling() {
        for spelling in ["180f", "180F", "0x180F", "0000180f", "0000180F-0000-1000-8000-00805F9B34FB"] {
            #expect(AssignedNumbers.serviceName(spelling) == "Battery Service", "\(spelling)")
        }
        #expect(AssignedNumbers.shortName("180F") == "Battery")
        #expect(AssignedNumbers.shortName("180D") == "Heart Rate")
        #expect(AssignedNumbers.characteristicName("2a19") == "Battery Level")
        #expect(AssignedNumbers.descriptorName("2902") == "Client Characteristic Configuration")
        #expect(AssignedNumbers.serviceName("6e400001-b5a3-f393-e0a9-e50e24dcca9e") == "Nordic UART Service")
        #expect(AssignedNumbers.shortName("abcd") == nil)
        #expect(AssignedNumbers.serviceName("not a uuid") == nil)
        #expect(AssignedNumbers.name("2a37", preferring: .characteristic) == "Heart Rate Measurement")
        #expect(AssignedNumbers.uuid(named: "battery level") == "2a19")
        #expect(AssignedNumbers.uuid(named: "Battery", kind: .service) == "180f")
    }

    @Test func companiesAppearancesAndADTypes() {
        #expect(AssignedNumbers.companyName(0x004C) == "Apple, Inc.")
        #expect(AssignedNumbers.companyName(0x0059) == "Nordic Semiconductor ASA")
        #expect(AssignedNumbers.adTypeName(0x09) == "Complete Local Name")
        #expect(AssignedNumbers.adTypeName(0xFF) == "Manufacturer Specific Data")
        #expect(AssignedNumbers.adTypeName(0x0B) == nil)
        #expect(AssignedNumbers.appearanceName(0x0341) == "Heart Rate Belt")
        #expect(AssignedNumbers.appearanceName(0x0340) == "Heart Rate Sensor")
        #expect(AssignedNumbers.appearanceName(0x03C1) == "Keyboard")
    }

    @Test func batteryLevel() {
        #expect(BatteryLevel([87])?.percent == 87)
        #expect(BatteryLevel([101]) == nil)
        #expect(BatteryLevel([]) == nil)
        #expect(BatteryLevel([1, 2]) == nil)
    }

    @Test func heartRateMeasurement() throws {
        let simple = try #require(HeartRateMeasurement([0x00, 72]))
        #expect(simple.beatsPerMinute == 72 && simple.sensorContact == .notSupported && simple.rrIntervals.isEmpty)
        // 16-bit rate, contact detected, energy 0x0102 kJ, two RR intervals of 1024/1024 s and 512/1024 s.
        let full = try #require(HeartRateMeasurement([0x1F, 0x2C, 0x01, 0x02, 0x01, 0x00, 0x04, 0x00, 0x02]))
        #expect(full.beatsPerMinute == 300)
        #expect(full.sensorContact == .detected)
        #expect(full.energyExpended == 0x0102)
        #expect(full.rrIntervals == [1.0, 0.5])
        #expect(full.description == "300 bpm, contact detected, 258 kJ, RR 1.0 s 0.5 s")
        #expect(HeartRateMeasurement([]) == nil)
        #expect(HeartRateMeasurement([0x01, 0x2C]) == nil, "a 16-bit rate needs two bytes")
        #expect(HeartRateMeasurement([0x10, 72, 0x00]) == nil, "a truncated RR interval")
    }

    @Test func presentationFormatAndPnPID() throws {
        let format = try #require(PresentationFormat([0x04, 0x00, 0xAD, 0x27, 0x01, 0x00, 0x00]))
        #expect(format.format == 0x04 && format.unit == 0x27AD && format.namespace == 1)
        #expect(format.description == "uint8, exponent 0, unit 0x27AD")
        #expect(PresentationFormat([0x04]) == nil)
        let pnp = try #require(PnPID([0x01, 0x59, 0x00, 0x34, 0x12, 0x21, 0x05]))
        #expect(pnp.vendorIDSource == .bluetoothSIG && pnp.vendorID == 0x0059 && pnp.productID == 0x1234)
        #expect(pnp.vendorName == "Nordic Semiconductor ASA")
        #expect(pnp.description == "Bluetooth SIG vendor 0x0059 (Nordic Semiconductor ASA), product 0x1234, version 5.2.1")
        #expect(PnPID([0x01, 0x02]) == nil)
    }

    @Test func standardValues() {
        #expect(StandardValue.describe(characteristic: "2a19", value: [55]) == "55 %")
        #expect(StandardValue.describe(characteristic: "2a29", value: Array("Acme".utf8)) == "\"Acme\"")
        #expect(StandardValue.describe(characteristic: "2a29", value: [0xff, 0xfe]) == nil)
        #expect(StandardValue.describe(characteristic: "1234", value: [1]) == nil)
        #expect(StandardValue.describe(descriptor: "2902", value: [1, 0]) == "notifications on")
        #expect(StandardValue.describe(descriptor: "2902", value: [0, 0]) == "off")
    }
}
