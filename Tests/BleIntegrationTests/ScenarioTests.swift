import BleIntegration
import Testing

@Suite struct Placeholder {}
