@testable import BleSim
import BleDBus
import BlueZVocabulary
import Foundation
import Testing

/// The `includes` key of a scenario's service: read, checked against the device's other
/// services, laid out and exported as bluetoothd's `Includes`.
@Suite struct IncludedServiceScenarioTests {
    static func scenario(_ services: String, after: String? = nil) -> String {
        let reconnect = after.map { #", "servicesAfterReconnect": \#($0)"# } ?? ""
        return #"{"peripherals": [{"address": "C0:FF:EE:00:00:01", "services": \#(services)\#(reconnect)}]}"#
    }

    static let malformed: [(String, String, [String])] = [
        ("unknown UUID", scenario(#"[{"uuid": "ff00", "includes": ["ff10"]}]"#),
         ["peripherals[0].services", "services[0].includes[0]", "no other service of the device has UUID"]),
        ("index out of range", scenario(#"[{"uuid": "ff00", "includes": [3]}]"#),
         ["services[0].includes[0]", "index 3 is not one of the device's 1 services"]),
        ("itself by index", scenario(#"[{"uuid": "ff00", "includes": [0]}]"#),
         ["services[0].includes[0]", "a service cannot include itself"]),
        ("itself by UUID", scenario(#"[{"uuid": "ff00", "includes": ["ff00"]}]"#),
         ["services[0].includes[0]", "no other service of the device has UUID"]),
        ("ambiguous UUID", scenario(#"[{"uuid": "ff10"}, {"uuid": "ff10"}, {"uuid": "ff00", "includes": ["ff10"]}]"#),
         ["services[2].includes[0]", "services [0, 1] all have UUID", "name the included one by its index"]),
        ("not a UUID", scenario(#"[{"uuid": "ff00", "includes": ["battery"]}]"#),
         ["includes[0]", "'battery' is not a UUID"]),
        ("negative index", scenario(#"[{"uuid": "ff00", "includes": [-1]}]"#),
         ["includes[0]", "a service UUID or a 0-based index"]),
        ("after reconnect", scenario(#"[{"uuid": "ff10"}]"#, after: #"[{"uuid": "ff00", "includes": ["ff10"]}]"#),
         ["peripherals[0].servicesAfterReconnect[0].includes[0]"]),
    ]

    @Test(arguments: IncludedServiceScenarioTests.malformed)
    func anIncludeNamingNoOtherServiceIsInvalidAndSaysWhy(_ label: String, _ json: String, _ mentions: [String]) {
        do {
            _ = try Scenario.parse(Data(json.utf8), name: "broken.json")
            Issue.record("\(label): the scenario was accepted")
        } catch {
            guard case .invalid(_, _, let problem) = error else { Issue.record("\(label): \(error) is not .invalid"); return }
            let detail = "\(problem)"
            for mention in mentions { #expect(detail.contains(mention), "\(label): \(detail)") }
        }
    }

    @Test func includesAreReadByUUIDOrIndexInTheirOrderAndWrittenBack() throws {
        let scenario = try Scenario.parse(Data(Self.scenario(#"[{"uuid": "180f"}, {"uuid": "ff10", "primary": false}, {"uuid": "ff00", "includes": ["ff10", 0]}]"#).utf8),
                                          name: "ok.json")
        let services = try #require(scenario.peripherals.first?.services)
        #expect(services[2].includes == [.uuid(SimUUID.full("ff10")!), .index(0)])
        let encoded = try JSONEncoder().encode(services)
        #expect(try JSONDecoder().decode([ServiceSpec].self, from: encoded) == services)
        #expect(String(decoding: try JSONEncoder().encode(services[0]), as: UTF8.self).contains("includes") == false)
    }

    @Test func includeDeclarationsTakeTheHandlesAfterTheServiceAndCanNameALaterService() {
        let layout = GattLayout(specs: [
            ServiceSpec(uuid: "ff00", characteristics: [CharacteristicSpec(uuid: "ff01", flags: ["read"])], includes: [.index(1)]),
            ServiceSpec(uuid: "ff10", primary: false),
        ])
        let own = Array(layout.services.dropFirst(layout.daemonServiceCount))
        #expect(own[0].includes == [own[1].handle])
        #expect(own[0].characteristics[0].handle == own[0].handle + 2)
        #expect(own[1].handle == own[0].characteristics[0].valueHandle + 1)
    }

    /// bluetoothd reserves a handle for every `Includes` entry (`incr_attr_count`) and leaves
    /// the ones it could not make unused at the end of the service's range.
    @Test func anIncludeBluetoothdCouldNotMakeLeavesItsHandleUnusedAtTheEnd() {
        var outer = ServiceSpec(uuid: "ff00", characteristics: [CharacteristicSpec(uuid: "ff01", flags: ["read"])])
        outer.unresolvedIncludes = 1
        let layout = GattLayout(specs: [outer, ServiceSpec(uuid: "ff10")])
        let own = Array(layout.services.dropFirst(layout.daemonServiceCount))
        #expect(own[0].includes.isEmpty)
        #expect(own[0].characteristics[0].handle == own[0].handle + 1)
        #expect(own[1].handle == own[0].characteristics[0].valueHandle + 2)
    }
}
