// BleCore's types are loop-isolated (`@BleLoop`) and apps that keep their own state on the loop
// need the global actor and the loop's lock: they come with `import BleCore`.
@_exported import BleRuntime
