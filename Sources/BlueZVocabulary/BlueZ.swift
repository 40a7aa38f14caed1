import BleDBus

/// bluetoothd 5.66's D-Bus contract as BleKit uses it, defined once for the client (BleCore),
/// the simulated daemon (BleSim) and the scenarios that compare them (BleIntegration).
///
/// Each interface is a nested namespace holding its name (`interface`), its method names
/// (`Method`) and its properties as typed keys; errors are in `ErrorName`/`ErrorMessage` and the
/// object-path scheme in `Paths`.
public enum BlueZ {
    /// The well-known bus name bluetoothd owns.
    public static let busName = "org.bluez"
    /// The object holding the agent, profile and health managers.
    public static let rootPath: ObjectPath = "/org/bluez"
    /// Every BlueZ interface name starts with this; other interfaces on BlueZ objects are the
    /// freedesktop standard ones.
    public static let interfacePrefix = "org.bluez."
}
