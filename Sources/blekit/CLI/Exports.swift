// The command-line parser lives in BlekitCLI so that the fuzz driver can reach it (an executable
// target cannot be imported); every blekit file sees it as before.
@_exported import BlekitCLI
