// The loop runtime lives in BleRuntime; re-exported so that `import BleDBus` keeps bringing
// MainLoop, LoopTimer, BleLoop and the rest, as it did before the split.
@_exported import BleRuntime
