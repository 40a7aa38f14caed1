// The private bus, child processes and the tests' clock live in BleSim, which `blekit sim` and
// `blekit demo` ship with; re-exported so that a test importing BleTestSupport keeps finding them.
@_exported import BleSim
